"""The sparse reducers as Tessera implements them, for N simulated workers in one process.

TopkEF: algorithm=compressed compressor=topk k=<ratio> ef=vanilla (compress/topk_compressor,
  compress/error_feedback, compressed/compressed_step): every worker sends the top-k of
  g + e by magnitude and keeps e = (g + e) - what it sent; the result is the average of the N
  decoded payloads.

SparDL: algorithm=spardl density=<d> (spardl/spardl_step.cc, topology/spardl_schedule.h), flat
  (one team), N a power of two: worker i adds its residual, splits the vector into N blocks and
  runs Spar-Reduce-Scatter: at step k = 1..log2 N (distance d = N / 2^k) it sends the blocks
  [i+d, i+2d) to worker i+d, each re-selected to its k_b = ceil(d * block size) largest entries
  if it changed since its last selection, and adds the bag it receives; at the end it keeps the
  top k_b of its own block i. Everything a selection drops stays in the residual of the worker
  that dropped it. The result is the sum of the N final blocks (an all-gather), divided by N
  here, as a hook does, to give an average.

Both take warmup=W: the density falls geometrically from `start` to the target over the
first W steps (a density warm-up as in Deep Gradient Compression; 0 = none).
"""
import math

import torch


def warm_density(target, step, warmup, start=0.25):
    if warmup <= 0 or step >= warmup or target >= start:
        return target
    return start * (target / start) ** (step / warmup)


def keep_topk(x, k):
    """x with all but its k largest magnitudes zeroed, and what was dropped."""
    if k >= x.numel():
        return x.clone(), torch.zeros_like(x)
    idx = torch.topk(x.abs(), k, sorted=False).indices
    kept = torch.zeros_like(x)
    kept[idx] = x[idx]
    return kept, x - kept


class TopkEF:
    """beta > 0 hands the momentum off. handoff=local: every worker compresses its local
    momentum u = beta u + g (plus e) instead of g, and the result S_t is returned as
    S_t - beta S_{t-1}, so an optimizer with momentum beta holds S_t in its buffer (Deep
    Gradient Compression's momentum correction, without its masking unless mask=1).
    handoff=global: Tessera's optimizer_momentum=beta, every worker compresses g + e + beta M
    (M the last average) and the result M' is returned as M' - beta M."""

    def __init__(self, density=0.01, warmup=0, ef=True, beta=0.0, mask=0, handoff="local"):
        self.density, self.warmup, self.ef, self.beta, self.mask = density, warmup, ef, beta, mask
        self.handoff = handoff
        self.u, self.prev = None, None
        self.e = None
        self.step = 0
        self.last = {}

    def reduce(self, grads):
        if self.e is None:
            self.e = [torch.zeros_like(g) for g in grads]
        dens = warm_density(self.density, self.step, self.warmup)
        k = max(1, math.ceil(dens * grads[0].numel()))
        avg = torch.stack(grads).mean(0)
        if self.beta > 0 and self.handoff == "global":
            if self.prev is not None:
                grads = [g + self.beta * self.prev for g in grads]
        elif self.beta > 0:
            self.u = grads if self.u is None else [self.beta * u + g for u, g in zip(self.u, grads)]
            grads = self.u
        sent = []
        for m, g in enumerate(grads):
            kept, dropped = keep_topk(g + self.e[m], k)
            sent.append(kept)
            self.e[m] = dropped if self.ef else torch.zeros_like(g)
            if self.beta > 0 and self.mask:  # DGC's momentum factor masking
                self.u[m] = torch.where(kept != 0, torch.zeros_like(g), self.u[m])
        enorm = sum(float(e.norm()) for e in self.e) / len(self.e)
        self.last = {"density": dens, "|e|/|g|": enorm / max(float(avg.norm()), 1e-30)}
        self.step += 1
        out = torch.stack(sent).mean(0)
        if self.beta > 0:
            out, self.prev = (out if self.prev is None else out - self.beta * self.prev), out
        return out

    def stats(self):
        return self.last


class SparDL:
    def __init__(self, workers=4, density=0.01, warmup=0):
        if workers & (workers - 1):
            raise ValueError("this reconstruction covers N a power of two (flat SRS)")
        self.n, self.density, self.warmup = workers, density, warmup
        self.res = None
        self.step = 0
        self.last = {}

    def reduce(self, grads):
        n, dim = self.n, grads[0].numel()
        if self.res is None:
            self.res = [torch.zeros_like(g) for g in grads]
        dens = warm_density(self.density, self.step, self.warmup)
        bounds = [dim * b // n for b in range(n + 1)]
        kb = [max(1, math.ceil(dens * (bounds[b + 1] - bounds[b]))) for b in range(n)]
        work = [g + r for g, r in zip(grads, self.res)]
        res_next = [torch.zeros_like(g) for g in grads]
        dirty = [[True] * n for _ in range(n)]

        def select(w, b):
            if not dirty[w][b]:
                return
            sl = slice(bounds[b], bounds[b + 1])
            kept, dropped = keep_topk(work[w][sl], kb[b])
            work[w][sl] = kept
            res_next[w][sl] += dropped
            dirty[w][b] = False

        d = n // 2
        while d >= 1:
            msgs = []
            for i in range(n):
                bag = [(i + j) % n for j in range(d, min(2 * d, n))]
                for b in bag:
                    select(i, b)
                msgs.append((i, (i + d) % n, bag, [work[i][bounds[b]:bounds[b + 1]].clone() for b in bag]))
            for src, dst, bag, vals in msgs:
                for b, v in zip(bag, vals):
                    work[src][bounds[b]:bounds[b + 1]] = 0  # sent away
                    dirty[src][b] = False
                    work[dst][bounds[b]:bounds[b + 1]] += v
                    dirty[dst][b] = True
            d //= 2
        out = torch.zeros_like(grads[0])
        for i in range(n):
            select(i, i)
            out[bounds[i]:bounds[i + 1]] = work[i][bounds[i]:bounds[i + 1]]
        self.res = res_next
        avg = torch.stack(grads).mean(0)
        rnorm = sum(float(r.norm()) for r in self.res) / n
        self.last = {"density": dens, "|e|/|g|": rnorm / max(float(avg.norm()), 1e-30)}
        self.step += 1
        return out / n

    def stats(self):
        return self.last
