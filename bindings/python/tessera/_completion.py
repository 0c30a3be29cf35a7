"""Threads that complete futures off Tessera's progress thread. A torch future runs its then()
callbacks on the thread that completes it, and a callback may wait on another collective
(PowerSGD's hook does): on the progress thread, the only thread that could finish it, that
wait would never end, and the heartbeats and timeouts the thread keeps would stop. A pool that
grows while every thread is busy (up to MAX_THREADS), so a callback that waits leaves the next
completion a thread of its own."""
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


def post(task):
    """Runs task() on a completion thread, soon; an exception it raises is printed."""
    global _threads
    with _lock:
        _tasks.append(task)
        start = _idle < len(_tasks) and _threads < MAX_THREADS
        if start:
            _threads += 1
        else:
            _ready.notify()
    if start:
        threading.Thread(target=_serve, name="tessera-completion", daemon=True).start()


def _serve():
    global _idle
    while True:
        with _lock:
            _idle += 1
            while not _tasks:
                _ready.wait()
            _idle -= 1
            task = _tasks.popleft()
        try:
            task()
        except BaseException:  # noqa: BLE001 - a completion's failure must not end the thread
            print("tessera: a completion failed:", file=sys.stderr)
            traceback.print_exc()
