"""Tessera from Python: the C API (libtessera.so) through ctypes, on NumPy arrays and PyTorch
CPU tensors.

    import numpy as np, tessera
    comm = tessera.Communicator()            # under tsrun: peers from the environment
    grad = np.ones(1000, dtype=np.float32)
    comm.allreduce(grad, op="avg")           # in place, blocking
    req = comm.allreduce(grad, async_op=True)
    ...                                       # overlap
    req.wait()                                # or req.then(fn) / req.get_future()
"""
from . import _capi
from .communicator import Communicator
from .errors import (AbortedError, BootstrapError, ClosedError, CollectiveTimeoutError, InvalidArgumentError,
                     MismatchError, NotSupportedError, NumericError, PeerFailedError, RevokedError,
                     TesseraError)
from .request import Request
from ._selsync_covap import Covap, SelSync, inject
from .tensor import CompressedTensor, relayout_index, tensor_algorithms

__version__ = _capi.version()  # the loaded libtessera's
__all__ = ["Communicator", "Request", "CompressedTensor", "relayout_index", "tensor_algorithms", "SelSync", "inject", "Covap",
           "TesseraError", "NotSupportedError", "InvalidArgumentError", "MismatchError", "PeerFailedError",
           "CollectiveTimeoutError", "BootstrapError", "AbortedError", "ClosedError", "NumericError",
           "RevokedError"]
