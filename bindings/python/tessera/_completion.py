"""Threads that complete futures off Tessera's progress thread. A torch future runs its then()
callbacks on the thread that completes it, and a callback may wait on another collective
(PowerSGD's hook does): on the progress thread, the only thread that could finish it, that
wait would never end, and the heartbeats and timeouts the thread keeps would stop. A pool that
grows while every thread is busy (up to MAX_THREADS), so a callback that waits leaves the next
completion a thread of its own."""
import atexit
import collections
import sys
import threading
import traceback

MAX_THREADS = 64

_lock = threading.Lock()
_ready = threading.Condition(_lock)
_tasks = collections.deque()
_threads = 0
_idle = 0  # threads waiting for a task (a woken one counts until it has taken one)
_running = 0  # tasks begun and not ended
_drained = threading.Condition(_lock)
_warned = False  # the pool has said once that every thread is busy


def post(task):
    """Runs task() on a completion thread, soon; an exception it raises is printed."""
    global _threads, _warned
    with _lock:
        _tasks.append(task)
        start = _idle < len(_tasks) and _threads < MAX_THREADS
        full = not start and _idle < len(_tasks) and not _warned
        _warned = _warned or full
        if start:
            _threads += 1
        else:
            _ready.notify()
    if full:
        # Said once: completions queue from now on, and one whose callback waits for a later
        # collective's completion would wait for good.
        print(f"tessera: all {MAX_THREADS} completion threads are busy (then() callbacks that wait on "
              "other collectives?); further completions wait for one of them to finish", file=sys.stderr)
    if start:
        try:
            threading.Thread(target=_serve, name="tessera-completion", daemon=True).start()
        except RuntimeError:  # no new thread (interpreter shutdown on 3.12+, a thread limit)
            with _lock:
                _threads -= 1
                mine = _tasks.pop() if _tasks and _tasks[-1] is task else None
            if mine is not None:
                mine()  # here, rather than never


def drain(seconds=30.0):
    """Waits (up to `seconds`) until no completion is queued or running; False if some still
    are. At exit (registered below, so after the communicators close, which may fail pending
    requests), while the interpreter can still run them."""
    with _lock:
        return _drained.wait_for(lambda: not _tasks and not _running, seconds)


atexit.register(drain)


def _serve():
    global _idle, _running
    while True:
        with _lock:
            _idle += 1
            while not _tasks:
                _ready.wait()
            _idle -= 1
            task = _tasks.popleft()
            _running += 1
        try:
            task()
        except BaseException:  # noqa: BLE001 - a completion's failure must not end the thread
            print("tessera: a completion failed:", file=sys.stderr)
            traceback.print_exc()
        task = None
        with _lock:
            _running -= 1
            if not _running and not _tasks:
                _drained.notify_all()
