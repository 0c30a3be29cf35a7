#!/usr/bin/env python3
"""How each dense allreduce's time grows with the number of ranks, replayed in tsr-sim.

    tools/sim/scale_study.py [--sim build/bin/tsr-sim] [--ranks 8,16,...] [--sizes-mib 1,64]
                             [--out DIR] [--max-messages N] [--pair-window 4]
                             [--coarse-from 512 --coarse-message 512KiB]
                             [--gpus-per-host 8 --nics-per-host 8 --host-bw 400GBps]

For every (ranks, size) it replays ring, Rabenseifner, recursive doubling and the 2D torus on a
non-blocking two-level fat tree (16 hosts per leaf, one rank per host, --bw per link), asks the
runtime's cost model which one it would pick (`tsr-sim --plan-only --algo auto`), and writes
DIR/scale.md (time and bus bandwidth of each, the simulated best against the pick) and
DIR/scale.png (bus bandwidth against ranks, one panel per size). A job whose plans send more
than --max-messages messages is left out (its replay would take minutes), and so is one the
replay cannot carry (too many transfers in flight) or that runs past --timeout; the table says
which. Every replay queues a pair's transfers beyond --pair-window (as one TCP connection or UCX
endpoint does); from --coarse-from ranks on, the plans are built with TSR_MIN_MESSAGE_BYTES =
--coarse-message (a runtime setting: a step's blocks to one peer travel in fewer, larger
messages), marked in the table, so that thousands of ranks replay in minutes.

--gpus-per-host G replays on hosts of G GPUs instead (`--platform gpuhosts`: each GPU its own
NIC link into the fat tree, --leaf-hosts hosts per leaf, same-host pairs over the GPUs'
interconnect at --host-bw) and adds the two-level plan, hier; --reduce-rate and --copy-rate
are then the GPU's (the defaults are an H100's, from tsr-device-kernel-bench: docs/gpu.md).

--compressed marsit,marsit-torus,marsit-2level,spardl adds the compressed allreduces as columns beside
the dense ones (Marsit's whole step on its sign-bit ring, torus and two-level schedules; SparDL at
--density): their bus bandwidth is on the dense buffer's size, and they take no part in the best
or the pick (they send less, and lose some of it). --pack-rate, --pass-rate and --select-rate are
their local rates (GPU defaults: an H100's sign pack, memory traffic at its copy rate, and top-k,
docs/gpu.md).

--replot FILE draws DIR/scale.png again from the first table in FILE (this script's scale.md,
or a Markdown file holding one, such as tools/sim/README.md), replaying nothing: for cells
replayed by hand after the study, edited into the table. Give the study's platform flags
(--gpus-per-host, --bw) for the plot's titles."""
import argparse
import os
import re
import subprocess

from sim_output import seconds

ALGOS = ["ring", "rabenseifner", "doubling", "torus"]


def sim(args, ranks, algo, mib, plan_only=False):
    cmd = [args.sim, "--ranks", str(ranks), "--algo", algo, "--size", f"{mib}MiB", "--bw", args.bw, "--lat", args.lat,
           "--leaf-hosts", str(args.leaf_hosts)]
    if args.gpus_per_host:
        cmd += ["--platform", "gpuhosts", "--ranks-per-host", str(args.gpus_per_host), "--nics-per-host",
                str(args.nics_per_host), "--host-bw", args.host_bw, "--host-lat", args.host_lat]
    else:
        cmd += ["--platform", "fattree"]
    if args.reduce_rate:
        cmd += ["--reduce-rate", args.reduce_rate, "--copy-rate", args.copy_rate]
    if algo.startswith("marsit") and args.pack_rate:
        cmd += ["--pack-rate", args.pack_rate]
    if algo.startswith("marsit") and args.pass_rate:
        cmd += ["--pass-rate", args.pass_rate]
    if algo == "spardl":
        cmd += ["--density", str(args.density)] + (["--select-rate", args.select_rate] if args.select_rate else [])
    cmd += ["--pair-window", str(args.pair_window)]
    if ranks >= args.coarse_from:
        cmd += ["--min-message", args.coarse_message]
    if plan_only:
        cmd.append("--plan-only")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    return out.returncode, out.stdout + out.stderr


