"""Communicator.shrink under tsrun --elastic (4 ranks): the last rank SIGKILLs itself in the
middle of a long allreduce; each other rank sees the failure raised, shrinks, and checks the
survivors' communicator (size, rank in the old order, an exact allreduce). A collective on the
old communicator is still refused."""
import os
import signal
import time

import numpy as np

import tessera
from checks import Checks

c = Checks()
comm = tessera.Communicator()
rank, size = comm.rank, comm.size
victim = size - 1
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
y = survivors.allreduce(np.full(1000, rank + 1, np.int64))
c.expect(int(y[0]) == sum(r + 1 for r in range(size - 1)), f"allreduce on the survivors: {y[0]}")
# Still unusable, by its failure or by the shrink's revoke, whichever came first.
c.raises(tessera.TesseraError, "TSR_ERR_", lambda: comm.allreduce(np.ones(4, np.float32)),
         "a collective on the shrunk communicator")
comm.close()
c.finish(survivors.rank, survivors.size, "python shrink")
