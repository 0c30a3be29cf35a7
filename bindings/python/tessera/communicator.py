"""The communicator: dense collectives on NumPy arrays and PyTorch tensors (CPU, or CUDA and
other __cuda_array_interface__ arrays, staged by the C library through pinned host memory),
blocking or not (async_op=True returns a Request), over the C API."""
import atexit
import ctypes
import weakref

from . import _capi
from ._args import c_int, integer
from ._buffers import as_buffer, current_device, disjoint, empty_like, same_type
from ._handle import Handle, holds_handle
from .errors import check
from .request import Request

_lib = _capi.lib
# Open communicators, closed at exit while the interpreter can still run the completion
# callbacks their shutdown triggers (a progress thread calling into a finalized interpreter
# would crash the process).
_open = weakref.WeakSet()
atexit.register(lambda: [c.close() for c in list(_open)])


def _op_code(op):
    code = _capi.OPS.get(op)
    if code is None:
        raise ValueError(f"op {op!r}: accepted values are {'|'.join(_capi.OPS)}")
    return code


class Communicator(Handle):
    """All ranks of the job. Under tsrun (or Open MPI, Slurm, torchrun) it finds its peers from
    the environment; keyword settings override TSR_* variables (timeout_ms=5000, algo="ring")
    or give the launch by hand (rank, size, peers="host:port,...", secret)."""

    _destroy = _lib.tsr_comm_destroy

    def __init__(self, **settings):
        array, count = _capi.params(settings)
        handle = ctypes.c_void_p()
        check(_lib.tsr_comm_init_config(ctypes.byref(handle), array, count))
        _capi.forget_job_secret()
        self._own(handle)

    def _own(self, handle):
        self._adopt(handle, "the communicator")
        _open.add(self)
        self.rank = self._query(_lib.tsr_comm_rank)
        self.size = self._query(_lib.tsr_comm_size)
        self.local_rank = self._query(_lib.tsr_comm_local_rank)

    @holds_handle
    def split(self, color, key=0):
        """Collective (every rank calls it, blocking), as MPI_Comm_split: the ranks that pass the
        same color get a Communicator of their own, ranked by key (ties: by rank here); color
        None gives None. Nothing outside the job is asked (tsr_comm_split)."""
        handle = ctypes.c_void_p()
        code = -1 if color is None else c_int("split: color", color)
        if code < 0:
            if color is not None:
                raise ValueError(f"split: color {color} (a color is >= 0, or None for no new communicator)")
        check(_lib.tsr_comm_split(self._live(), code, c_int("split: key", key), ctypes.byref(handle)))
        if not handle.value:
            return None
        part = Communicator.__new__(Communicator)
        part._own(handle)
        return part

    @classmethod
    def adopt(cls, handle, owner=None):
        """A Communicator over a tsr_comm_t that something else owns (its address, an int), e.g.
        the tessera torch.distributed backend's: close() then only lets go of it; the owner
        (kept referenced here) destroys it."""
        self = cls.__new__(cls)
        self._adopt(ctypes.c_void_p(handle), "the communicator")
        self._owner = owner
        self.rank = self._query(_lib.tsr_comm_rank)
        self.size = self._query(_lib.tsr_comm_size)
        self.local_rank = self._query(_lib.tsr_comm_local_rank)
        return self

    def close(self):
        if getattr(self, "_owner", None) is not None:
            self._release()  # borrowed: the owner destroys it
            return
        super().close()

    @holds_handle
    def estimate(self, collective, nbytes):
        """The cost model's seconds for the fastest dense "allreduce" of nbytes, or "allgather"
        of nbytes from each rank, on this job's links (measured at creation)."""
        seconds = ctypes.c_double()
        nbytes = integer("estimate: nbytes", nbytes, 0, 2**63 - 1)
        check(_lib.tsr_comm_estimate(self._live(), collective.encode(), nbytes, ctypes.byref(seconds)))
        return seconds.value

    @holds_handle
    def _query(self, fn, ctype=ctypes.c_int):
        value = ctype()
        check(fn(self._live(), ctypes.byref(value)))
        return value.value

    @property
    def bytes_sent(self):
        """Bytes this rank has sent its peers so far (payload and headers; on one host, also
        what it wrote into the shared-memory segment for them)."""
        return self._query(_lib.tsr_comm_bytes_sent, ctypes.c_uint64)

    def _run(self, post, result, keep, async_op):
        if any(b.device is not None for b in keep):  # CUDA memory: staged by the C library
            return self._run_on_device(post, result, keep, async_op)
        if not async_op:  # a NULL request: the C call blocks (two calls and a handle fewer)
            check(post(None))
            return result
        handle = ctypes.c_void_p()
        check(post(ctypes.byref(handle)))
        return Request(handle, result, (self, *keep))  # the communicator lives while it runs

    @holds_handle
    def _run_on_device(self, post, result, keep, async_op):
        """A dense collective on CUDA buffers: device memory for this thread's one post
        (tsr_comm_set_thread_buffers, read when the call is posted; other threads, the torch
        backend's included, keep their own setting meanwhile). The input is read once the
        stream that produced it has reached the call (PyTorch's current stream, or the array's
        own __cuda_array_interface__ stream). Without a CUDA device the C library refuses it
        (NotSupportedError), before anything is sent."""
        stream = next((b.stream for b in keep if b.device is not None and b.stream), None)
        # The buffers' device current: the staging opens there, and the event is recorded there.
        with current_device(next(b.device for b in keep if b.device is not None)):
            check(_lib.tsr_comm_set_thread_buffers(self._live(), _capi.MEM_CUDA, stream))
            try:
                handle = ctypes.c_void_p()
                check(post(ctypes.byref(handle) if async_op else None))
            finally:
                _lib.tsr_comm_clear_thread_buffers(self._live())
        return Request(handle, result, (self, *keep)) if async_op else result

    @holds_handle
    def allreduce(self, data, out=None, op="sum", async_op=False):
        """Reduces data over the ranks (sum|avg|min|max|prod) into out, or in place."""
        send = as_buffer(data, "allreduce data", writable=out is None, cuda=True)
        recv = send if out is None else as_buffer(out, "allreduce out", writable=True, cuda=True)
        if out is not None:
            same_type(send, recv, "allreduce out")
            if recv.count != send.count:
                raise ValueError(f"allreduce out: {recv.count} elements for {send.count} in data")
            disjoint(send, recv, "allreduce out", in_place=recv.address == send.address)
        code = _op_code(op)
        return self._run(lambda r: _lib.tsr_allreduce(self._live(), send.address, recv.address, send.count,
                                                      send.dtype, code, r), recv.obj, (send, recv), async_op)

    @holds_handle
    def allgather(self, data, out=None, async_op=False):
        """Every rank's data in rank order, stacked along the first dimension (shape (size * n,
        ...) for data of shape (n, ...); (size,) for a 0-d array), or into out."""
        send = as_buffer(data, "allgather data", writable=False, cuda=True)
        recv = as_buffer(empty_like(send, times=self.size) if out is None else out,
                         "allgather out", writable=True, cuda=True)
        same_type(send, recv, "allgather out")
        if recv.count != send.count * self.size:
            raise ValueError(f"allgather out: {recv.count} elements, not size x {send.count} = "
                             f"{send.count * self.size}")
        disjoint(send, recv, "allgather out", in_place=send.address == recv.address + self.rank * send.nbytes)
        return self._run(lambda r: _lib.tsr_allgather(self._live(), send.address, recv.address, send.count,
                                                      send.dtype, r), recv.obj, (send, recv), async_op)

    @holds_handle
    def broadcast(self, data, root=0, async_op=False):
        """Root's data into data on every rank (in place)."""
        buf = as_buffer(data, "broadcast data", writable=True, cuda=True)
        root = integer("broadcast root", root, 0, self.size - 1)
        return self._run(lambda r: _lib.tsr_broadcast(self._live(), buf.address, buf.address, buf.count,
                                                      buf.dtype, root, r), buf.obj, (buf,), async_op)

    @holds_handle
    def reduce_scatter(self, data, out=None, op="sum", async_op=False):
        """Reduces data (size blocks of equal length) and gives block `rank` to this rank (of
        shape (n / size, ...) for data of shape (n, ...) when size divides n; else flat)."""
        send = as_buffer(data, "reduce_scatter data", writable=False, cuda=True)
        if send.count % self.size:
            raise ValueError(f"reduce_scatter data: {send.count} elements do not split into "
                             f"{self.size} equal blocks")
        block = send.count // self.size
        recv = as_buffer(empty_like(send, divide=self.size) if out is None else out, "reduce_scatter out",
                         writable=True, cuda=True)
        same_type(send, recv, "reduce_scatter out")
        if recv.count != block:
            raise ValueError(f"reduce_scatter out: {recv.count} elements for blocks of {block}")
        # In place: out is data's block `rank`, or its start (as C takes it).
        disjoint(send, recv, "reduce_scatter out",
                 in_place=recv.address in (send.address, send.address + self.rank * recv.nbytes))
        code = _op_code(op)
        return self._run(lambda r: _lib.tsr_reduce_scatter(self._live(), send.address, recv.address, block,
                                                           send.dtype, code, r), recv.obj, (send, recv), async_op)

    @holds_handle
    def barrier(self, async_op=False):
        return self._run(lambda r: _lib.tsr_barrier(self._live(), r), None, (), async_op)

    @holds_handle
    def send(self, data, peer, tag=0, async_op=False):
        """data to rank `peer` alone (only the two ranks call send and recv). The peer's recv of
        the same tag takes this rank's messages in the order they were sent."""
        buf = as_buffer(data, "send data", writable=False)
        peer, tag = c_int("send: peer", peer), c_int("send: tag", tag)
        return self._run(lambda r: _lib.tsr_send(self._live(), buf.address, buf.count, buf.dtype, peer, tag, r),
                         None, (buf,), async_op)

    @holds_handle
    def recv(self, out, peer, tag=0, async_op=False):
        """Rank `peer`'s next message of `tag` into out, whose size and dtype must be what it sent."""
        buf = as_buffer(out, "recv out", writable=True)
        peer, tag = c_int("recv: peer", peer), c_int("recv: tag", tag)
        return self._run(lambda r: _lib.tsr_recv(self._live(), buf.address, buf.count, buf.dtype, peer, tag, r),
                         buf.obj, (buf,), async_op)

    @property
    def timeout_ms(self):
        """The timeout of the calls posted from now on (on every rank they fail when not done by then)."""
        return self._query(_lib.tsr_comm_timeout)

    @timeout_ms.setter
    @holds_handle
    def timeout_ms(self, value):
        check(_lib.tsr_comm_set_timeout(self._live(), c_int("timeout_ms", value)))

    @holds_handle
    def revoke(self):
        """As MPI_Comm_revoke: every pending and later call on this communicator, here and on
        every live peer (told at once), raises RevokedError naming this rank."""
        check(_lib.tsr_comm_revoke(self._live()))

    @holds_handle
    def shrink(self):
        """As MPIX_Comm_shrink: every live rank calls it after a failure; this communicator is
        revoked, the live ranks agree on who is lost, and the survivors get a new Communicator,
        ranked in their old order (tsr_comm_shrink). Raises PeerFailedError when this rank's
        side is not a majority, CollectiveTimeoutError when the survivors do not agree in time.
        This communicator stays unusable: close it. docs/elastic.md."""
        handle = ctypes.c_void_p()
        check(_lib.tsr_comm_shrink(self._live(), ctypes.byref(handle)))
        survivors = Communicator.__new__(Communicator)
        survivors._own(handle)
        return survivors

    @holds_handle
    def grow(self):
        """Collective over the members (in order with their collectives, e.g. between steps):
        the replacements that asked to join since the last call (Communicator.join) are let in.
        Returns the grown Communicator (members keep their ranks, replacements follow), or None
        when nobody was waiting. This communicator stays usable (tsr_comm_grow)."""
        handle = ctypes.c_void_p()
        check(_lib.tsr_comm_grow(self._live(), ctypes.byref(handle)))
        if not handle.value:
            return None
        grown = Communicator.__new__(Communicator)
        grown._own(handle)
        return grown

    @holds_handle
    def recovery_ms(self):
        """For a Communicator made by shrink(), grow() or join(): (ms to agree, ms to bootstrap)
        (tsr_comm_recovery_ms); (0, 0) for others."""
        agreement, bootstrap = ctypes.c_double(), ctypes.c_double()
        check(_lib.tsr_comm_recovery_ms(self._live(), ctypes.byref(agreement), ctypes.byref(bootstrap)))
        return agreement.value, bootstrap.value

    @classmethod
    def join(cls):
        """In a replacement process (tsrun --respawn starts one with TSR_JOIN=1): asks the
        running job's members to let it in, with the job secret, and returns its Communicator
        once their next grow() has (tsr_comm_join; at most TSR_BOOTSTRAP_TIMEOUT_MS)."""
        handle = ctypes.c_void_p()
        check(_lib.tsr_comm_join(ctypes.byref(handle)))
        _capi.forget_job_secret()
        joined = cls.__new__(cls)
        joined._own(handle)
        return joined

    @holds_handle
    def abort(self):
        """Fails this rank's pending and later collectives and tells the peers."""
        check(_lib.tsr_comm_abort(self._live()))