def study(args):
    rows = []
    for mib in args.sizes_mib:
        for n in args.ranks:
            _, pick_text = sim(args, n, "auto", mib, plan_only=True)
            pick = re.search(r"plan allreduce (\w+):", pick_text).group(1)
            results = {}
            for algo in args.algos + args.compressed:
                rc, text = sim(args, n, algo, mib, plan_only=True)
                m = re.search(r"plan allreduce ([\w-]+):.* (\d+) messages", text)
                if rc != 0 or m.group(1) != algo:
                    results[algo] = "n/a"  # cannot serve this job (the torus on a prime count)
                elif int(m.group(2)) > args.max_messages:
                    results[algo] = "costly"
                else:
                    rc, text = sim(args, n, algo, mib)
                    results[algo] = (seconds(text) if rc == 0 else f"over {args.timeout:.0f} s" if rc is None else
                                     "in flight" if "in flight" in text else "failed")
                print(f"{mib} MiB, {n} ranks, {algo}: {results[algo]}", flush=True)
            rows.append((mib, n, pick, results))
    return rows


def busbw(mib, n, t):
    return 2 * (n - 1) / n * mib * 2**20 / t / 1e9


def platform_words(args):
    if args.gpus_per_host:
        return (f"hosts of {args.gpus_per_host} GPUs ({args.nics_per_host} NICs of {args.bw}, {args.host_bw} "
                f"GPU interconnect), fat tree of {args.leaf_hosts} hosts per leaf, non-blocking, {args.lat}; "
                f"reduce {args.reduce_rate}, copy {args.copy_rate}")
    return f"fat tree, {args.leaf_hosts} hosts per leaf, non-blocking, {args.bw} links, {args.lat}; one rank per host"


def label(args, algo):
    return {"marsit": "marsit (1 bit)", "spardl": f"spardl {args.density:g}"}.get(algo, algo)


def table(args, rows):
    algos = args.algos + args.compressed
    lines = [f"{platform_words(args)}; pair window {args.pair_window}; bus bandwidth in GB/s (time in ms); ranks "
             f"marked * with TSR_MIN_MESSAGE_BYTES={args.coarse_message}", "",
             "| size | ranks | " + " | ".join(label(args, a) for a in algos) +
             " | simulated best | cost model's pick | pick / best |",
             "| --- | --- | " + " | ".join("---" for _ in algos) + " | --- | --- | --- |"]
    for mib, n, pick, results in rows:
        cells = []
        for algo in algos:
            r = results[algo]
            cells.append(f"{busbw(mib, n, r):.2f} ({r * 1e3:.2f})" if isinstance(r, float) else r)
        timed = {a: r for a, r in results.items() if isinstance(r, float) and a in args.algos}
        best = min(timed, key=timed.get) if timed else "-"
        ratio = f"{timed[pick] / timed[best]:.2f}" if pick in timed else "not replayed"
        mark = "*" if n >= args.coarse_from else ""
        lines.append(f"| {mib} MiB | {n}{mark} | " + " | ".join(cells) + f" | {best} | {pick} | {ratio} |")
    return "\n".join(lines) + "\n"


def rows_from_table(args, path):
    """The rows of the first scale table in a Markdown file, as study() returns them (times in
    seconds; cells that were not replayed as their text); sets args' columns and sizes."""
    lines = [line.strip() for line in open(path)]
    start = next((i for i, line in enumerate(lines) if line.startswith("| size | ranks |")), None)
    if start is None:
        raise SystemExit(f"scale_study.py: --replot: no scale table ('| size | ranks | ...') in {path}")
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    columns = header[2:header.index("simulated best")]
    names = {label(args, a): a for a in ALGOS + ["hier", "marsit", "marsit-torus", "marsit-2level"]}
    args.algos = [names.get(c, c) for c in columns if not c.startswith(("marsit", "spardl"))]
    args.compressed = [names.get(c, c.split()[0]) for c in columns if c.startswith(("marsit", "spardl"))]
    rows, sizes = [], []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        mib, n = int(cells[0].split()[0]), int(cells[1].rstrip("*"))
        results = {}
        for algo, cell in zip(args.algos + args.compressed, cells[2:2 + len(columns)]):
            # The time that gives the table's bus bandwidth (the bracketed ms are rounded coarser).
            m = re.fullmatch(r"([\d.]+) \([\d.]+\)", cell)
            results[algo] = busbw(mib, n, 1.0) / float(m.group(1)) if m else cell
        rows.append((mib, n, cells[-2], results))
        sizes += [mib] if mib not in sizes else []
    args.sizes_mib = sizes
    return rows


