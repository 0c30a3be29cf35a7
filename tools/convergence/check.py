#!/usr/bin/python3
"""Convergence check of Tessera's compressed allreduces under SGD momentum, single process.

Trains the Fashion-MNIST CNN (sim_common.py) with 4 simulated workers, SGD lr 0.05 momentum
0.9, batch 64 per worker, once with the exact average and once with each algorithm at
Tessera's defaults (run.py DEFAULTS), and fails (exit 1) when an algorithm diverges or ends
more than --tolerance points of test accuracy below the dense run. About 3 minutes on one
core with the defaults below:

  nice -n 10 /usr/bin/python3 tools/convergence/check.py
  /usr/bin/python3 tools/convergence/check.py --algos marsit --train-size 30000 --epochs 3

The simulation reproduces each algorithm's arithmetic, not its code (sim_marsit.py and
sim_sparse.py say what differs: the random bits, not their distribution); the C++ side has
its own unit tests (algorithms/marsit/tests/marsit_momentum_test.cc trains a noisy quadratic
through the real MarsitTensor).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402
import sim_common  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--algos", default="marsit,topk,spardl")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--train-size", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--tolerance", type=float, default=1.5, help="points of accuracy below dense allowed")
    ap.add_argument("--model", default="small", choices=sorted(sim_common.MODELS))
    args = ap.parse_args()
    torch.set_num_threads(1)
    failures = []
    for seed in (int(s) for s in args.seeds.split(",")):
        results = {}
        for algo in ["dense"] + args.algos.split(","):
            reducer = run.make_reducer(algo, {}, 4, seed)
            res = sim_common.train(reducer, seed=seed, epochs=args.epochs, model=args.model,
                                   train_size=args.train_size, log=lambda s: None)
            results[algo] = res
            accs = " / ".join(f"{a:.2f}" for a in res["accuracy"])
            print(f"seed {seed} {algo:8s} accuracy after each epoch: {accs}"
                  f"{'  DIVERGED' if res['diverged'] else ''}", flush=True)
        dense = results["dense"]["accuracy"][-1]
        for algo, res in results.items():
            gap = res["accuracy"][-1] - dense
            if res["diverged"] or gap < -args.tolerance:
                failures.append(f"seed {seed} {algo}: {res['accuracy'][-1]:.2f}% vs dense {dense:.2f}% "
                                f"({gap:+.2f}){', diverged' if res['diverged'] else ''}")
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print(f"OK: every algorithm within {args.tolerance} points of dense")
    return 0


if __name__ == "__main__":
    sys.exit(main())
