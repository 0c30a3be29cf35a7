"""Completion without polling: run under tsrun (tsrun -np N python3 overlap_check.py).
Request.then(fn) and Request.get_future() are completed by Tessera's progress thread through
tsr_request_on_complete (a torch future by way of a completion thread): the callback runs
while the main thread only sleeps, no polling thread is started, a request dropped after
then() still completes with its buffers kept, the completion pool full of waiting callbacks
queues the next completions (saying so once), and a failed collective reaches the callback and the future as its exception."""
import contextlib
import io
import threading
import time

import numpy as np

import tessera
from checks import Checks
from tessera import _completion

checks = Checks()
expect, raises = checks.expect, checks.raises
comm = tessera.Communicator()
n, me = comm.size, comm.rank
try:
    import torch
except ImportError:
    torch = None
threads_before = threading.active_count()


def sleep_until(condition, seconds=20.0):
    """Sleeps (no Tessera call: nothing here drives the collective) until condition() holds."""
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        time.sleep(0.001)
    return condition()


# then(): the callback gets (result, None) on a thread that is not the main one.
seen = {}
data = np.full(1 << 16, me + 1.0, dtype=np.float32)
request = comm.allreduce(data, async_op=True)
request.then(lambda result, error: seen.update(result=result, error=error, thread=threading.get_ident()))
at_once = "result" in seen  # the collective had ended already (possible, not likely): run here
expect(sleep_until(lambda: "result" in seen), "then: the callback ran while the main thread slept")
expect(seen.get("result") is data and seen.get("error") is None, f"then: {seen.get('error')}")
expect(np.all(data == n * (n + 1) / 2), "then: the allreduce result")
expect(at_once or seen.get("thread") != threading.get_ident(), "then: run by Tessera's thread")
expect(request.wait() is data, "wait() after then()")
later = []
request.then(lambda result, error: later.append(error))  # already ended: at once, here
expect(later == [None], "then on an ended request runs at once")

# Callbacks run in the order given: one given while an earlier one still runs on the progress
# thread runs after it (it ran at once on this thread, and a hook's future could complete before
# the write-back an earlier callback was doing). Rank 1 joins late, so the first is given while
# the collective runs.
order, started = [], threading.Event()


def slow(result, error):
    started.set()
    time.sleep(0.3)
    order.append("first")


if me == 1:
    time.sleep(0.3)
request = comm.allreduce(np.ones(16, np.float32), async_op=True).then(slow)
if started.wait(20):
    request.then(lambda result, error: order.append("second"))
expect(sleep_until(lambda: len(order) == 2), f"the two callbacks ran: {order}")
expect(order == ["first", "second"], f"then: callbacks out of the order given: {order}")
request.wait()

# A request dropped right after then(): it completes, its buffer kept alive meanwhile.
done = []
comm.allreduce(np.full(1 << 15, 2.0, np.float32), async_op=True).then(
    lambda result, error: done.append((float(result[0]), error)))
expect(sleep_until(lambda: done), "a dropped request's callback ran")
expect(done and done[0] == (2.0 * n, None), f"dropped request: {done}")

# Tensors' requests too.
with tessera.CompressedTensor(comm, "w", 4096, algorithm="marsit") as tensor:
    got = []
    tensor.allreduce(np.sin(np.arange(4096, dtype=np.float32) + me), async_op=True).then(
        lambda result, error: got.append(error))
    expect(sleep_until(lambda: got) and got == [None], f"marsit tensor then: {got}")

if torch is not None:
    t = torch.full((1000,), float(me))
    future = comm.allreduce(t, op="avg", async_op=True).get_future()
    expect(isinstance(future, torch.futures.Future), "get_future gives a torch Future")
    # Waited on only once done: a future nothing completes would hang the check instead.
    if expect(sleep_until(future.done), "the future completed while the main thread slept"):
        expect(future.wait() is t and torch.all(t == (n - 1) / 2).item(), "future value")
    # A DDP hook's shape: the future of a tensor's step, chained.
    with tessera.CompressedTensor(comm, "bucket", 1000, algorithm="spardl", density=0.5, op="avg") as bucket:
        g = torch.ones(1000) * (me + 1)
        chained = bucket.allreduce(g, async_op=True).get_future().then(lambda f: f.value() * 2)
        if expect(sleep_until(chained.done), "the chained future completed"):
            out = chained.wait()
            expect(bucket.result == "average" and torch.all(out[out != 0] == n + 1).item(), "chained tensor future")

# A torch future completes on a completion thread (its callbacks may wait on collectives),
# which is no poller: it only runs what the progress thread hands it.
polling = [t.name for t in threading.enumerate() if t.name != "tessera-completion"]
expect(len(polling) == threads_before, f"no Python thread but completion threads was started: {polling}")

# The completion pool with all its threads held by callbacks that wait: the next completions
# queue, the pool says so once on standard error, and every one runs once they are released.
release, ran, said = threading.Event(), [], io.StringIO()
with contextlib.redirect_stderr(said):
    for i in range(_completion.MAX_THREADS + 2):
        _completion.post(lambda i=i: (release.wait(30), ran.append(i)))
release.set()
expect(sleep_until(lambda: len(ran) == _completion.MAX_THREADS + 2), f"queued completions ran: {len(ran)}")
expect(said.getvalue().count("completion threads are busy") == 1, f"the pool's warning: {said.getvalue()!r}")

# Last (it breaks the communicator): mismatched counts fail on every rank, in the callback and
# the future, as the collective's exception.
errors = []
try:
    comm.barrier()  # a rank still finishing it when the mismatch's abort notice comes fails here
except tessera.TesseraError:
    pass  # then the collective below is refused at once, as AbortedError
bad = comm.allreduce(np.zeros(10 + me, np.float32), async_op=True)
bad.then(lambda result, error: errors.append(error))
future = bad.get_future() if torch is not None else None
expect(sleep_until(lambda: errors), "the failing request's callback ran")
if future is not None and expect(sleep_until(future.done), "the failing request's future completed"):
    raises(tessera.TesseraError, "", future.wait, "the future raises the collective's error")
expect(errors and isinstance(errors[0], (tessera.MismatchError, tessera.AbortedError)),
       f"callback error: {errors and type(errors[0]).__name__}: {errors}")
raises(tessera.TesseraError, "", bad.wait, "wait raises it too")
comm.close()
checks.finish(me, n, "python overlap")