def plot(args, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(args.sizes_mib), figsize=(5 * len(args.sizes_mib), 4), squeeze=False)
    for ax, mib in zip(axes[0], args.sizes_mib):
        for algo in args.algos + args.compressed:
            pts = [(n, busbw(mib, n, r[algo])) for m, n, _, r in rows if m == mib and isinstance(r[algo], float)]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=label(args, algo),
                        linestyle="--" if algo in args.compressed else "-")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks")
        ax.set_ylabel("bus bandwidth (GB/s)")
        where = f"{args.gpus_per_host}-GPU hosts, {args.bw} NICs" if args.gpus_per_host else f"{args.bw} fat tree"
        ax.set_title(f"allreduce {mib} MiB, {where}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", default="build/bin/tsr-sim")
    ap.add_argument("--ranks", default="8,16,32,64,128,256")
    ap.add_argument("--sizes-mib", default="1,64")
    ap.add_argument("--bw", default="100Gbps")
    ap.add_argument("--lat", default="5us")
    ap.add_argument("--leaf-hosts", type=int, default=16)
    ap.add_argument("--max-messages", type=int, default=600000)
    ap.add_argument("--pair-window", type=int, default=4, help="transfers in flight per (sender, receiver)")
    ap.add_argument("--coarse-from", type=int, default=1 << 30, help="ranks from which --coarse-message applies")
    ap.add_argument("--coarse-message", default="512KiB", help="TSR_MIN_MESSAGE_BYTES for the largest jobs")
    ap.add_argument("--gpus-per-host", type=int, default=0, help="hosts of this many GPUs (0: one rank per host)")
    ap.add_argument("--nics-per-host", type=int, default=0, help="with --gpus-per-host (0: one per GPU)")
    ap.add_argument("--host-bw", default="400GBps", help="with --gpus-per-host: each GPU's interconnect link")
    ap.add_argument("--host-lat", default="2us", help="with --gpus-per-host")
    ap.add_argument("--reduce-rate", default=None, help="tsr-sim --reduce-rate (gpus: 900GBps)")
    ap.add_argument("--copy-rate", default=None, help="tsr-sim --copy-rate (gpus: 1450GBps)")
    ap.add_argument("--compressed", default="",
                    help="compressed allreduces beside the dense ones: marsit,marsit-torus,marsit-2level,spardl")
    ap.add_argument("--density", type=float, default=0.01, help="with --compressed spardl")
    ap.add_argument("--pack-rate", default=None, help="tsr-sim --pack-rate (gpus: 2000GBps)")
    ap.add_argument("--pass-rate", default=None, help="tsr-sim --pass-rate (gpus: 2900GBps)")
    ap.add_argument("--select-rate", default=None, help="tsr-sim --select-rate (gpus: 330GBps)")
    ap.add_argument("--timeout", type=float, default=240, help="seconds one replay may take")
    ap.add_argument("--out", default=".")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--replot", metavar="FILE", help="draw the plot from FILE's first scale table, replaying nothing")
    args = ap.parse_args()
    args.ranks = [int(x) for x in args.ranks.split(",")]
    args.sizes_mib = [int(x) for x in args.sizes_mib.split(",")]
    args.algos = ALGOS + ["hier"] if args.gpus_per_host else ALGOS
    args.compressed = [a for a in args.compressed.split(",") if a]
    for a in args.compressed:
        if a not in ("marsit", "marsit-torus", "marsit-2level", "spardl"):
            ap.error(f"--compressed: '{a}' is not marsit, marsit-torus, marsit-2level or spardl")
    if args.gpus_per_host:
        args.nics_per_host = args.nics_per_host or args.gpus_per_host
        args.reduce_rate = args.reduce_rate or "900GBps"
        args.copy_rate = args.copy_rate or "1450GBps"
        args.pack_rate = args.pack_rate or "2000GBps"
        args.pass_rate = args.pass_rate or "2900GBps"  # reads and writes at the copy rate
        args.select_rate = args.select_rate or "330GBps"
    elif args.reduce_rate:
        args.copy_rate = args.copy_rate or args.reduce_rate
    os.makedirs(args.out, exist_ok=True)
    if args.replot:
        rows = rows_from_table(args, args.replot)
        plot(args, rows, os.path.join(args.out, "scale.png"))
        replayed = sum(isinstance(t, float) for *_, results in rows for t in results.values())
        print(f"{len(rows)} rows ({', '.join(map(str, args.sizes_mib))} MiB; "
              f"{' '.join(args.algos + args.compressed)}), {replayed} replayed cells plotted "
              f"in {os.path.join(args.out, 'scale.png')}")
        return
    rows = study(args)
    text = table(args, rows)
    with open(os.path.join(args.out, "scale.md"), "w") as f:
        f.write(text)
    print(text)
    if not args.no_plot:
        plot(args, rows, os.path.join(args.out, "scale.png"))


if __name__ == "__main__":
    main()
