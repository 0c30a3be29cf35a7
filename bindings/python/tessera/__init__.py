"""Tessera from Python: the C API (libtessera.so) through ctypes, on NumPy arrays and PyTorch
CPU tensors.

    import numpy as np, tessera
    comm = tessera.Communicator()            # under tsrun: peers from the environment
    grad = np.ones(1000, dtype=np.float32)
    comm.allreduce(grad, op="avg")           # in place, blocking
    req = comm.allreduce(grad, async_op=True)
    ...                                       # overlap
    req.wait()
"""
from .communicator import Communicator, Request
from .errors import (AbortedError, BootstrapError, CollectiveTimeoutError, InvalidArgumentError,
                     MismatchError, NotSupportedError, NumericError, PeerFailedError, TesseraError)
from ._selsync_covap import Covap, SelSync, inject
from .tensor import CompressedTensor

__all__ = ["Communicator", "Request", "CompressedTensor", "SelSync", "inject", "Covap", "TesseraError", "NotSupportedError",
           "InvalidArgumentError", "MismatchError", "PeerFailedError", "CollectiveTimeoutError",
           "BootstrapError", "AbortedError", "NumericError"]
