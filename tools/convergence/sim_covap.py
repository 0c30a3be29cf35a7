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
"""
import torch


class Covap:
    def __init__(self, interval=3, ef_init=0.1, ef_ascend_steps=100, ef_ascend_range=0.1, keep=1, warmup=0,
                 interleave=0, unbiased=0):
        self.interval = int(interval)
        self.interleave, self.unbiased = int(interleave), int(unbiased)
        self.keep, self.warmup = int(keep), int(warmup)
        self.ef_init, self.ef_ascend_steps, self.ef_ascend_range = float(ef_init), int(ef_ascend_steps), float(ef_ascend_range)
        self.r = None
        self.step = 0
        self.last = {}

    def coefficient(self):
        return min(self.ef_init + (self.step // self.ef_ascend_steps) * self.ef_ascend_range, 1.0)

    def reduce(self, grads):
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

    def stats(self):
        return self.last
