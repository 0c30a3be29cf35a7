#!/usr/bin/env python3
"""torch.topk on the tensor tsr-device-kernel-bench timed its top-k on (--dump-input), same k.

Times torch.topk(x.abs(), k) on the GPU with CUDA events (median of --reps after two warm-ups),
sorted=False and sorted=True, abs included (Tessera's top-k selects by magnitude too), and
compares the index set with Tessera's (--dump-topk). Prints one JSON object. Exit 0 when it ran,
whatever the timings; 3 when torch or a CUDA device is missing.

usage: torch_topk.py INPUT.f32 TOPK.u32 [--reps R] [--bench-json FILE] [--out FILE]
  --bench-json: tsr-device-kernel-bench's --json, for Tessera's top-k time on the same tensor
  --out: also write the JSON object there
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("topk")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--bench-json", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(json.dumps({"error": f"import: {e}"}))
        return 3
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no CUDA device", "torch": torch.__version__}))
        return 3
    x = torch.from_numpy(np.fromfile(a.input, dtype=np.float32)).cuda()
    ours = torch.from_numpy(np.fromfile(a.topk, dtype=np.uint32).astype(np.int64)).cuda()
    k = ours.numel()

    def median_ms(fn):
        fn()
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(a.reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        times.sort()
        return times[len(times) // 2]

    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
           "count": x.numel(), "k": k}
    out["torch_topk_unsorted_ms"] = median_ms(lambda: torch.topk(x.abs(), k, sorted=False))
    out["torch_topk_sorted_ms"] = median_ms(lambda: torch.topk(x.abs(), k, sorted=True))
    idx = torch.topk(x.abs(), k, sorted=False).indices
    theirs = torch.sort(idx).values
    # Ties at the k-th magnitude may be broken differently; count the indices outside the other set.
    differing = int(k - torch.isin(theirs, ours).sum().item())
    kth = x.abs()[ours].min().item()
    out["indices_not_in_tessera_set"] = differing
    out["kth_magnitude"] = kth
    out["same_set"] = differing == 0
    if a.bench_json:
        with open(a.bench_json) as f:
            rows = [r for r in json.load(f)["kernels"] if r["name"] == "top-k"]
        if rows:
            best = min(out["torch_topk_unsorted_ms"], out["torch_topk_sorted_ms"])
            out["tessera_topk_ms"] = rows[0]["ms"]
            out["tessera_over_torch"] = rows[0]["ms"] / best
            out["meets"] = rows[0]["ms"] <= best
    print(json.dumps(out))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
