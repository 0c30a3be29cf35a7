"""Communicator.shrink under tsrun --elastic (4 ranks): the last rank SIGKILLs itself in the
middle of a long allreduce; each other rank sees the failure raised, shrinks, and checks the
survivors' communicator (size, rank in the old order, an exact allreduce). A collective on the
old communicator is still refused.

With --grow, under tsrun --respawn 1: the killed rank's replacement (TSR_JOIN=1) joins with
Communicator.join, the survivors call grow() between "steps" until it is in, and all four check
the grown communicator (members first in order, the replacement last, an exact allreduce)."""
import os
import signal
import sys
import time

import numpy as np

import tessera
from checks import Checks

c = Checks()


def check_grown(grown, members, launch_rank):
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
    check_grown(joined, 3, int(os.environ["TSR_RANK"]))
comm = tessera.Communicator()
rank, size = comm.rank, comm.size
victim = size - 1
# A compressed tensor with something held back, to move to the survivors.
grad = tessera.CompressedTensor(comm, "g", 1000, algorithm="topk", k=10)
grad.allreduce(np.arange(1000, dtype=np.float32) * (rank + 1))
held = grad.residual()
c.expect(np.count_nonzero(held) > 0, "top-k held nothing back")
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
check_grown(grown, size - 1, rank)
