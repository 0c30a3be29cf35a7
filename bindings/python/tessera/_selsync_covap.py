"""SelSync (selective synchronization) and COVAP (coarse-grained filtering overlapped
with backprop) over their C APIs (tessera_selsync.h, tessera_covap.h). Both work on
float32 buckets, declared once by their element counts."""
import ctypes

import numpy as np

from . import _args, _capi
from ._buffers import as_buffer
from ._handle import Handle, holds_handle
from .errors import check

_lib = _capi.lib


def _count_of(i, bucket):
    """Bucket i's element count: an int, or the number of elements of an array (anything with
    a shape: NumPy, PyTorch, CuPy; or a list)."""
    if isinstance(bucket, (int, np.integer)) and not isinstance(bucket, bool):
        return _args.count(f"buckets[{i}]", bucket)
    shape = getattr(bucket, "shape", None)
    if shape is None and isinstance(bucket, (list, tuple)):
        shape = np.shape(bucket)
    if shape is None or callable(shape):
        raise TypeError(f"buckets[{i}] {bucket!r}: neither an element count nor an array (give the array, or "
                        f"its element count: t.numel() for a PyTorch tensor)")
    return _args.count(f"buckets[{i}] (an array of shape {tuple(shape)})", int(np.prod(shape, dtype=np.int64)))


def _counts(buckets):
    """size_t[] of the bucket element counts (ints, or arrays whose sizes are taken)."""
    counts = [_count_of(i, b) for i, b in enumerate(buckets)]
    if not counts:
        raise ValueError("buckets: none given (at least one, each of at least one element)")
    return (ctypes.c_size_t * len(counts))(*counts), counts


def _float32(obj, what, count, cuda=False):
    return as_buffer(obj, what, writable=True, dtype=_capi.FLOAT32, count=count, cuda=cuda)


class _Bucketed(Handle):
    """A handle created over float32 buckets of fixed element counts."""

    def _create(self, create, comm, buckets, params, what):
        array, n = _capi.params(params)
        self._sizes, self._counts = _counts(buckets)
        handle = ctypes.c_void_p()
        with comm._in_call():
            check(create(comm._live(), array, n, self._sizes, len(self._counts), ctypes.byref(handle)))
        self._comm = comm  # must not outlive its communicator
        self._adopt(handle, what)


class SelSync(_Bucketed):
    """sync = SelSync(comm, [w.size, b.size], delta=0.3); every step, after the local update:
    synchronized = sync.step(grad_norm_squared, [w, b]) (collective; when True the buckets
    now hold their average over all ranks, the same on every rank). memory="cuda": the
    buckets are CUDA memory (PyTorch CUDA tensors, __cuda_array_interface__ arrays), copied to
    the host only on synchronized steps, after their producer's stream (PyTorch's current one)."""
    _destroy = _lib.tsr_selsync_destroy

    def __init__(self, comm, buckets, **params):
        self._cuda = str(params.get("memory", "host")) == "cuda"
        self._create(_lib.tsr_selsync_create, comm, buckets, params, "selsync")

    @holds_handle
    def step(self, grad_norm_squared, buckets):
        if len(buckets) != len(self._counts):
            raise ValueError(f"selsync step: {len(buckets)} buckets, declared with {len(self._counts)}")
        bufs = [_float32(b, f"selsync bucket {i}", c, self._cuda)
                for i, (b, c) in enumerate(zip(buckets, self._counts))]
        if self._cuda and any(b.device is None for b in bufs):
            i = next(i for i, b in enumerate(bufs) if b.device is None)
            raise ValueError(f"selsync bucket {i}: host memory, declared with memory=cuda")
        pointers = (ctypes.c_void_p * len(bufs))(*[b.address for b in bufs])
        synced = ctypes.c_int()
        stream = next((b.stream for b in bufs if b.stream), None)
        if not stream:
            check(_lib.tsr_selsync_step(self._live(), float(grad_norm_squared), pointers, ctypes.byref(synced)))
            return bool(synced.value)
        with self._comm._in_call():  # for this thread's call only: other threads may use it meanwhile
            comm = self._comm._live()
            check(_lib.tsr_comm_set_thread_buffers(comm, _capi.MEM_HOST, stream))
            try:
                check(_lib.tsr_selsync_step(self._live(), float(grad_norm_squared), pointers, ctypes.byref(synced)))
            finally:
                _lib.tsr_comm_clear_thread_buffers(comm)
        return bool(synced.value)

    @holds_handle
    def move_to(self, comm):
        """Carries on over `comm` (a shrunk or grown communicator), keeping the smoothed
        gradient norms and counts (tsr_selsync_move). Local: a replacement makes its SelSync
        anew on `comm`. A step that raised left everything as before it: redo it after."""
        with comm._in_call():
            check(_lib.tsr_selsync_move(self._live(), comm._live()))
        self._comm = comm

    @property
    @holds_handle
    def stats(self):
        """(synchronized steps, local steps, payload bytes this rank did not send)."""
        values = [ctypes.c_uint64() for _ in range(3)]
        check(_lib.tsr_selsync_stats(self._live(), *[ctypes.byref(v) for v in values]))
        return tuple(v.value for v in values)


