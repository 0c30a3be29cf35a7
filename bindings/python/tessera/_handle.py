"""The life cycle every C handle of the package shares: closed once, by close(), `with`, or
garbage collection; using it after close() raises ClosedError (an AbortedError and a
ValueError) naming it. Handles made from a communicator outlive it safely: after its close()
their calls raise AbortedError from the C side."""
from .errors import ClosedError, check


class Handle:
    _destroy = None  # the C function that releases the handle (set by each subclass)

    def _adopt(self, handle, what):
        self._handle = handle
        self._what = what

    def _live(self):
        if getattr(self, "_handle", None) is None:
            raise ClosedError(f"{getattr(self, '_what', 'handle')} is closed")
        return self._handle

    def close(self):
        if getattr(self, "_handle", None) is not None:
            handle, self._handle = self._handle, None
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
