"""onebit with error feedback as Tessera's compressed algorithm implements it
(algorithm=onebit: compressed, compressor=onebit scaling=true scale_block=4096
optimizer_momentum=0.9, ef=vanilla; compress/onebit_compressor, compress/error_feedback,
compressed/compressed_step), for N simulated workers in one process:

  c_m  = g_m + e_m (+ beta M with the hand-off)
  q_m  = eta_m sign(c_m),  eta_m = mean |c_m| over each block of `block` elements (0: one)
  e_m  = c_m - q_m
  out  = mean over workers of q_m

beta > 0 hands the momentum off; handoff says how:
  global  (Tessera's optimizer_momentum=beta) every worker compresses g_m + e_m + beta M,
          M the last average (the same on every worker), and the result M' is returned as
          M' - beta M, so an optimizer with momentum beta holds M' in its buffer;
  local   (Deep Gradient Compression's momentum correction) every worker compresses its local
          momentum u_m = beta u_m + g_m (plus e_m) and the result S_t is returned as
          S_t - beta S_{t-1}.
"""
import torch


class OnebitEF:
    def __init__(self, block=4096, beta=0.9, ef=True, handoff="global"):
        self.block, self.beta, self.ef = int(block), float(beta), bool(ef)
        self.handoff = handoff
        self.e = None
        self.u = None
        self.prev = None
        self.last = {}

    def _quantize(self, c):
        if self.block <= 0:
            return c.abs().mean() * torch.where(c > 0, 1.0, -1.0)
        d = c.numel()
        pad = (-d) % self.block
        blocks = torch.nn.functional.pad(c, (0, pad)).view(-1, self.block)
        sizes = torch.full((blocks.shape[0], 1), float(self.block))
        sizes[-1] = self.block - pad
        eta = blocks.abs().sum(1, keepdim=True) / sizes
        return (eta * torch.where(blocks > 0, 1.0, -1.0)).reshape(-1)[:d]

    def reduce(self, grads):
        if self.e is None:
            self.e = [torch.zeros_like(g) for g in grads]
        avg = torch.stack(grads).mean(0)
        if self.beta > 0 and self.handoff == "global":
            if self.prev is not None:
                grads = [g + self.beta * self.prev for g in grads]
        elif self.beta > 0:
            self.u = grads if self.u is None else [self.beta * u + g for u, g in zip(self.u, grads)]
            grads = self.u
        sent = []
        for m, g in enumerate(grads):
            c = g + self.e[m]
            q = self._quantize(c)
            sent.append(q)
            self.e[m] = c - q if self.ef else torch.zeros_like(g)
        out = torch.stack(sent).mean(0)
        enorm = sum(float(e.norm()) for e in self.e) / len(self.e)
        self.last = {"|e|/|g|": enorm / max(float(avg.norm()), 1e-30)}
        if self.beta > 0:
            out, self.prev = (out if self.prev is None else out - self.beta * self.prev), out
        return out

    def stats(self):
        return self.last
