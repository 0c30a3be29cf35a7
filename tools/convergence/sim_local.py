"""COVAP's round-robin filtering with local steps instead of a residual: each of N simulated
workers keeps its own model and optimizer (its own momentum buffer), steps every parameter
with its own fresh gradient at once, and at step s the shard t with (t + s) mod I == 0 of the
flat parameter vector is averaged over the workers (with buffers=1 the momentum buffers of
that shard too). Nothing is sent late: what a worker skips is its peers' gradients, which
arrive inside the averaged parameters at the shard's next turn, so each worker runs undelayed
heavy-ball SGD between averagings (Local SGD per shard). before=1 averages a due shard's
parameters before the step instead (the values the gradients were taken at), then steps
locally: what the DDP hook does with local=1, since a hook runs before the optimizer. The
model tested after each epoch is the workers' average (what the hook's synchronize() gives
every worker).

  /usr/bin/python3 tools/convergence/run.py --algo covap-local --opt interval=3 --seed 1 --train-size 30000
"""
import copy
import math
import time

import numpy as np
import torch
import torch.nn.functional as F

import sim_common


def _flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def _unflat(vec, tensors):
    at = 0
    for t in tensors:
        n = t.numel()
        t.copy_(vec[at:at + n].view_as(t))
        at += n


def _average_range(models, buffers, lo, hi):
    """Averages elements [lo, hi) of the flat parameters (and momentum buffers) over the models."""
    groups = [[list(m.parameters()) for m in models]]
    if buffers:
        groups.append(buffers)
    for tensors in groups:
        flats = [_flat([t.data for t in ts]) for ts in tensors]
        mean = torch.stack([f[lo:hi] for f in flats]).mean(0)
        for f, ts in zip(flats, tensors):
            f[lo:hi] = mean
            _unflat(f, [t.data for t in ts])


def _average_due(nets, bufs, interval, bounds, step):
    with torch.no_grad():
        for t in range(interval):
            if interval <= 1 or (t + step) % interval == 0:
                _average_range(nets, bufs, bounds[t], bounds[t + 1])


def train_local(*, interval=3, buffers=0, before=0, seed=1, workers=4, batch=64, epochs=3, lr=0.05, momentum=0.9,
                model="small", train_size=None, log=print):
    torch.manual_seed(seed)
    np.random.seed(seed)
    tx, ty, vx, vy = sim_common.load_fashion_mnist(train_size)
    base = sim_common.Cnn(*sim_common.MODELS[model])
    nets = [copy.deepcopy(base) for _ in range(workers)]
    opts = [torch.optim.SGD(n.parameters(), lr=lr, momentum=momentum) for n in nets]
    d = sum(p.numel() for p in base.parameters())
    bounds = [d * t // interval for t in range(interval + 1)]
    per_rank = len(tx) // workers
    steps_per_epoch = per_rank // batch
    result = {"accuracy": [], "diverged": False, "steps": 0, "loss": []}
    step, t0 = 0, time.time()
    for epoch in range(epochs):
        order = torch.randperm(len(tx), generator=torch.Generator().manual_seed(seed * 1000 + epoch))
        shards = [order[r:per_rank * workers:workers] for r in range(workers)]
        running = []
        for i in range(steps_per_epoch):
            loss_sum = 0.0
            for r, (net, opt) in enumerate(zip(nets, opts)):
                idx = shards[r][i * batch:(i + 1) * batch]
                opt.zero_grad(set_to_none=False)
                loss = F.cross_entropy(net(tx[idx]), ty[idx])
                loss.backward()
                loss_sum += float(loss)
            loss = loss_sum / workers
            running.append(loss)
            if not math.isfinite(loss) or loss > 1e3:
                result["diverged"] = True
                break
            if before:
                _average_due(nets, None, interval, bounds, step)
            for opt in opts:
                opt.step()
            if not before:
                bufs = [[o.state[p]["momentum_buffer"] for p in n.parameters()] for n, o in zip(nets, opts)] \
                    if buffers and momentum else None
                _average_due(nets, bufs, interval, bounds, step)
            step += 1
        result["loss"].append(float(np.mean(running[-50:])) if running else float("nan"))
        if result["diverged"]:
            break
        avg = copy.deepcopy(base)
        with torch.no_grad():
            for p, *ps in zip(avg.parameters(), *[n.parameters() for n in nets]):
                p.copy_(torch.stack([q.data for q in ps]).mean(0))
        result["accuracy"].append(sim_common.accuracy(avg, vx, vy))
        log(f"epoch {epoch + 1}: test accuracy {result['accuracy'][-1]:.2f}% "
            f"(train loss {result['loss'][-1]:.3f}, {time.time() - t0:.0f} s)")
    result["steps"] = step
    while len(result["accuracy"]) < epochs:
        result["accuracy"].append(10.0 if result["diverged"] else float("nan"))
    return result
