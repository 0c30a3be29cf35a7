"""Marsit ("Sign Bit is Enough") as Tessera's ring implements it, for N simulated
workers in one process (algorithms/marsit/marsit_step.cc, kernels/sign*.{h,cc}):

  g'_m = g_m + c_m + beta M          (c_m: worker m's compensation; M: last estimate; 0 at start)
  bit  = g'_m > 0, a fair coin for exact zeros
  ring: segment j is touched by workers j+1, j+2, ..., j in turn; the m-th merges its bits s
        into the incoming v (standing for m-1 workers) by v' = (v AND s) OR ((v XOR s) AND t),
        P(t = 1) = 1/m where s = 1 and (m-1)/m where s = 0
  eta_b = mean over workers of mean |g'_m| over block b of `block` elements (0: one block)
  M'   = eta_b (2 bit - 1);  c_m = g'_m - M'         (comp=global, the paper's Algorithm 1)
  out  = M' - beta M, M = M'  (an optimizer with momentum beta then holds M' in its buffer)
  every K steps (0 = never): M' = mean of g'_m, c_m = 0

beta (Tessera's momentum=) and block (scale_block=) are 0.9 and 4096 by default; beta=0,
block=0 is the paper's form on the gradient, Tessera's default before. Philox is replaced by
NumPy's generator: the bits have the same distribution, not the same values. Alternatives
tried while finding the fix (docs/compressed.md, "Convergence under momentum"):
  scale=ls     eta_b = <s, mean g'> / |b| over the block, the least-squares scale of the
               merged sign vector s (a second scalar allreduce, after the bits)
  comp=local   c_m = g'_m - eta (2 bit(g'_m) - 1): each worker keeps what its own sign
               dropped (error-feedback signSGD), not g'_m - M'
  warmup=W     the first W steps are full precision (c_m = 0 after them)
"""
import numpy as np
import torch


def pack_signs(x, rng):
    bits = x > 0
    zero = x == 0
    if zero.any():
        bits[zero] = rng.random(int(zero.sum())) < 0.5
    return bits


def ring_merge(signs, rng):
    """The merged bit vector of a Marsit ring over len(signs) workers (boolean arrays)."""
    n, d = len(signs), len(signs[0])
    out = np.empty(d, dtype=bool)
    bounds = np.linspace(0, d, n + 1).astype(int)
    for j in range(n):
        lo, hi = bounds[j], bounds[j + 1]
        order = [(j + 1 + k) % n for k in range(n)]
        v = signs[order[0]][lo:hi].copy()
        for m in range(2, n + 1):  # the m-th worker to touch the segment
            s = signs[order[m - 1]][lo:hi]
            p_t = np.where(s, 1.0 / m, (m - 1.0) / m)
            t = rng.random(hi - lo) < p_t
            v = (v & s) | ((v ^ s) & t)
        out[lo:hi] = v
    return out


class Marsit:
    def __init__(self, workers=4, scale="meanabs", comp="global", full_every=0, warmup=0,
                 block=4096, beta=0.9, seed=0):
        self.n, self.scale, self.comp = workers, scale, comp
        self.block, self.beta, self.prev = block, beta, None
        self.full_every, self.warmup = full_every, warmup
        self.rng = np.random.default_rng(seed + 12345)
        self.c = None
        self.step = 0
        self.last = {}

    def _full_precision(self):
        if self.step < self.warmup:
            return True
        return self.full_every > 0 and (self.step + 1) % self.full_every == 0

    def reduce(self, grads):
        if self.c is None:
            self.c = [torch.zeros_like(g) for g in grads]
        avg_g = torch.stack(grads).mean(0)
        prior = None
        if self.beta > 0:
            self.exact = avg_g if self.step == 0 else self.beta * self.exact + avg_g
            if self.prev is not None:
                prior = self.beta * self.prev
                grads = [g + prior for g in grads]
        work = [g + c for g, c in zip(grads, self.c)]
        if self._full_precision():
            out = torch.stack(work).mean(0)
            self.c = [torch.zeros_like(g) for g in grads]
            self.last = {"eta": 0.0, "|c|/|g|": 0.0}
        else:
            signs = [pack_signs(w.numpy(), self.rng) for w in work]
            merged = torch.from_numpy(ring_merge(signs, self.rng).astype(np.float32) * 2 - 1)
            if self.scale == "meanabs":
                eta = torch.stack([self._mean(w.abs()) for w in work]).mean(0)
            elif self.scale == "ls":
                eta = torch.stack([self._mean(merged * w) for w in work]).mean(0)
            else:
                raise ValueError(self.scale)
            out = eta * merged
            if self.comp == "global":
                self.c = [w - out for w in work]
            elif self.comp == "local":
                self.c = [w - eta * torch.from_numpy(s.astype(np.float32) * 2 - 1)
                          for w, s in zip(work, signs)]
            else:
                raise ValueError(self.comp)
            gnorm = max(float(avg_g.norm()), 1e-30)
            cbar = torch.stack(self.c).mean(0)
            self.last = {"eta": float(eta.mean()),
                         "|c|/|g|": float(np.mean([float(c.norm()) for c in self.c])) / gnorm,
                         "|c-cbar|/|g|": float(np.mean([float((c - cbar).norm()) for c in self.c])) / gnorm}
        self.step += 1
        if self.beta > 0:
            self.last["cos(M,exact M)"] = float(out @ self.exact) / max(float(out.norm() * self.exact.norm()), 1e-30)
            self.prev = out
            if prior is not None:
                out = out - prior
        return out

    def _mean(self, x):
        """Mean per block of `block` elements (0: one block), broadcast back to x's shape."""
        if self.block <= 0:
            return x.double().mean().float().expand_as(x)
        d, b = x.numel(), self.block
        pad = torch.nn.functional.pad(x.double(), (0, (-d) % b)).view(-1, b)
        counts = torch.full((pad.shape[0],), float(b), dtype=torch.float64)
        counts[-1] = d - b * (pad.shape[0] - 1)
        return (pad.sum(1) / counts).float().repeat_interleave(b)[:d]

    def stats(self):
        return self.last
