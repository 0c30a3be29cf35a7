"""COVAP as a DDP communication hook ("Communication-Efficient Data Parallel Training by
Coarse-grained, Overlap-aware ... Filtering": COVAP), the form the paper itself takes.

Vocabulary: DDP's buckets are COVAP's tensors; a bucket larger than the sharding median is cut
into shards (at most the interval I of them); shard t is averaged at step s when
(t + s) mod I == 0, so every rank knows the choice with no message. A skipped shard's gradient
goes to the residual and the hook returns zeros for it; when the shard is next sent, the
schedule's coefficient min(ef_init + floor(s / ef_ascend_steps) * ef_ascend_range, 1) of its
residual goes along (the rest stays; it leaves the residual once the shard has arrived, so a step
that fails keeps it). I is given (interval=N) or, with interval=auto, measured
over the first profile_steps steps, which average everything: I = ceil(CCR), the ratio of a
step's communication (the union of its allreduces' busy spans) to its computation (the step's
period, from its first bucket to the next step's, less the communication left after its last
bucket was handed over), the median over the profiled steps after the first (a warm-up), the
largest over the ranks. Each step is
measured on its own: over several steps at once, the earlier steps' waits for communication
would count as computation. The same logic in C++ is algorithms/covap/covap_logic.h (the
trainer-driven form).

local=1 keeps the schedule and the bytes but not the residual: every rank steps each parameter
with its own fresh gradient at once, and a shard on its turn averages the parameters instead
(the values this step's gradients were taken at; the average is written back before the
optimizer steps). Nothing is applied late, which is what costs the residual its accuracy under
SGD momentum (docs/convergence.md, "Why late gradients cost so much"): between turns each rank
runs plain local SGD on that shard, and the averaging keeps the ranks close. The ranks' models
then differ by their last local steps: CovapState.synchronize() averages every parameter, to
evaluate or save one model. With an interval of 1 every gradient is averaged, as without it.
"""
import math
import threading
import time

import torch

from ..request import complete_future, on_side_stream


def _parse(interval="auto", profile_steps=5, ef_init=0.1, ef_ascend_steps=100, ef_ascend_range=0.1,
           max_interval=0, local=0, **unknown):
    if unknown:
        key, value = next(iter(unknown.items()))
        raise ValueError(f"tessera hooks: covap {key}={value}: not a covap parameter (interval, profile_steps, "
                         f"ef_init, ef_ascend_steps, ef_ascend_range, max_interval, local)")
    if str(local) not in ("0", "1"):
        raise ValueError(f"tessera hooks: covap local={local}: 0 or 1")
    if interval != "auto" and (not str(interval).isdigit() or int(interval) < 1):
        raise ValueError(f"tessera hooks: covap interval={interval}: 'auto' or an integer >= 1")
    for key, value, low in (("profile_steps", profile_steps, 1), ("ef_ascend_steps", ef_ascend_steps, 1),
                            ("max_interval", max_interval, 0)):
        if not str(value).isdigit() or int(value) < low:
            raise ValueError(f"tessera hooks: covap {key}={value}: an integer >= {low}")
    for key, value in (("ef_init", ef_init), ("ef_ascend_range", ef_ascend_range)):
        if not 0 <= float(value) <= 1:
            raise ValueError(f"tessera hooks: covap {key}={value}: in [0, 1]")
    return (None if interval == "auto" else int(interval), int(profile_steps), float(ef_init),
            int(ef_ascend_steps), float(ef_ascend_range), int(max_interval), str(local) == "1")


