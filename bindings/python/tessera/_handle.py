"""The life cycle every C handle of the package shares: closed once, by close(), `with`, or
garbage collection; using it after close() raises ClosedError (an AbortedError and a
ValueError) naming it. Handles made from a communicator outlive it safely: after its close()
their calls raise AbortedError from the C side.

Threads: a method that passes the handle to the C library runs inside `_in_call` (the
`holds_handle` decorator). close() on another thread waits for those calls to return before it
releases the handle, as tsr_comm_destroy waits for calls in progress, since a C call that reads
a handle freed under it crashes the process; calls that start once close() has begun raise
ClosedError."""
import contextlib
import functools
import threading

from .errors import ClosedError, check


def holds_handle(method):
    """Marks a method that calls the C library with self's handle (see the module's doc)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        me = self._enter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._leave(me)
    return call


class Handle:
    _destroy = None  # the C function that releases the handle (set by each subclass)

    def _adopt(self, handle, what):
        self._users = threading.Condition(threading.Lock())
        self._calls = {}  # thread id -> this handle's calls in progress on it
        self._closing = False
        self._handle = handle
        self._what = what

    def _closed(self):
        return ClosedError(f"{getattr(self, '_what', 'handle')} is closed")

    def _live(self):
        handle = getattr(self, "_handle", None)
        if handle is None or (getattr(self, "_closing", False) and threading.get_ident() not in self._calls):
            raise self._closed()
        return handle

    # No lock on the way in or out: only thread `me` writes _calls[me] (each dict operation is
    # atomic under the GIL), it looks at _closing after counting itself in, and _release() looks
    # at the counts after setting _closing, so one of the two always sees the other.
    def _enter(self):
        """A call on this thread begins (see the module's doc); returns the thread's id."""
        me = threading.get_ident()
        calls = getattr(self, "_calls", None)
        if calls is None:  # never adopted
            raise self._closed()
        outer = me not in calls
        calls[me] = calls.get(me, 0) + 1
        if self._handle is None or (self._closing and outer):
            self._leave(me)
            raise self._closed()
        return me

    def _leave(self, me):
        calls = self._calls
        left = calls[me] - 1
        if left:
            calls[me] = left
            return
        del calls[me]
        if self._closing:
            with self._users:
                self._users.notify_all()

    @contextlib.contextmanager
    def _in_call(self):
        me = self._enter()
        try:
            yield
        finally:
            self._leave(me)

    def _release(self):
        """Ends new calls, waits for the other threads' calls in progress, and hands back the
        handle to destroy (None when closed already or another thread is closing it)."""
        users = getattr(self, "_users", None)
        if users is None or getattr(self, "_handle", None) is None:
            return None
        me = threading.get_ident()
        with users:
            if self._handle is None or self._closing:
                return None
            self._closing = True
            users.wait_for(lambda: all(thread == me for thread in list(self._calls)))
            handle, self._handle = self._handle, None
            return handle

    def close(self):
        handle = self._release()
        if handle is not None:
            check(type(self)._destroy(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to report to
            pass
