"""Checks of the scalar arguments the package hands to C: a ctypes int or size_t would wrap
(2**64 + 5 reaching C as 5) or truncate (2.7 as 2) without a word, so each is checked here,
naming the argument, before anything reaches the C library."""
import operator

# The most elements one call or handle takes (the C library's limit, 2^40).
MAX_COUNT = 2**40


def integer(what, value, low, high):
    """value as an int in low..high: an int or a NumPy integer (not a bool, not a float), else
    a TypeError; outside the range a ValueError."""
    if isinstance(value, bool):
        raise TypeError(f"{what} {value!r}: an integer, not a bool")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} {value!r}: not an integer ({type(value).__name__})") from None
    if not low <= n <= high:
        raise ValueError(f"{what} {value!r}: out of range ({low}..{high})")
    return n


def c_int(what, value, low=-2**31):
    return integer(what, value, low, 2**31 - 1)


def count(what, value, low=1):
    """An element count (low..2^40)."""
    return integer(what, value, low, MAX_COUNT)


def name(what, value):
    """A name for C: a str without NUL (C would end it there: "a\\0b" would be "a")."""
    if not isinstance(value, str):
        raise TypeError(f"{what} {value!r}: not a str ({type(value).__name__})")
    if "\0" in value:
        raise ValueError(f"{what} {value!r}: contains a NUL character")
    return value.encode()
