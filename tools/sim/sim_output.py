"""Reading tsr-sim's output, shared by the scripts beside it."""
import re


def _time(text):
    value, unit = re.search(r"time ([\d.]+) (s|ms|us)\b", text).groups()
    return float(value), unit


def seconds(text):
    """The simulated time of a replay: tsr-sim's 'time 12.3 ms ...' line, in seconds."""
    value, unit = _time(text)
    return value * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]


def milliseconds(text):
    """The same in milliseconds (scaled from the printed unit, so printed digits stay exact)."""
    value, unit = _time(text)
    return value * {"s": 1e3, "ms": 1.0, "us": 1e-3}[unit]