def inject(comm, seed, step, alpha, share):
    """SelSync's data injection (collective, the same seed/step/alpha/share size on every rank):
    the ceil(alpha*N) ranks drawn from (seed, step) send `share` (float32) to all others.
    Returns what this rank received from the drawn ranks (own excluded), in rank order."""
    seed = _args.integer("inject seed", seed, 0, 2**64 - 1)
    step = _args.integer("inject step", step, 0, 2**64 - 1)
    buf = as_buffer(share, "inject share", writable=False, dtype=_capi.FLOAT32)
    received = np.empty(max(1, comm.size * buf.count), dtype=np.float32)
    count = ctypes.c_size_t()
    with comm._in_call():
        check(_lib.tsr_selsync_inject(comm._live(), seed, step, float(alpha), buf.address, buf.count,
                                      received.ctypes.data, received.size, ctypes.byref(count)))
    return received[:count.value]


class Covap(_Bucketed):
    """covap = Covap(comm, [fc2.size, fc1.size], interval="auto") with buckets in the order
    backprop produces them; every step: begin_step(), bucket_ready(i, grad) as each gradient
    is ready (communication starts, overlapping the rest of backprop), finish_step() (the
    selected shards averaged, the others zeroed and kept as residual)."""
    _destroy = _lib.tsr_covap_destroy

    def __init__(self, comm, buckets, **params):
        self._pending = {}  # gradients the C side may write until finish_step
        self._create(_lib.tsr_covap_create, comm, buckets, params, "covap")

    @holds_handle
    def begin_step(self):
        check(_lib.tsr_covap_begin_step(self._live()))

    @holds_handle
    def bucket_ready(self, bucket, grad):
        bucket = _args.integer("covap bucket", bucket, 0, len(self._counts) - 1)
        buf = _float32(grad, f"covap bucket {bucket}", self._counts[bucket])
        check(_lib.tsr_covap_bucket_ready(self._live(), bucket, buf.address))
        self._pending[bucket] = buf

    @holds_handle
    def finish_step(self):
        try:
            check(_lib.tsr_covap_finish_step(self._live()))
        finally:
            self._pending.clear()

    @holds_handle
    def move_to(self, comm):
        """Carries on over `comm` (a shrunk or grown communicator) with its residuals, step,
        interval and CCR (tsr_covap_move). Collective over `comm`: a replacement calls it too,
        on a Covap it just made on `comm` with the same buckets and parameters, and takes the
        others' step and interval. A step that raised left the residuals as before it and is
        not counted: redo it after the move."""
        with comm._in_call():
            check(_lib.tsr_covap_move(self._live(), comm._live()))
        self._comm = comm

    @property
    @holds_handle
    def step(self):
        """Steps finished (on this handle, or taken over from the others by a replacement)."""
        steps = ctypes.c_uint64()
        check(_lib.tsr_covap_steps(self._live(), ctypes.byref(steps)))
        return steps.value

    @holds_handle
    def residual(self, bucket):
        """Bucket `bucket`'s residual (a float32 copy): what skipped steps held back."""
        bucket = _args.integer("covap bucket", bucket, 0, len(self._counts) - 1)
        out = np.empty(self._counts[bucket], dtype=np.float32)
        check(_lib.tsr_covap_residual(self._live(), bucket, out.ctypes.data))
        return out

    @property
    def interval(self):
        """The interval in use (1 while profiling)."""
        return self._info()[0]

    @property
    def ccr(self):
        """The measured communication-to-computation ratio (0 until measured)."""
        return self._info()[1]

    @holds_handle
    def _info(self):
        interval, ccr = ctypes.c_int(), ctypes.c_double()
        check(_lib.tsr_covap_info(self._live(), ctypes.byref(interval), ctypes.byref(ccr)))
        return interval.value, ccr.value
