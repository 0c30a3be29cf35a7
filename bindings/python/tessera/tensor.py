"""Compressed allreduce per gradient tensor (tessera_tensor.h): Marsit, SparDL, the BytePS-style
compressors, or dense; the tensor keeps the algorithm's state (residual, steps) between steps."""
import ctypes

import numpy as np

from . import _capi
from ._buffers import as_buffer
from ._handle import Handle
from .communicator import Request
from .errors import check

_lib = _capi.lib
_DTYPES = {"float32": _capi.FLOAT32, "float64": _capi.FLOAT64, "float16": _capi.FLOAT16}


class CompressedTensor(Handle):
    """Declared once, with the same name and parameters on every rank, then allreduced every
    step: tensor = CompressedTensor(comm, "fc1.weight", grad.size, algorithm="marsit").
    Parameters are those of tsr_tensor_create (algorithm=dense|marsit|compressed|spardl,
    topology, compressor, k, ef, momentum, density, teams, intra, seed, ...)."""

    _destroy = _lib.tsr_tensor_destroy

    def __init__(self, comm, name, count, dtype="float32", **params):
        if dtype not in _DTYPES:
            raise ValueError(f"tensor {name}: dtype {dtype!r}: accepted values are {', '.join(_DTYPES)}")
        array, n = _capi.params(params)
        handle = ctypes.c_void_p()
        check(_lib.tsr_tensor_create(comm._live(), name.encode(), count, _DTYPES[dtype], array, n,
                                     ctypes.byref(handle)))
        self._comm = comm  # a tensor must not outlive its communicator
        self._adopt(handle, f"tensor {name}")
        self.name = name
        self.count = count

    def allreduce(self, data, async_op=False):
        """In place: data (count elements) becomes the step's estimate of the average over
        ranks (spardl: of the sum)."""
        buf = as_buffer(data, f"tensor {self.name} data", writable=True)
        if buf.count != self.count:
            raise ValueError(f"tensor {self.name}: {buf.count} elements, declared with {self.count}")
        handle = ctypes.c_void_p()
        check(_lib.tsr_tensor_allreduce(self._live(), buf.address, ctypes.byref(handle)))
        request = Request(handle, buf.obj, (buf,))
        return request if async_op else request.wait()

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

    def residual(self):
        """What compression has kept back so far (count float32 values; see tessera_tensor.h)."""
        out = np.empty(self.count, dtype=np.float32)
        check(_lib.tsr_tensor_residual(self._live(), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))
        return out
