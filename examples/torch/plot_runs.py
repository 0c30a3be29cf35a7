"""plot_runs.py RUNS.jsonl OUT.png [TITLE]: test accuracy against wall time, one line per run
(label), from train_fashion_mnist.py's JSON lines; and on stdout a Markdown table: each run's
seconds per epoch, final accuracy, bytes sent per rank, and its time to the target accuracy
(the final accuracy of the run labelled "gloo/none", DDP over gloo, minus one point) with its
speed-up over that run. Needs matplotlib (Debian: python3-matplotlib)."""
import json
import sys
from collections import OrderedDict

BASELINE = "gloo/none"


def load(path):
    runs = OrderedDict()
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                runs.setdefault(row["label"], []).append(row)
    return runs


def time_to(rows, target):
    """Wall seconds at which the run first reached `target`, interpolated between evaluations."""
    prev_t, prev_a = 0.0, 0.0
    for r in rows:
        t, a = r["wall_s"], r["test_accuracy"]
        if a >= target:
            return prev_t + (t - prev_t) * (target - prev_a) / (a - prev_a) if a > prev_a else t
        prev_t, prev_a = t, a
    return None


def table(runs):
    base = runs.get(BASELINE)
    target = base[-1]["test_accuracy"] - 1.0 if base else None
    base_time = time_to(base, target) if base else None
    lines = [f"target accuracy: {target:.2f} % ({BASELINE}'s final minus 1 point)" if target else
             f"no {BASELINE} run: no target",
             "", "| run | s/epoch | final accuracy % | MB sent per rank | time to target (s) | vs gloo |",
             "| --- | --- | --- | --- | --- | --- |"]
    for label, rows in runs.items():
        last = rows[-1]
        epochs = last["epoch"]
        sent = last.get("tessera_bytes_sent", last.get("nic_bytes_sent"))
        reach = time_to(rows, target) if target else None
        speed = f"{base_time / reach:.2f}x" if reach and base_time else "-"
        lines.append(f"| {label} | {last['wall_s'] / epochs:.1f} | {last['test_accuracy']:.2f} | "
                     f"{sent / 1e6 / epochs:.1f} per epoch | {f'{reach:.0f}' if reach else 'not reached'} | {speed} |"
                     if sent is not None else
                     f"| {label} | {last['wall_s'] / epochs:.1f} | {last['test_accuracy']:.2f} | - | "
                     f"{f'{reach:.0f}' if reach else 'not reached'} | {speed} |")
    return "\n".join(lines)


def plot(runs, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.get_cmap("tab20").colors  # more runs than the default cycle's 10 colours
    for i, (label, rows) in enumerate(runs.items()):
        ax.plot([0] + [r["wall_s"] for r in rows], [10.0] + [r["test_accuracy"] for r in rows], marker="o",
                label=label, color=colours[i % len(colours)], linestyle="--" if label.startswith("gloo") else "-")
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    lows = [r["test_accuracy"] for rows in runs.values() for r in rows]
    ax.set_ylim(max(0, min(lows) - 5), 100)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = load(sys.argv[1])
    plot(runs, sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "Fashion-MNIST CNN, 4 ranks")
    print(table(runs))