def sharding_median(counts):
    """The median of the bucket sizes once those at least twice the plain median are set aside."""
    if not counts:
        return 0.0
    plain = float(torch.tensor(counts, dtype=torch.float64).median())
    kept = [c for c in counts if c < 2 * plain] or list(counts)
    ordered = sorted(kept)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def shard_offsets(count, median, interval):
    """(offset, length) of a bucket's shards: min(floor(count / median), interval) near-equal
    shards when that is 2 or more, else the whole bucket."""
    parts = min(int(count // median) if median else 1, interval)
    if parts < 2:
        return [(0, count)]
    base, extra = divmod(count, parts)
    out, at = [], 0
    for i in range(parts):
        n = base + (1 if i < extra else 0)
        out.append((at, n))
        at += n
    return out


class CovapState:
    def __init__(self, comm, parameters=(), **params):
        (self.given, self.profile_steps, self.ef_init, self.ef_ascend_steps, self.ef_ascend_range,
         self.max_interval, self.local) = _parse(**params)
        self.parameters = [p for p in parameters if p.requires_grad]  # for synchronize()
        self.comm = comm
        self.interval = self.given or 1
        self.ccr = 0.0
        self.step = 0
        self.residual = {}   # bucket index -> tensor
        self.counts = {}     # bucket index -> element count (this layout)
        self.shards = None   # bucket index -> [(offset, length, global shard id)]
        self.spans = []      # profiling: (posted, ended) of each allreduce
        self.profiled = 0    # profiling allreduces posted
        self.layouts = {}    # bucket index -> ((parameter id, element count), ...) in buffer order
        self.pieces = None   # parameter id -> residual, carried from an earlier state (carry_from)
        self.failed_at = None  # the first step a collective of which failed (it is to be redone)
        self.lock = threading.Lock()

    def schedule(self):
        """What a replacement's hook needs of a member's to step in time with it: pass it to
        hooks.register(..., state_from=) there (tessera.torch.elastic.broadcast_state carries it)."""
        return {"step": self.step, "interval": self.interval, "ccr": self.ccr}

    def carry_from(self, old):
        """Goes on from `old`: the CovapState of the same model's earlier DDP (before a shrink or
        grow re-wrapped it), whose residuals come over by parameter, or a member's schedule()
        (a replacement: residuals start at zero). Collective over the new group: its ranks agree
        on the step, the smallest (the step that failed is redone, whether or not a rank had
        counted it). Returns the residuals' total carried over."""
        if isinstance(old, dict):
            self.step, self.interval, self.ccr = int(old["step"]), int(old["interval"]), float(old["ccr"])
        elif isinstance(old, CovapState):
            # A step that failed is redone: the count goes back to it.
            failed = old.step if old.failed_at is None else min(old.step, old.failed_at)
            self.step, self.interval, self.ccr = failed, old.interval, old.ccr
        else:
            raise ValueError(f"tessera hooks: covap state_from: a CovapState or its schedule(), "
                             f"not a {type(old).__name__}")
        step = torch.tensor([self.step], dtype=torch.int64)
        self.comm.allreduce(step, op="min")
        self.step = int(step.item())
        if isinstance(old, dict):
            return 0.0
        self.pieces = {}
        for index, layout in old.layouts.items():
            at = 0
            for pid, n in layout:
                self.pieces[pid] = old.residual[index].narrow(0, at, n).clone()
                at += n
        return sum(float(p.abs().sum()) for p in self.pieces.values())

    def coefficient(self):
        return min(self.ef_init + (self.step // self.ef_ascend_steps) * self.ef_ascend_range, 1.0)

    def _plan(self):
        median = sharding_median(list(self.counts.values()))
        self.shards, gid = {}, 0
        for index in sorted(self.counts):
            self.shards[index] = []
            for offset, length in shard_offsets(self.counts[index], median, self.interval):
                self.shards[index].append((offset, length, gid))
                gid += 1

    def profiling(self):
        return self.given is None and self.step < self.profile_steps

    @staticmethod
    def hook(state, bucket):
        return state._hook(bucket)

    def _hook(self, bucket):
        buf = bucket.buffer()
        index = bucket.index()
        if self.counts.get(index) != buf.numel():
            self.counts[index] = buf.numel()
            self.layouts[index] = tuple((id(p), p.numel()) for p in bucket.parameters())
            self.residual[index] = torch.zeros_like(buf)
            if self.pieces:  # carried from an earlier state: each parameter's piece
                at = 0
                for pid, n in self.layouts[index]:
                    if pid in self.pieces:
                        self.residual[index].narrow(0, at, n).copy_(self.pieces.pop(pid))
                    at += n
            self.shards = None
        if self.profiling():
            future = self._dense(buf, profile=True)
        else:
            if self.shards is None or index not in self.shards:
                self._plan()
            if self.local and self.interval > 1:
                future = self._local(index, buf, bucket.parameters())
            else:
                future = self._filtered(index, buf)
        future.add_done_callback(lambda done, step=self.step: self._note_failure(done, step))
        if bucket.is_last():
            self._end_step()
        return future

    def _note_failure(self, future, step):
        try:
            future.wait()
        except Exception:  # the step's collective failed (a rank died): carry_from redoes it
            with self.lock:
                self.failed_at = step if self.failed_at is None else min(self.failed_at, step)

    def _dense(self, data, profile=False):
        posted = time.perf_counter()
        request = self.comm.allreduce(data, op="avg", async_op=True)
        if profile:
            self.profiled += 1
            step = self.step
            request.then(lambda result, error: self._record(step, posted))
        return request.get_future()

    def _record(self, step, posted):
        with self.lock:
            self.spans.append((step, posted, time.perf_counter()))

    def _filtered(self, index, buf):
        residual = self.residual[index]
        coef = self.coefficient()
        requests = []
        for offset, length, gid in self.shards[index]:
            g = buf.narrow(0, offset, length)
            r = residual.narrow(0, offset, length)
            if self.interval <= 1 or (gid + self.step) % self.interval == 0:
                g.add_(r * coef)
                request = self.comm.allreduce(g, op="avg", async_op=True)
                # The residual gives up what went along once it has arrived: a step that fails
                # (a rank died) leaves it whole for the step redone after the shrink.
                request.then(lambda result, error, r=r:
                             error is None and _on_device(r.device, lambda: r.sub_(r * coef)))
                requests.append(request)
            else:
                r.add_(g)
                g.zero_()
        return _all_done(requests, buf)

    def _local(self, index, buf, parameters):
        """local=1: the gradient stays this rank's own; a shard on its turn averages the
        parameters it covers (in the bucket's order, the order of its gradients)."""
        flat = None
        requests = []
        for offset, length, gid in self.shards[index]:
            if (gid + self.step) % self.interval:
                continue
            if flat is None:
                flat = torch.cat([p.data.reshape(-1) for p in parameters])
            shard = flat.narrow(0, offset, length)
            request = self.comm.allreduce(shard, op="avg", async_op=True)
            # Written back on Tessera's progress thread before the future completes, so before
            # DDP hands the gradients to the optimizer; autograd is done with these parameters.
            request.then(lambda result, error, shard=shard, offset=offset:
                         error is None and _on_device(shard.device, lambda: _write_back(shard, offset, parameters)))
            requests.append(request)
        return _all_done(requests, buf)

    def synchronize(self):
        """Averages every parameter of the model on every rank (collective): with local=1 the
        ranks' models differ between turns, so this gives one model to evaluate or save."""
        with torch.no_grad():
            for p in self.parameters:
                self.comm.allreduce(p.data, op="avg")

    def _end_step(self):
        self.step += 1
        if self.given is None and self.step == self.profile_steps:
            self._end_profile()

    def _end_profile(self):
        """I from this rank's profile, the largest over the ranks (so every rank agrees)."""
        # Wait for the last step's allreduces: their spans are part of the profile.
        deadline = time.perf_counter() + 60
        while len(self.spans) < self.profiled and time.perf_counter() < deadline:
            time.sleep(0.0005)
        with self.lock:
            spans = list(self.spans)
        ccr = torch.tensor([ccr_from_profile(spans)], dtype=torch.float64)
        self.comm.allreduce(ccr, op="max")
        self.ccr = float(ccr.item())
        interval = max(1, math.ceil(self.ccr))
        self.interval = min(interval, self.max_interval) if self.max_interval else interval
        self.shards = None


def ccr_from_profile(spans):
    """The communication-to-computation ratio of the profiled steps (the median of those after
    the first), from the (step, posted, ended) of each allreduce. A step's period runs from its first allreduce's
    posting to the next step's (the last step has no next and gives no figure, unless it is
    the only one: then its period is its span)."""
    by_step = {}
    for step, start, stop in spans:
        by_step.setdefault(step, []).append((start, stop))
    steps = sorted(by_step)
    ratios = []
    for i, step in enumerate(steps):
        own = sorted(by_step[step])
        if i + 1 < len(steps):
            period = min(start for start, _ in by_step[steps[i + 1]]) - own[0][0]
        elif len(steps) == 1:
            period = max(stop for _, stop in own) - own[0][0]
        else:
            continue
        busy, end = 0.0, None
        for start, stop in own:
            if end is None or start > end:
                busy += stop - start
                end = stop
            elif stop > end:
                busy += stop - end
                end = stop
        tail = max(stop for _, stop in own) - max(start for start, _ in own)
        ratios.append(busy / max(period - tail, 1e-9))
    # The first step is a warm-up (DDP builds its buckets, the first collectives connect): it
    # counts only when it is all there is. The median of the rest resists one slow step.
    if len(ratios) > 1:
        ratios = sorted(ratios[1:])
    return ratios[len(ratios) // 2] if ratios else 0.0


def _write_back(shard, offset, parameters):
    """Copies a flat shard that starts at element `offset` of the bucket into the parameters."""
    at, end = 0, offset + shard.numel()
    for p in parameters:
        n = p.numel()
        lo, hi = max(at, offset), min(at + n, end)
        if lo < hi:
            p.data.view(-1)[lo - at:hi - at].copy_(shard[lo - offset:hi - offset])
        at += n


def _on_device(device, fn):
    """fn() from Tessera's progress thread: for a CUDA bucket, on the side stream its future
    completes on (request.on_side_stream), so DDP's stream sees it done."""
    with on_side_stream(device):
        fn()
    return True


def _all_done(requests, buf):
    """A future completed with `buf` once every request has ended (at once when none); for a
    CUDA bucket a CUDA future of its device, as DDP expects of a hook's."""
    device = buf.device if buf.is_cuda else None
    future = torch.futures.Future(devices=[device]) if device is not None else torch.futures.Future()
    if not requests:
        future.set_result(buf)
        return future
    left = [len(requests)]
    failed = []
    lock = threading.Lock()

    def ended(result, error):
        with lock:
            if error is not None:
                failed.append(error)
            left[0] -= 1
            last = left[0] == 0
        if last:
            complete_future(future, buf, failed[0] if failed else None, device)

    for request in requests:
        request.then(ended)
    return future
