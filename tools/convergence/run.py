#!/usr/bin/python3
"""Trains the Fashion-MNIST CNN with N simulated workers and one allreduce, and prints the
test accuracy after each epoch (sim_common.py says how the workers are simulated).

  /usr/bin/python3 tools/convergence/run.py --algo marsit --seed 1
  /usr/bin/python3 tools/convergence/run.py --algo marsit --opt beta=0,block=0  # the paper's form
  /usr/bin/python3 tools/convergence/run.py --algo topk --opt density=0.05

--algo: dense | delayed | marsit | topk | spardl | onebit | covap | covap-local. --opt key=value,...: the
reducer's options (sim_marsit.Marsit, sim_sparse.TopkEF / SparDL, sim_onebit.OnebitEF, sim_covap.Covap;
covap-local: interval, before, buffers of sim_local.train_local, the DDP hook's covap local=1); without
them each algorithm takes Tessera's defaults. The last line is a JSON record of the run (for tables).
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_common  # noqa: E402
import sim_covap  # noqa: E402
import sim_local  # noqa: E402
import sim_marsit  # noqa: E402
import sim_onebit  # noqa: E402
import sim_sparse  # noqa: E402

# Tessera's defaults, as the algorithms' parseParams give them (Marsit: momentum=0.9 is beta,
# scale_block=4096 is block; beta=0,block=0 is the paper's form, the default before; onebit:
# the preset's scale_block=4096 and optimizer_momentum=0.9, block=0,beta=0 the one-scale form).
DEFAULTS = {
    "marsit": {"scale": "meanabs", "comp": "global", "block": 4096, "beta": 0.9, "full_every": 0},
    "topk": {"density": 0.01, "warmup": 0},
    "spardl": {"density": 0.01, "warmup": 0},
    "onebit": {"block": 4096, "beta": 0.9, "handoff": "global"},
    "covap": {"interval": 3, "ef_init": 0.1, "ef_ascend_steps": 100, "ef_ascend_range": 0.1},
    # The hook's local=1: a due shard's parameters averaged before the step, local momentum.
    "covap-local": {"interval": 3, "before": 1, "buffers": 0},
}


def parse_opts(text):
    out = {}
    for item in filter(None, (text or "").split(",")):
        key, _, value = item.partition("=")
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out


def make_reducer(algo, opts, workers, seed):
    if algo == "dense":
        return sim_common.Dense()
    if algo == "delayed":
        return sim_common.Delayed(**opts)
    params = dict(DEFAULTS[algo], **opts)
    if algo == "marsit":
        return sim_marsit.Marsit(workers=workers, seed=seed, **params)
    if algo == "topk":
        return sim_sparse.TopkEF(**params)
    if algo == "spardl":
        return sim_sparse.SparDL(workers=workers, **params)
    if algo == "onebit":
        return sim_onebit.OnebitEF(**params)
    if algo == "covap":
        return sim_covap.Covap(**params)
    raise SystemExit(f"--algo {algo}: accepted values are dense, delayed, marsit, topk, spardl, onebit, covap, "
                     f"covap-local")


def train(algo, opts, *, workers=4, seed=1, **kwargs):
    """Trains with `algo` (sim_common.train's keyword arguments): covap-local keeps a model per
    worker (sim_local.train_local), every other algorithm is a reducer over one model."""
    if algo == "covap-local":
        kwargs.pop("log_every", None)
        return sim_local.train_local(workers=workers, seed=seed, **dict(DEFAULTS[algo], **opts), **kwargs)
    return sim_common.train(make_reducer(algo, opts, workers, seed), workers=workers, seed=seed, **kwargs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--algo", default="dense")
    ap.add_argument("--opt", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--model", default="small", choices=sorted(sim_common.MODELS))
    ap.add_argument("--train-size", type=int, default=0, help="first n training images (0: all 60000)")
    ap.add_argument("--log-every", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--own-momentum", default="", metavar="MU[:SCALE[:RAMP]]",
                    help="the estimates get their own momentum MU through the hand-off (sim_common.OwnMomentum)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    opts = parse_opts(args.opt)
    log = lambda s: print(s, flush=True)  # noqa: E731
    common = dict(workers=args.workers, seed=args.seed, batch=args.batch, epochs=args.epochs, lr=args.lr,
                  momentum=args.momentum, model=args.model, train_size=args.train_size or None, log=log)
    if args.algo == "covap-local":
        if args.own_momentum:
            ap.error("--own-momentum: not with covap-local (each worker keeps its own optimizer)")
        res = train(args.algo, opts, **common)
    else:
        reducer = make_reducer(args.algo, opts, args.workers, args.seed)
        if args.own_momentum:
            inner_mu, scale, ramp = (args.own_momentum.split(":") + ["", ""])[:3]
            try:
                reducer = sim_common.OwnMomentum(reducer, args.momentum, float(inner_mu),
                                                 float(scale) if scale else None, int(ramp or 0))
            except ValueError:
                ap.error(f"--own-momentum {args.own_momentum}: MU[:SCALE[:RAMP]], numbers (RAMP an integer)")
        res = sim_common.train(reducer, log_every=args.log_every, **common)
    record = {"algo": args.algo, "opts": opts, "seed": args.seed, "model": args.model,
              "own_momentum": args.own_momentum, "train_size": args.train_size or 60000,
              "lr": args.lr, "momentum": args.momentum,
              **res}
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
