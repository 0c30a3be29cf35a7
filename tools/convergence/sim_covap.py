"""COVAP's coarse-grained filtering as Tessera's DDP hook implements it
(bindings/python/tessera/torch/_covap_hook.py), for N simulated workers in one process:
the flat gradient (one large bucket) is cut into `interval` near-equal shards; shard t is
averaged at step s when (t + s) mod I == 0, together with coef(s) times its residual (the rest
of the residual stays); a skipped shard's gradient is added to the residual and the result
holds zeros there. coef(s) = min(ef_init + floor(s / ef_ascend_steps) * ef_ascend_range, 1).
keep=0: the rest of a sent shard's residual is dropped (the paper's Algorithm 1 with the
coefficient); warmup=W: the first W steps average everything; interleave=1: shard t is the
elements i with i mod I == t (every layer has a part in every shard) instead of a contiguous
range; unbiased=1: no residual at all, a sent shard's fresh average is scaled by I (an unbiased
estimate, no staleness).
handoff=MU: each worker keeps its own momentum m = MU m + g of every element; a sent shard
averages the workers' m (the exact momentum of the averaged gradients, by linearity) and the
result holds M' - MU M there, so that SGD's buffer (momentum MU) becomes M'; a skipped shard
holds zeros (the buffer coasts as MU M). head=1 also feeds back what the buffer missed while
coasting: a skipped step's gradient d steps before the shard's turn adds (1 - MU^d) g to m at
the turn.
diff=C: a sent shard carries I times its fresh gradient plus C times the residual of
differences d (a skipped step adds g to d, a turn subtracts (I - 1) g_now, then keeps (1 - C) d):
the fresh estimate without staleness, with what it misstates fed back slowly, nothing lost.
"""
import torch


class Covap:
    def __init__(self, interval=3, ef_init=0.1, ef_ascend_steps=100, ef_ascend_range=0.1, keep=1, warmup=0,
                 interleave=0, unbiased=0, handoff=0.0, head=0, diff=0.0):
        self.interval = int(interval)
        self.interleave, self.unbiased = int(interleave), int(unbiased)
        self.keep, self.warmup = int(keep), int(warmup)
        self.ef_init, self.ef_ascend_steps, self.ef_ascend_range = float(ef_init), int(ef_ascend_steps), float(ef_ascend_range)
        self.r = None
        self.step = 0
        self.last = {}
        self.mu, self.head, self.diff = float(handoff), int(head), float(diff)
        self.m = self.h = self.M = None

    def coefficient(self):
        return min(self.ef_init + (self.step // self.ef_ascend_steps) * self.ef_ascend_range, 1.0)

    def reduce(self, grads):
        if self.mu:
            return self._handoff(grads)
        if self.diff:
            return self._diff(grads)
        d = grads[0].numel()
        if self.r is None:
            self.r = [torch.zeros_like(g) for g in grads]
        if self.interleave:
            everything = torch.arange(d)
            shards = [everything[everything % self.interval == t] for t in range(self.interval)]
        else:
            bounds = [d * t // self.interval for t in range(self.interval + 1)]
            shards = [slice(bounds[t], bounds[t + 1]) for t in range(self.interval)]
        coef = 0.0 if self.unbiased else self.coefficient()
        out = torch.zeros_like(grads[0])
        if self.step < self.warmup:
            self.step += 1
            return torch.stack(grads).mean(0)
        for t, sl in enumerate(shards):
            if self.interval <= 1 or (t + self.step) % self.interval == 0:
                total = torch.zeros_like(grads[0][sl])
                for m, g in enumerate(grads):
                    back = self.r[m][sl] * coef
                    total += g[sl] + back
                    self.r[m][sl] = self.r[m][sl] - back if self.keep else 0
                out[sl] = total / len(grads) * (self.interval if self.unbiased else 1)
            elif not self.unbiased:
                for m, g in enumerate(grads):
                    self.r[m][sl] += g[sl]
        avg = torch.stack(grads).mean(0)
        rnorm = sum(float(r.norm()) for r in self.r) / len(self.r)
        self.last = {"coef": coef, "|r|/|g|": rnorm / max(float(avg.norm()), 1e-30)}
        self.step += 1
        return out

    def _handoff(self, grads):
        d, mu, interval = grads[0].numel(), self.mu, self.interval
        if self.m is None:
            self.m = [torch.zeros_like(g) for g in grads]
            self.h = [torch.zeros_like(g) for g in grads]
            self.M = torch.zeros_like(grads[0])
        for m, g in zip(self.m, grads):
            m.mul_(mu).add_(g)
        bounds = [d * t // interval for t in range(interval + 1)]
        out = torch.zeros_like(grads[0])
        for t in range(interval):
            sl = slice(bounds[t], bounds[t + 1])
            if self.step < self.warmup or interval <= 1 or (t + self.step) % interval == 0:
                for m, h in zip(self.m, self.h):
                    m[sl] += h[sl]
                    h[sl] = 0
                new = torch.stack([m[sl] for m in self.m]).mean(0)
                out[sl] = new - mu * self.M[sl]
                self.M[sl] = new
            else:
                until = (interval - (t + self.step) % interval) % interval
                if self.head:
                    for h, g in zip(self.h, grads):
                        h[sl] += (1 - mu ** until) * g[sl]
                self.M[sl] *= mu
        avg = torch.stack(grads).mean(0)
        self.last = {"cos": float(torch.nn.functional.cosine_similarity(out, avg, dim=0))}
        self.step += 1
        return out

    def _diff(self, grads):
        d, interval, c = grads[0].numel(), self.interval, self.diff
        if self.r is None:
            self.r = [torch.zeros_like(g) for g in grads]
        if self.step < self.warmup:
            self.step += 1
            return torch.stack(grads).mean(0)
        bounds = [d * t // interval for t in range(interval + 1)]
        out = torch.zeros_like(grads[0])
        for t in range(interval):
            sl = slice(bounds[t], bounds[t + 1])
            if (t + self.step) % interval == 0:
                total = torch.zeros_like(grads[0][sl])
                for r, g in zip(self.r, grads):
                    r[sl] -= (interval - 1) * g[sl]
                    total += interval * g[sl] + c * r[sl]
                    r[sl] *= 1 - c
                out[sl] = total / len(grads)
            else:
                for r, g in zip(self.r, grads):
                    r[sl] += g[sl]
        avg = torch.stack(grads).mean(0)
        self.last = {"|r|/|g|": sum(float(r.norm()) for r in self.r) / len(self.r) / max(float(avg.norm()), 1e-30)}
        self.step += 1
        return out

    def stats(self):
        return self.last
