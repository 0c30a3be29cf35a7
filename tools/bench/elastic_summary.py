"""elastic_summary.py JSONL RATE STEPS KILL_STEP CKPT [PLOT.png]: the tables and the plot of
tools/bench/elastic_cluster.sh, from the lines it gathered (examples/torch/train_elastic.py's, each
tagged with its job, repeat and start time t0). Medians over the repeats; the accuracies of all
repeats, whose seeds differ, show the seeds' spread."""
import json
import statistics
import sys
from collections import defaultdict

path, rate, steps, kill, ckpt = sys.argv[1:6]
plot = sys.argv[6] if len(sys.argv) > 6 else None
lines = [json.loads(text) for text in open(path)]
runs = defaultdict(list)  # (job, repeat) -> lines
for line in lines:
    runs[(line["job"], line["repeat"])].append(line)
jobs = ("tessera", "elastic", "respawn", "gloo", "restart")
reference = {"elastic": "tessera", "respawn": "tessera", "restart": "gloo"}
repeats = sorted({repeat for _, repeat in runs})


def wall(job, repeat):
    walls = [line["wall_s"] for line in runs.get((job, repeat), []) if "wall_s" in line]
    return sum(walls) if walls else None


def first(job, repeat, key):
    return next((line[key] for line in runs.get((job, repeat), []) if key in line), None)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, unit="", digits=2):
    return "" if value is None else f"{value:.{digits}f}{unit}"


print(f"{rate}, {steps} steps, rank 3 killed at step {kill}, gloo checkpoints every {ckpt} steps, "
      f"{len(repeats)} repeat(s) (medians)")
print("| job | seconds | extra for the failure | test accuracy (%) per repeat |")
print("| --- | --- | --- | --- |")
for job in jobs:
    extra = None
    if job in reference:
        extra = median([wall(job, r) - wall(reference[job], r) for r in repeats
                        if wall(job, r) is not None and wall(reference[job], r) is not None])
    accuracies = [first(job, r, "test_accuracy") for r in repeats]
    print(f"| {job} | {fmt(median([wall(job, r) for r in repeats]))} | {fmt(extra, ' s', 2) if extra is not None else ''}"
          f" | {', '.join(str(a) for a in accuracies if a is not None)} |")

print()
print("Recovery of the survivors (seconds, medians): detection (the failed step's start to the error), "
      "agreement, bootstrap (the survivors' communicator), group (torch's), re-wrap (DDP), "
      "training again (the failed step's start to the redone step's end)")
print("| job | detection | agreement | bootstrap | group | re-wrap | training again |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for job in ("elastic", "respawn"):
    rec = [next((l for l in runs.get((job, r), []) if "recovery_at_step" in l), {}) for r in repeats]
    again = median([first(job, r, "training_again_after_s") for r in repeats])
    cells = [fmt(median([x.get(k) for x in rec]), "", 3)
             for k in ("detection_s", "agreement_s", "bootstrap_s", "group_s", "rewrap_s")]
    print(f"| {job} | {' | '.join(cells)} | {fmt(again, '', 3)} |")

grows = [next((l for l in runs.get(("respawn", r), []) if "grown_at_step" in l), {}) for r in repeats]
joins = [next((l for l in runs.get(("respawn", r), []) if "replacement_joined_at_step" in l), {}) for r in repeats]
if any(grows) or any(joins):
    print()
    print("The replacement (seconds, medians): from its start to ready (interpreter, imports, data), "
          "its join, the state's broadcast; the survivors' grow (agreement, bootstrap, state, re-wrap); "
          "the job whole again after the replacement's start (its start to the re-wrapped DDP)")
    print("| start to ready | join | state | grow: agreement | bootstrap | state | re-wrap | whole again after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    whole = [j["from_its_start_s"] + g["rewrap_s"] for j, g in zip(joins, grows) if j and g]
    cells = [fmt(median([j.get(k) for j in joins])) for k in ("start_to_ready_s", "join_s", "state_s")]
    cells += [fmt(median([g.get(k) for g in grows]), "", 3) for k in ("agreement_s", "bootstrap_s", "state_s", "rewrap_s")]
    print(f"| {' | '.join(cells)} | {fmt(median(whole))} |")

lost_restart = median([wall("restart", r) - wall("gloo", r) for r in repeats
                       if wall("restart", r) is not None and wall("gloo", r) is not None])
again = median([first("elastic", r, "training_again_after_s") for r in repeats])
if lost_restart and again:
    # Elastic's lost time is at most its recovery (a redone step included); its whole run can
    # even end sooner than the reference where the ranks share cores (3 compute faster than 4).
    print()
    print(f"lost time: restart {lost_restart:.2f} s, elastic at most {again:.2f} s: {lost_restart / again:.0f}x less")

if plot:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    repeat = repeats[0]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for job, style in zip(jobs, ("-", "-", "-", "--", "--")):
        run = runs.get((job, repeat), [])
        if not run:
            continue
        t0 = min(line["t0"] for line in run)
        color = None
        for start in sorted({line["t0"] for line in run}):  # restart: each run a line of its own
            points = [(line["time"] - t0, line["loss"]) for line in run
                      if "loss" in line and "time" in line and line["t0"] == start]
            if points:
                drawn = ax.plot(*zip(*points), style, label=None if color else job, marker=".", color=color)
                color = drawn[0].get_color()
        failure = first(job, repeat, "recovery_at_step") is not None and next(
            (line["time"] for line in run if "recovery_at_step" in line), None)
        if failure:
            ax.axvline(failure - t0, color=ax.lines[-1].get_color(), linestyle=":", linewidth=1)
        joined = next((line["time"] for line in run if "replacement_joined_at_step" in line), None)
        if joined:
            ax.axvline(joined - t0, color=ax.lines[-1].get_color(), linestyle="-.", linewidth=1)
    ax.set_xlabel("seconds since the job's start (tsrun)")
    ax.set_ylabel("training loss (rank 0's, mean of 5 steps)")
    ax.set_title(f"Rank 3 SIGKILLed at step {kill}, 4 emulated hosts at {rate}: dotted, the failure "
                 f"seen; dash-dot, the replacement in", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(plot, dpi=110)
    print(f"plot: {plot}")
