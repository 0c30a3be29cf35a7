"""A collective in flight, and the ways to learn that it ended: wait() and test() from the
caller, or then(fn) / get_future(), which Tessera's progress thread completes through
tsr_request_on_complete (a future by way of a completion thread), so overlapping work (a DDP
communication hook) needs no Python thread of its own polling."""
import itertools
import sys
import threading
import traceback

from . import _capi, _completion
from .errors import check, error_of

_lib = _capi.lib

# Requests whose completion callback has not run yet, by token: the registry keeps each alive
# (and its buffers, which C may still write) however the caller drops it.
_waiting = {}
_tokens = itertools.count(1)
_PENDING = object()  # the outcome before the collective has ended


def _completed(token, status):
    """The one C callback of the package (never freed: C may call it until the last request
    ends); runs on Tessera's progress thread, or on a thread driving it."""
    request = _waiting.pop(token, None)
    if request is not None:
        request._ended(None if status == _capi.OK else error_of(status))
        if request._orphaned:  # dropped while running (__del__): its handle goes now
            handle, request._handle = request._handle, None
            _lib.tsr_request_free(handle)
        # This may be the last reference to the request, and through it to its communicator (a
        # dropped one is closed when collected): let it go on a completion thread, since
        # tsr_comm_destroy is refused on this one (it would wait for itself).
        held = [request]
        del request
        _completion.post(held.clear)


_COMPLETED = _capi.ON_COMPLETE(_completed)


def _cuda_device(result):
    """The CUDA device of a result that is a PyTorch CUDA tensor (its future is that device's),
    else None."""
    device = getattr(result, "device", None)
    return device if getattr(device, "type", None) == "cuda" else None


_side_streams = {}  # CUDA device -> a stream the futures complete on


def on_side_stream(device):
    """A context for PyTorch work on `device` from a thread of Tessera's (a then() callback on
    its progress thread): that device current, and its side stream, the one futures complete
    on, so work queued here comes before the completion their waiters' streams wait for.
    Nothing for the CPU (device None, or not a CUDA device)."""
    if getattr(device, "type", None) != "cuda":
        import contextlib
        return contextlib.nullcontext()
    import torch
    stream = _side_streams.get(device)
    if stream is None:
        stream = _side_streams.setdefault(device, torch.cuda.Stream(device))
    return torch.cuda.stream(stream)  # sets the stream's device too


def _complete_on_device(future, result, device):
    """Completes a future with its result; a CUDA future on a side stream of the device, where
    torch records the events its waiters' streams wait on (the result is on the device already:
    the request ends once Tessera's copy back has finished), rather than on the default stream,
    which would order them after whatever has been queued there since."""
    with on_side_stream(device):
        future.set_result(result)


def complete_future(future, result, error, device=None):
    """Completes a torch future with the result, or with the error (not None), on a completion
    thread (_completion.py): never on Tessera's progress thread, where its then() callbacks
    would run."""
    if error is not None:
        _completion.post(lambda: future.set_exception(error))
    else:
        _completion.post(lambda: _complete_on_device(future, result, device))


