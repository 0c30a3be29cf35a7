"""Use after close: run under tsrun (tsrun -np N python3 lifetime_check.py). After comm.close()
every call on the communicator or on anything made from it (tensors of every algorithm,
SelSync, COVAP, requests) raises AbortedError saying so, instead of crashing the rank (a
tensor step after close used to die with SIGSEGV); a request that had finished keeps its
result, one pending at close fails (each wait raising it), and one dropped after close goes
quietly. Before that: threads waiting on one request together each get its result (two used to
crash the rank: one freed the handle another was waiting on), a request keeps its
communicator alive, a communicator dropped with a then() pending is closed once it ran, and
close() on one thread while another calls the communicator waits for that call."""
import gc
import os
import threading

import numpy as np

import tessera
from checks import Checks

checks = Checks()
expect, raises = checks.expect, checks.raises
comm = tessera.Communicator()
n, me = comm.size, comm.rank


def request_of_a_dropped_communicator():
    other = tessera.Communicator()
    return other.allreduce(np.ones(1 << 16, np.float32), async_op=True)


orphan = request_of_a_dropped_communicator()
gc.collect()
expect(np.all(orphan.wait() == n), "a request whose communicator was dropped still ends with its result")
del orphan
gc.collect()

# Three threads wait on each request and one polls it: each sees the sum (the rank crashed).
for _ in range(30):
    request = comm.allreduce(np.ones(1024, np.float32), out=np.empty(1024, np.float32), async_op=True)
    seen = []
    waiters = [threading.Thread(target=lambda: seen.append(float(request.wait()[0]))) for _ in range(3)]
    for thread in waiters:
        thread.start()
    while not request.test():
        pass
    for thread in waiters:
        thread.join()
    expect(seen == [float(n)] * 3, f"three threads waiting on one request: {seen}")


# A communicator dropped with a then() pending: the request held the last reference, and the
# communicator was closed on Tessera's progress thread when the callback had run (the rank
# aborted: "Resource deadlock avoided"; then the destroy was refused there, leaving it open).
def threads():
    return len(os.listdir("/proc/self/task"))


tessera._completion.post(lambda: None)  # a completion thread, idle from now on
tessera._completion.drain()
before = threads()
ran = threading.Event()


def a_dropped_communicator_with_a_callback():
    part = comm.split(0)
    part.allreduce(np.ones(1 << 16, np.float32), async_op=True).then(lambda result, error: ran.set())


a_dropped_communicator_with_a_callback()
expect(ran.wait(30), "the callback of a dropped communicator's request ran")
for _ in range(300):  # its threads end once a completion thread has closed it
    if tessera._completion.drain() and threads() <= before:
        break
    threading.Event().wait(0.01)
expect(threads() <= before, f"the dropped communicator was closed: {before} threads before, {threads()} now")
comm.barrier()



def closed_under_a_calling_thread(trials=12):
    """close() on one thread while another calls the same communicator in a loop: the call in
    progress ends (with its result, or PeerFailedError when the peer closed first), the next
    raises ClosedError, and the C handle is never freed under a call (that crashed the rank with
    SIGSEGV in most runs of 30 closes; calls that slipped past close() raised AbortedError)."""
    seen = {}
    for trial in range(trials):
        part = comm.split(0)
        calls = threading.Semaphore(0)

        def loop():
            data = np.ones(16, np.float32)
            try:
                while True:
                    part.allreduce(data)
                    calls.release()
            except tessera.TesseraError as e:
                seen[type(e).__name__] = seen.get(type(e).__name__, 0) + 1

        worker = threading.Thread(target=loop)
        worker.start()
        for _ in range(1 + trial % 4):  # a few calls in, at a different point each trial
            calls.acquire(timeout=30)
        part.close()
        worker.join(60)
        expect(not worker.is_alive(), f"trial {trial}: the calling thread ended after close")
        comm.barrier()
    expect(sum(seen.values()) == trials and set(seen) <= {"ClosedError", "PeerFailedError"},
           f"every calling thread ended with ClosedError or PeerFailedError: {seen}")


closed_under_a_calling_thread()

count = 64
grad = np.ones(count, np.float32)
tensors = [tessera.CompressedTensor(comm, "dense.w", count),
           tessera.CompressedTensor(comm, "marsit.w", count, algorithm="marsit"),
           tessera.CompressedTensor(comm, "topk.w", count, algorithm="compressed", compressor="topk", k=4),
           tessera.CompressedTensor(comm, "spardl.w", count, algorithm="spardl", density=0.5)]
for t in tensors:
    t.allreduce(grad.copy())
sync = tessera.SelSync(comm, [count], delta=0)
covap = tessera.Covap(comm, [count], interval=1)
finished = comm.allreduce(np.full(4, 1.0, np.float32), async_op=True)
finished.wait()
comm.barrier()
# Rank 0 alone posts these barriers: they are pending when it closes (a peer that closes first
# may fail them as PeerFailedError instead; either way they fail, and nothing crashes).
pending = comm.barrier(async_op=True) if me == 0 else None
dropped = comm.barrier(async_op=True) if me == 0 else None
comm.close()
comm.close()  # twice is harmless

for t in tensors:
    raises(tessera.AbortedError, "destroyed", lambda: t.allreduce(grad.copy()), f"{t.name} allreduce")
    raises(tessera.AbortedError, t.name, lambda: t.allreduce(grad.copy(), async_op=True), f"{t.name} async")
    raises(tessera.AbortedError, "destroyed", lambda: t.residual(), f"{t.name} residual")
    raises(tessera.AbortedError, "destroyed", lambda: t.set_residual(np.zeros(count, np.float32)),
           f"{t.name} set_residual")
    raises(tessera.AbortedError, "destroyed", lambda: t.steps, f"{t.name} steps")
    raises(tessera.AbortedError, "destroyed", lambda: t.result, f"{t.name} result")
raises(tessera.AbortedError, "destroyed", lambda: sync.step(1.0, [grad.copy()]), "selsync step")
raises(tessera.AbortedError, "destroyed", lambda: sync.stats, "selsync stats")
raises(tessera.AbortedError, "destroyed", covap.begin_step, "covap begin_step")
raises(tessera.AbortedError, "destroyed", lambda: covap.bucket_ready(0, grad.copy()), "covap bucket_ready")
raises(tessera.AbortedError, "destroyed", covap.finish_step, "covap finish_step")
raises(tessera.AbortedError, "destroyed", lambda: covap.interval, "covap interval")
raises(tessera.AbortedError, "closed", lambda: comm.allreduce(grad), "the communicator itself")
raises(tessera.AbortedError, "closed", lambda: tessera.CompressedTensor(comm, "late", 4), "a tensor after close")
raises(tessera.AbortedError, "closed", lambda: tessera.inject(comm, 1, 0, 1.0, grad), "inject after close")

expect(finished.wait()[0] == n, "a request that had finished keeps its result")
if me == 0:
    raises(tessera.TesseraError, "", pending.wait, "a request pending at close fails")
    raises(tessera.TesseraError, "", pending.wait, "its second wait raises the same")
    raises(tessera.TesseraError, "", pending.test, "and so does test")
    errors = []
    pending.then(lambda result, error: errors.append(error))  # ended: runs at once
    expect(errors and isinstance(errors[0], tessera.TesseraError), f"then after close: {errors}")
del dropped  # waited on and freed after close: no crash
gc.collect()
for t in tensors:
    t.close()
sync.close()
covap.close()
checks.finish(me, n, "python lifetime")
