"""Communicator.shrink under tsrun --elastic (4 ranks): the last rank SIGKILLs itself in the
middle of a long allreduce; each other rank sees the failure raised, shrinks, and checks the
survivors' communicator (size, rank in the old order, an exact allreduce). A collective on the
old communicator is still refused.

With --grow, under tsrun --respawn 1: the killed rank's replacement (TSR_JOIN=1) joins with
Communicator.join, the survivors call grow() between "steps" until it is in, and all four check
the grown communicator (members first in order, the replacement last, an exact allreduce).

A top-k tensor, a COVAP and a SelSync handle with state go over too (move_to): residuals, steps
and counts kept; the replacement's fresh COVAP handle takes the members' step."""
import os
import signal
import sys
import time

import numpy as np

import tessera
from checks import Checks

c = Checks()


COVAP_BUCKETS = [600, 400]
COVAP_PARAMS = dict(interval=2, ef_init=0.5, ef_ascend_range=0)


def covap_step(covap, comm):
    """One COVAP step of both buckets (the last first); the ranks' results must agree."""
    grads = [np.full(n, comm.rank + 1.0, np.float32) for n in COVAP_BUCKETS]
    covap.begin_step()
    covap.bucket_ready(1, grads[1])
    covap.bucket_ready(0, grads[0])
    covap.finish_step()
    sums = comm.allgather(np.array([grads[0].sum(), grads[1].sum()], np.float64)).reshape(comm.size, 2)
    c.expect((sums == sums[0]).all(), f"the ranks' COVAP steps differ: {sums.tolist()}")


def check_grown(grown, members, launch_rank, covap):
    covap.move_to(grown)  # the replacement's fresh handle takes the members' step
    steps = grown.allgather(np.array([covap.step], np.int64))
    c.expect(len(set(steps.tolist())) == 1 and steps[0] == 4, f"COVAP steps after the grow: {steps.tolist()}")
    covap_step(covap, grown)
    ranks = grown.allgather(np.array([launch_rank], np.int64))
    want = [r for r in range(members + 1) if r != members] + [members]
    c.expect(ranks.tolist() == want, f"the grown communicator's first-launch ranks: {ranks.tolist()}")
    y = grown.allreduce(np.full(1000, grown.rank + 1, np.int64))
    c.expect(int(y[-1]) == grown.size * (grown.size + 1) // 2, f"allreduce on the grown communicator: {y[-1]}")
    c.expect(grown.grow() is None, "a second grow with nobody waiting")
    c.finish(grown.rank, grown.size, "python grow")


if os.environ.get("TSR_JOIN") == "1":  # the replacement of the killed rank
    joined = tessera.Communicator.join()
    c.expect((joined.rank, joined.size) == (3, 4), f"joined as {joined.rank} of {joined.size}")
    check_grown(joined, 3, int(os.environ["TSR_RANK"]), tessera.Covap(joined, COVAP_BUCKETS, **COVAP_PARAMS))
comm = tessera.Communicator()
rank, size = comm.rank, comm.size
victim = size - 1
# A compressed tensor with something held back, to move to the survivors.
grad = tessera.CompressedTensor(comm, "g", 1000, algorithm="topk", k=10)
grad.allreduce(np.arange(1000, dtype=np.float32) * (rank + 1))
held = grad.residual()
c.expect(np.count_nonzero(held) > 0, "top-k held nothing back")
covap = tessera.Covap(comm, COVAP_BUCKETS, **COVAP_PARAMS)
for _ in range(3):
    covap_step(covap, comm)
covap_held = [covap.residual(b) for b in range(2)]
c.expect(all(np.count_nonzero(r) for r in covap_held), "COVAP held nothing back")
selsync = tessera.SelSync(comm, [100], delta=0.5, ewma_window=3)
for norm in (10.0, 11.0):
    selsync.step(norm, [np.full(100, rank, np.float32)])
x = np.ones(1 << 22, np.float32)
error = None
for i in range(100):
    request = comm.allreduce(x, async_op=True)
    if rank == victim and i == 2:
        time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        request.wait()
    except tessera.TesseraError as e:
        error = e
        break
c.expect(error is not None, "the killed rank's failure was not raised")
survivors = comm.shrink()
c.expect((survivors.rank, survivors.size) == (rank, size - 1), f"after the shrink: {survivors.rank} of {survivors.size}")
grad.move_to(survivors)
c.expect(np.array_equal(grad.residual(), held), "the moved tensor's residual differs")
out = grad.allreduce(np.ones(1000, np.float32))
c.expect(np.array_equal(survivors.allgather(out).reshape(size - 1, -1), np.tile(out, (size - 1, 1))),
         "the survivors' steps of the moved tensor differ")
covap.move_to(survivors)
c.expect(covap.step == 3 and all(np.array_equal(covap.residual(b), covap_held[b]) for b in range(2)),
         "the moved COVAP handle lost its step or a residual")
covap_step(covap, survivors)
selsync.move_to(survivors)
c.expect(selsync.stats[:2] == (0, 2), f"the moved SelSync's counts: {selsync.stats}")
model = np.full(100, rank, np.float32)
c.expect(selsync.step(1e6, [model]), "a jump in the norm after the move did not synchronize")
y = survivors.allreduce(np.full(1000, rank + 1, np.int64))
c.expect(int(y[0]) == sum(r + 1 for r in range(size - 1)), f"allreduce on the survivors: {y[0]}")
# Still unusable, by its failure or by the shrink's revoke, whichever came first.
c.raises(tessera.TesseraError, "TSR_ERR_", lambda: comm.allreduce(np.ones(4, np.float32)),
         "a collective on the shrunk communicator")
comm.close()
if "--grow" not in sys.argv:
    c.finish(survivors.rank, survivors.size, "python shrink")
grown, deadline = None, time.monotonic() + 60
while grown is None and time.monotonic() < deadline:
    grown = survivors.grow()  # None until the replacement has asked
    if grown is None:
        time.sleep(0.02)
c.expect(grown is not None, "no replacement joined within 60 s")
if grown is None:
    c.finish(survivors.rank, survivors.size, "python grow")
c.expect((grown.rank, grown.size) == (survivors.rank, size), f"after the grow: {grown.rank} of {grown.size}")
check_grown(grown, size - 1, rank, covap)
