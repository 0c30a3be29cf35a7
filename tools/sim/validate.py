#!/usr/bin/env python3
"""Compares tsr-sim's predictions with measurements from the emulated cluster.

    tools/bench/cluster.sh ... > run.log          (one or more, any rate, dense algorithms)
    tools/sim/validate.py [--sim build/bin/tsr-sim] [--lat 50us] run.log ...
    tools/sim/validate.py --table tools/sim/README.md     (replay a table's measurements again)

Reads each run's '## Tessera tsr-bench --algo A, H hosts x R ranks, RATE' header and its rows,
takes the median time over the repeats of each (rate, hosts, algorithm, size), replays the same
job in tsr-sim on a one-switch platform at that rate with both network models, and prints a
Markdown table: measured, predicted, and predicted / measured. With --table, the measurements
are the rows of an earlier table (this script's own output, in a Markdown file): what a change
to the simulator does to the predictions, without measuring again."""
import argparse
import re
import statistics
import subprocess

from sim_output import milliseconds

RATES = {"mbit": "Mbps", "gbit": "Gbps"}


def measurements(paths):
    rows = {}
    for path in paths:
        job = None
        for line in open(path):
            m = re.match(r"## Tessera tsr-bench --algo (\S+)(.*?), (\d+) hosts x (\d+) ranks, (\d+)(mbit|gbit)", line)
            if m:
                algo, more, hosts, per_host, rate, unit = m.groups()
                job = (f"{rate}{RATES[unit]}", int(hosts), int(per_host), algo + sparse_label(more))
                continue
            m = re.match(r"\[0\] +(\d+) +\d+ +\d+ +(\d+)", line)
            if m and job:
                rows.setdefault(job + (int(m.group(1)),), []).append(float(m.group(2)) / 1e3)
    return rows


def sparse_label(args):
    """SparDL's density and teams from tsr-bench's arguments, as a suffix of the algorithm:
    "-d0.05-t2" (nothing for the defaults, 0.01 and 1)."""
    density = re.search(r"--density (\S+)", args)
    teams = re.search(r"--teams (\d+)", args)
    label = ""
    if density and float(density.group(1)) != 0.01:
        label += f"-d{density.group(1)}"
    if teams and teams.group(1) != "1":
        label += f"-t{teams.group(1)}"
    return label


def sim_algo(label):
    """tsr-sim's arguments for an algorithm label (sparse_label's suffixes)."""
    m = re.match(r"([a-z]+)(?:-d([\d.]+))?(?:-t(\d+))?$", label)
    if not m:
        return ["--algo", label]
    algo, density, teams = m.groups()
    return ["--algo", algo] + (["--density", density] if density else []) + (["--teams", teams] if teams else [])


def table_measurements(path):
    rows = {}
    row = re.compile(r"\| (\d+[MG]bps) \| (\d+) x (\d+) \| ([\w.-]+) \| (\d+) MiB \| ([\d.]+) \|")
    for line in open(path):
        m = row.match(line)
        if m:
            rate, hosts, per_host, algo, mib, measured = m.groups()
            rows[(rate, int(hosts), int(per_host), algo, int(mib) << 20)] = [float(measured)]
    return rows


def simulate(sim, rate, hosts, per_host, algo, size, lat, network, extra):
    out = subprocess.run([sim, "--ranks", str(hosts * per_host), "--ranks-per-host", str(per_host)] + sim_algo(algo) + [
                          "--size", f"{size}B", "--bw", rate, "--lat", lat, "--network", network] + extra,
                         capture_output=True, text=True, check=True).stdout
    return milliseconds(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", default="build/bin/tsr-sim")
    ap.add_argument("--lat", default="50us", help="host-to-host latency of the simulated switch")
    ap.add_argument("--table", help="a Markdown file with an earlier table: its measured column")
    ap.add_argument("--sim-arg", action="append", default=[],
                    help="one more tsr-sim argument for every replay (repeat: --sim-arg=--pair-window --sim-arg=4)")
    ap.add_argument("logs", nargs="*")
    args = ap.parse_args()
    if bool(args.table) == bool(args.logs):
        ap.error("give cluster.sh logs or --table, not both")
    rows = table_measurements(args.table) if args.table else measurements(args.logs)
    print("| rate | hosts x ranks | algorithm | size | measured (ms) | ideal (ms) | ideal / measured "
          "| lv08 (ms) | lv08 / measured |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (rate, hosts, per_host, algo, size), times in sorted(rows.items()):
        measured = statistics.median(times)
        ideal, lv08 = (simulate(args.sim, rate, hosts, per_host, algo, size, args.lat, net, args.sim_arg) for net in ("ideal", "lv08"))
        print(f"| {rate} | {hosts} x {per_host} | {algo} | {size >> 20} MiB | {measured:.1f} | {ideal:.1f} | "
              f"{ideal / measured:.3f} | {lv08:.1f} | {lv08 / measured:.3f} |")


if __name__ == "__main__":
    main()