class Request:
    """A collective in flight. Its buffers stay referenced until it has finished; a Request
    dropped unfinished waits for its collective first (the C side would write into freed
    memory otherwise), unless then() or get_future() was called: then the package keeps it
    until the collective ends."""

    def __init__(self, handle, result, keep):
        self._handle = handle
        self._result = result
        self._keep = keep
        self._lock = threading.Lock()
        self._error = _PENDING   # None once it ended well, else its TesseraError
        self._callbacks = []     # then()'s functions, until they have run
        self._running = False    # _ended is running them (one given meanwhile runs after them)
        self._registered = False
        self._future = None
        self._orphaned = False
        self._users = 0            # threads in a C call on the handle (wait/test)
        self._outcome = _PENDING   # None or the error, once a wait/test has seen the end
        self._noticed = False      # _finish has run once

    def test(self):
        """True when finished (raising the collective's error, if any); False while running.
        Safe from several threads at once, as wait() is."""
        handle = self._use()
        if handle is None:
            return self._ended_already()
        status = _capi.IN_PROGRESS
        try:
            status = _lib.tsr_test(handle)
        finally:
            self._release(status)
        if status == _capi.IN_PROGRESS:
            return False
        self._finish(status)
        return True

    def wait(self):
        """Blocks until finished; returns the result (raising the collective's error). Several
        threads may wait on one request: each gets the result, or the same error."""
        handle = self._use()
        if handle is None:
            self._ended_already()
            return self._result
        status = _capi.IN_PROGRESS
        try:
            status = _lib.tsr_wait(handle)
            if status != _capi.OK:
                refusal = error_of(status)
                status = _lib.tsr_test(handle)
                if status == _capi.IN_PROGRESS:
                    raise refusal  # the wait was refused (in a then() callback): still running
        finally:
            self._release(status)
        self._finish(status)
        return self._result

    def _use(self):
        """The C handle, counted as in use (_release frees it once the last user is done and
        the collective has ended), or None once it has been freed."""
        with self._lock:
            if self._handle is None:
                return None
            self._users += 1
            return self._handle

    def _release(self, status):
        with self._lock:
            self._users -= 1
            if status != _capi.IN_PROGRESS and self._outcome is _PENDING:
                self._outcome = None if status == _capi.OK else error_of(status)
            if self._users or self._outcome is _PENDING or self._handle is None:
                return
            handle, self._handle = self._handle, None
        _lib.tsr_request_free(handle)

    def _ended_already(self):
        """A request whose handle is gone: True, raising the error it ended with, if any."""
        with self._lock:
            outcome = self._outcome
        if outcome is not _PENDING and outcome is not None:
            raise outcome
        return True

    @property
    def result(self):
        return self._result

    def then(self, fn):
        """Calls fn(result, error) once the collective has ended: error is None on success, else
        the TesseraError it failed with. It runs on Tessera's progress thread (at once, on this
        thread, if the collective has already ended), so it must be quick and must not wait on
        Tessera (a wait() there on a collective still running raises, saying so; get_future()'s
        callbacks may wait); an exception it raises is printed, not propagated. Callbacks run in
        the order given: one given while earlier ones still run runs after them, on their
        thread. Returns self."""
        with self._lock:
            ended = self._error is not _PENDING
            now = ended and not self._running
            register = False
            if not now:
                self._callbacks.append(fn)
                if not ended:
                    register, self._registered = not self._registered, True
        if now:
            _call(fn, self._result, self._error)
        elif register:
            handle = self._use()
            if handle is None:  # another thread's wait saw it end meanwhile
                self._ended(self._outcome)
                return self
            try:
                token = next(_tokens)
                _waiting[token] = self
                status = _lib.tsr_request_on_complete(handle, _COMPLETED, token)
                if status != _capi.OK:
                    _waiting.pop(token, None)
                    check(status)
            finally:
                self._release(_capi.IN_PROGRESS)
        return self

    def get_future(self):
        """A torch.futures.Future completed with the result, or with the collective's
        TesseraError (fut.wait() raises it): what a DDP communication hook returns. Completed
        on a completion thread, not the progress thread, so its then() callbacks may wait on
        other collectives. The same future on every call; needs PyTorch."""
        try:
            import torch.futures
        except ImportError as e:
            raise ImportError("Request.get_future needs PyTorch; use then(fn) without it") from e
        device = _cuda_device(self._result)
        with self._lock:
            future, create = self._future, self._future is None
            if create:
                future = self._future = torch.futures.Future(devices=[device]) if device else torch.futures.Future()
        if create:
            self.then(lambda result, error: complete_future(future, result, error, device))
        return future

    def _ended(self, error):
        """The collective ended (from the C callback, or seen by wait/test)."""
        with self._lock:
            if self._error is not _PENDING:
                return
            self._error = error
            self._running = True
        # Until none is left: then() queues one given meanwhile here, so a future that a later
        # callback completes (a hook's) is never done before an earlier one's write-back.
        while True:
            with self._lock:
                callbacks, self._callbacks = self._callbacks, []
                if not callbacks:
                    self._running = False
                    return
            for fn in callbacks:
                _call(fn, self._result, error)

    def _finish(self, status):
        """The collective ended with status, seen by this thread (the handle is freed by
        _release, once no other thread is in a call on it)."""
        error = None if status == _capi.OK else error_of(status)
        with self._lock:
            first, self._noticed = not self._noticed, True
        if first and not self._registered:  # a registered one hears it from the C callback
            self._keep = None
            self._ended(error)
        if error is not None:
            raise error

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            try:
                # (A registered request is held by _waiting until it has ended.)
                if _lib.tsr_wait(self._handle) != _capi.OK and _lib.tsr_test(self._handle) == _capi.IN_PROGRESS:
                    # Dropped in a then() callback, where the wait is refused: the collective
                    # still writes into the buffers, kept (with this request) until it ends.
                    self._orphaned = True
                    self.then(lambda result, error: None)
                    return
                _lib.tsr_request_free(self._handle)
                self._handle = None
            except Exception:  # interpreter shutdown: the library may be gone already
                pass


def _call(fn, result, error):
    try:
        fn(result, error)
    except Exception:  # noqa: BLE001 - nothing above the progress thread could catch it
        print("tessera: a Request.then callback raised:", file=sys.stderr)
        traceback.print_exc()
