#!/usr/bin/env python3
"""device_check.sh's summary: env.txt, steps.tsv and the logs of WORK into summary.json and
summary.txt. Per step: result, seconds, and what its log says (gtest cases by result, the
gpu-check cases, which device path the tensors took, compute-sanitizer's error summary). The
kernel benchmark's rows and the torch.topk comparison when they exist.

usage: summarize.py ENV STEPS WORK SUMMARY.json SUMMARY.txt
"""
import json
import os
import re
import sys

GTEST = re.compile(r"^\[\s+(OK|FAILED|SKIPPED)\s+\] (\S+\.\S+)(?: \(\d+ ms\))?$")
CHECK = re.compile(r"^(?:\[\d+\] )?(PASS|FAIL|SKIP) (.*)$")
# The Python checks: a part's outcome and time as it ends, and each named failure.
PART = re.compile(r"^(?:\[\d+\] )?rank (\d+): (.+): (ok|FAILED) in ([\d.]+) s$")
NAMED_FAILURE = re.compile(r"^(?:\[\d+\] )?rank (\d+): FAILED: (.*)$")


def read_log(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def describe(lines):
    """What a step's log says, in a dict (empty when it is none of the known kinds)."""
    d = {}
    cases = {}
    for line in lines:
        m = GTEST.match(line.strip())
        if m:
            cases[m.group(2)] = m.group(1)  # the last word on a test wins (FAILED lists repeat)
    if cases:
        d["gtest"] = {k: sorted(n for n, r in cases.items() if r == k) for k in ("OK", "FAILED", "SKIPPED")}
    checks = {"PASS": 0, "FAIL": [], "SKIP": 0}
    for line in lines:
        m = CHECK.match(line)
        if m:
            if m.group(1) == "FAIL":
                checks["FAIL"].append(m.group(2)[:300])
            else:
                checks[m.group(1)] += 1
    if checks["PASS"] or checks["FAIL"] or checks["SKIP"]:
        d["cases"] = {"passed_rank0": checks["PASS"], "skipped_rank0": checks["SKIP"], "failed": checks["FAIL"][:40]}
    for line in lines:
        if "gpu-check:" in line:
            d.setdefault("gpu_check", []).append(re.sub(r"^\[\d+\] ", "", line))
    direct = sum(1 for l in lines if re.search(r"memory=cuda on .*direct device path", l))
    staged = sum(1 for l in lines if re.search(r"memory=cuda on .*staged through pinned", l))
    if direct or staged:
        d["tensor_paths"] = {"direct": direct, "staged": staged}
    for line in lines:
        m = PART.match(line)
        if m and m.group(1) == "0":
            d.setdefault("parts_rank0", []).append({"part": m.group(2), "ok": m.group(3) == "ok",
                                                    "seconds": float(m.group(4))})
        m = NAMED_FAILURE.match(line)
        if m:
            d.setdefault("failures", []).append(f"rank {m.group(1)}: {m.group(2)[:300]}")
        if line.lstrip("[0123456789] ").startswith('{"ddp_timing"'):
            try:
                d.setdefault("ddp_timing", []).append(json.loads(line[line.index("{"):]))
            except ValueError:
                pass
    for line in lines:
        m = re.search(r"ERROR SUMMARY: (\d+) error", line)
        if m:
            d["sanitizer_errors"] = int(m.group(1))
    return d


def main():
    env_path, steps_path, work, out_json, out_txt = sys.argv[1:6]
    env = {}
    for line in read_log(env_path):
        k, _, v = line.partition(" ")
        env[k] = v
    steps = []
    for line in read_log(steps_path):
        name, result, rc, secs, note = (line.split("\t") + [""] * 5)[:5]
        s = {"name": name, "result": result, "rc": rc, "seconds": float(secs or 0), "note": note}
        s.update(describe(read_log(os.path.join(work, "logs", name + ".log"))))
        steps.append(s)
    summary = {"env": env, "steps": steps}
    for key, name in (("kernel_bench", "kernel-bench.json"), ("torch_topk", "torch-topk.json")):
        try:
            with open(os.path.join(work, name)) as f:
                summary[key] = json.load(f)
        except (OSError, ValueError):
            pass
    counts = {}
    for s in steps:
        counts[s["result"]] = counts.get(s["result"], 0) + 1
    summary["counts"] = counts
    with open(out_json, "w") as f:
        json.dump(summary, f, indent=1)

    t = [f"Tessera GPU device check ({env.get('mode', '?')}), {env.get('date', '')}, {env.get('elapsed', '?')} s"]
    for k in ("gpu", "cuda_driver_api", "nvcc", "compute_sanitizer", "host", "kit_commit", "kit_build", "kit_cuda"):
        if k in env:
            t.append(f"  {k}: {env[k]}")
    t.append("")
    t.append(f"{'step':34} {'result':8} {'s':>6}  note")
    for s in steps:
        t.append(f"{s['name']:34} {s['result']:8} {s['seconds']:6.1f}  {s['note'][:120]}")
        g = s.get("gtest")
        if g:
            t.append(f"{'':34} gtest: {len(g['OK'])} ok, {len(g['FAILED'])} failed, {len(g['SKIPPED'])} skipped")
            for n in g["FAILED"]:
                t.append(f"{'':36}FAILED {n}")
        for line in s.get("gpu_check", [])[-1:]:
            t.append(f"{'':34} {line}")
        for line in s.get("cases", {}).get("failed", [])[:10]:
            t.append(f"{'':36}FAIL {line[:160]}")
        if "tensor_paths" in s:
            p = s["tensor_paths"]
            t.append(f"{'':34} memory=cuda tensors: {p['direct']} direct, {p['staged']} staged (creations, all ranks)")
        for line in s.get("failures", [])[:10]:
            t.append(f"{'':36}FAILED {line[:160]}")
        parts = s.get("parts_rank0", [])
        if parts:
            t.append(f"{'':34} rank 0: " + ", ".join(f"{p['part']} {'ok' if p['ok'] else 'FAILED'} {p['seconds']:.0f}s"
                                                     for p in parts)[:400])
        for r in s.get("ddp_timing", []):
            t.append(f"{'':34} DDP {r['ddp_timing']:32} {r['ms_per_step']:9.2f} ms/step {r['ratio_to_gloo']:6.2f}x gloo")
        if "sanitizer_errors" in s:
            t.append(f"{'':34} compute-sanitizer: {s['sanitizer_errors']} errors")
    kb = summary.get("kernel_bench")
    if kb:
        t.append("")
        t.append(f"device kernels on {kb['device']}, {kb['count']} f32 elements, median of {kb['reps']}:")
        t.append(f"  {'kernel':26} {'ms':>8} {'x memcpy':>9} {'target':>7} {'meets':>6} {'bits':>5}")
        for r in kb["kernels"]:
            target = f">={r['target']:.2f}" if r["target"] else ""
            t.append(f"  {r['name']:26} {r['ms']:8.3f} {r['ratio']:9.2f} {target:>7} {str(r['meets']).lower():>6} "
                     f"{'same' if r['match'] else 'DIFF':>5}")
    tt = summary.get("torch_topk")
    if tt and "torch_topk_unsorted_ms" in tt:
        t.append(f"  torch.topk (torch {tt['torch']}, CUDA {tt['cuda']}), k = {tt['k']}: unsorted "
                 f"{tt['torch_topk_unsorted_ms']:.3f} ms, sorted {tt['torch_topk_sorted_ms']:.3f} ms; Tessera "
                 f"{tt.get('tessera_topk_ms', float('nan')):.3f} ms ({tt.get('tessera_over_torch', float('nan')):.2f}x "
                 f"the faster; meets: {tt.get('meets')}); same index set: {tt['same_set']}")
    elif tt:
        t.append(f"  torch.topk: {tt}")
    t.append("")
    t.append("steps: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    with open(out_txt, "w") as f:
        f.write("\n".join(t) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
