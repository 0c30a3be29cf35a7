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
    data = sim_common.load_fashion_mnist(train_size)
    tx, ty = data[0], data[1]
    base = sim_common.Cnn(*sim_common.MODELS[model])
    nets = [copy.deepcopy(base) for _ in range(workers)]
    opts = [torch.optim.SGD(n.parameters(), lr=lr, momentum=momentum) for n in nets]
    d = sum(p.numel() for p in base.parameters())
    bounds = [d * t // interval for t in range(interval + 1)]

    def step(n, batches):
        loss_sum = 0.0
        for net, opt, idx in zip(nets, opts, batches):
            opt.zero_grad(set_to_none=False)
            loss = F.cross_entropy(net(tx[idx]), ty[idx])
            loss.backward()
            loss_sum += float(loss)
        loss = loss_sum / workers
        if not sim_common.finite_loss(loss):
            return loss
        if before:
            _average_due(nets, None, interval, bounds, n)
        for opt in opts:
            opt.step()
        if not before:
            bufs = [[o.state[p]["momentum_buffer"] for p in net.parameters()] for net, o in zip(nets, opts)] \
                if buffers and momentum else None
            _average_due(nets, bufs, interval, bounds, n)
        return loss

    def average_model():
        avg = copy.deepcopy(base)
        with torch.no_grad():
            for p, *ps in zip(avg.parameters(), *[net.parameters() for net in nets]):
                p.copy_(torch.stack([q.data for q in ps]).mean(0))
        return avg

    return sim_common.run_epochs(step, average_model, data, seed=seed, workers=workers, batch=batch, epochs=epochs,
                                 log=log)
