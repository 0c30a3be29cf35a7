"""Compressed allreduce per gradient tensor (tessera_tensor.h): Marsit, SparDL, the BytePS-style
compressors, or dense; the tensor keeps the algorithm's state (residual, steps) between steps."""
import ctypes
from collections import Counter

import numpy as np

from . import _args, _capi
from ._buffers import NAMES, as_buffer, dtype_code
from ._handle import Handle, holds_handle
from .errors import check
from .request import Request

_lib = _capi.lib
_FLOATS = ctypes.POINTER(ctypes.c_float)
_RESULT_KINDS = {_capi.OPS["avg"]: "average", _capi.OPS["sum"]: "sum"}


def tensor_algorithms():
    """Every tensor algorithm name `algorithm=` takes (tsr_tensor_algorithm), as a list of
    (name, family, description, parameters): the four families (dense first), then the presets
    (marsit-torus, topk, onebit, ...), whose family is the one they run."""
    out = []
    fields = [ctypes.c_char_p() for _ in range(4)]
    while _lib.tsr_tensor_algorithm(len(out), *(ctypes.byref(f) for f in fields)) == 0:
        out.append(tuple(f.value.decode() for f in fields))
    return out


class CompressedTensor(Handle):
    """Declared once, with the same name and parameters on every rank, then allreduced every
    step: tensor = CompressedTensor(comm, "fc1.weight", grad.size, algorithm="marsit").
    Parameters are those of tsr_tensor_create (algorithm= any name of tensor_algorithms(),
    topology, compressor, k, ef, momentum, density, teams, intra, seed, ...).

    dtype: a name ("float32", "bfloat16"), a NumPy dtype or a torch dtype; marsit, compressed
    and spardl take float32, dense any floating type (the C side says so otherwise). op="avg"
    or "sum": what a step leaves in the data (default: the algorithm's own, see `result`).
    One live tensor per name and communicator: close() the old one before re-creating it."""

    _destroy = _lib.tsr_tensor_destroy

    def __init__(self, comm, name, count, dtype="float32", op=None, **params):
        encoded = _args.name("tensor name", name)
        count = _args.count(f"tensor {name}: count", count, low=0)
        code = dtype_code(dtype, f"tensor {name}")
        if op is not None:
            params["op"] = op
        array, n = _capi.params(params)
        handle = ctypes.c_void_p()
        with comm._in_call():
            check(_lib.tsr_tensor_create(comm._live(), encoded, count, code, array, n, ctypes.byref(handle)))
        self._comm = comm
        self._adopt(handle, f"tensor {name}")
        self.name = name
        self.count = count
        self.dtype = NAMES[code]
        self._code = code
        self._cuda = str(params.get("memory", "host")) == "cuda"

    @holds_handle
    def allreduce(self, data, async_op=False):
        """In place: data (count elements of the declared dtype) becomes the step's result, the
        same on every rank: the average over ranks or their sum (`result` says which). A tensor
        declared with memory="cuda" takes CUDA memory (a PyTorch CUDA tensor, any object with
        __cuda_array_interface__), the others host memory."""
        buf = as_buffer(data, f"tensor {self.name} data", writable=True, dtype=self._code, count=self.count,
                        cuda=self._cuda)
        handle = ctypes.c_void_p()
        if buf.device is None:
            check(_lib.tsr_tensor_allreduce(self._live(), buf.address, ctypes.byref(handle)))
        else:  # read once the stream that produced it (PyTorch's current one) reaches the call
            with self._comm._in_call():
                comm = self._comm._live()  # the stream for this thread's call only
                check(_lib.tsr_comm_set_thread_buffers(comm, _capi.MEM_HOST, buf.stream))
                try:
                    check(_lib.tsr_tensor_allreduce(self._live(), buf.address, ctypes.byref(handle)))
                finally:
                    _lib.tsr_comm_clear_thread_buffers(comm)
        request = Request(handle, buf.obj, (buf,))
        return request if async_op else request.wait()

    @holds_handle
    def move_to(self, comm):
        """Moves this tensor to `comm` (a shrunk or grown communicator), keeping its residual:
        nothing compression kept back is lost; the rest of its state starts afresh
        (tsr_tensor_move). Before closing the old communicator; every rank of `comm` moves (a
        replacement: creates) the same tensors before the next step."""
        with comm._in_call():
            check(_lib.tsr_tensor_move(self._live(), comm._live()))
        self._comm = comm

    @holds_handle
    def _info(self):
        steps, algorithm = ctypes.c_uint64(), ctypes.c_char_p()
        check(_lib.tsr_tensor_info(self._live(), ctypes.byref(steps), ctypes.byref(algorithm)))
        return steps.value, algorithm.value.decode()

    @property
    def steps(self):
        """Steps completed so far."""
        return self._info()[0]

    @property
    def algorithm(self):
        """What reduces it, e.g. "marsit-ring" or "compressed:ef(topk(k=10))"."""
        return self._info()[1]

    @property
    @holds_handle
    def result(self):
        """"average" or "sum": what allreduce leaves in the data (spardl sums unless declared
        op="avg"; the others average unless op="sum")."""
        kind = ctypes.c_int()
        check(_lib.tsr_tensor_result_kind(self._live(), ctypes.byref(kind)))
        return _RESULT_KINDS[kind.value]

    @holds_handle
    def residual(self):
        """What compression has kept back so far: count float32 values, in units of this rank's
        own contribution (see tessera_tensor.h). Not while a step is pending."""
        out = np.empty(self.count, dtype=np.float32)
        check(_lib.tsr_tensor_residual(self._live(), out.ctypes.data_as(_FLOATS)))
        return out

    @holds_handle
    def set_residual(self, values):
        """Replaces what the tensor keeps back (count float32 values, residual()'s units): to
        carry it to a re-created tensor, or to follow a buffer whose layout changed (see
        permute_residual). Local; not while a step is pending."""
        buf = as_buffer(values, f"tensor {self.name} residual", writable=False, dtype=_capi.FLOAT32,
                        count=self.count)
        check(_lib.tsr_tensor_set_residual(self._live(), ctypes.cast(buf.address, _FLOATS)))

    def permute_residual(self, index):
        """Moves the residual along with the data when the caller re-lays-out its buffer:
        index[i] is where the element now at position i was before (a permutation of
        0..count-1; relayout_index builds it from the pieces' old and new order). PyTorch DDP
        re-orders a bucket's parameters after its first step (same index, same size): without
        this, the residual kept for one parameter is added to another's gradient."""
        index = np.asarray(index.numpy() if hasattr(index, "numpy") else index)
        if index.shape != (self.count,) or not np.issubdtype(index.dtype, np.integer):
            raise ValueError(f"tensor {self.name} permute_residual: index of shape {index.shape} and dtype "
                             f"{index.dtype}, not {self.count} integers")
        if self.count and (index.min() < 0 or index.max() >= self.count
                           or np.bincount(index, minlength=self.count).max() != 1):
            raise ValueError(f"tensor {self.name} permute_residual: index is not a permutation of "
                             f"0..{self.count - 1} (an element would be lost or counted twice)")
        self.set_residual(np.ascontiguousarray(self.residual()[index]))


def relayout_index(old_order, new_order, sizes):
    """The index permute_residual takes when a buffer's pieces (parameters) change places:
    old_order and new_order list the same keys (parameter names, say) in the buffer's order
    before and after, sizes[key] each piece's element count."""
    if Counter(old_order) != Counter(new_order):
        raise ValueError("relayout_index: old_order and new_order must list the same pieces")
    old_offset, at = {}, 0
    for key in old_order:
        old_offset[key] = at
        at += int(sizes[key])
    index = np.empty(at, dtype=np.int64)
    at = 0
    for key in new_order:
        n = int(sizes[key])
        index[at:at + n] = np.arange(old_offset[key], old_offset[key] + n)
        at += n
    return index
