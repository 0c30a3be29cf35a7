"""What the collectives take: NumPy arrays and PyTorch CPU tensors, C-contiguous, of a
Tessera element type. A Buffer is the C view of one (address, element count, dtype code)
and keeps the object alive while a collective may touch it."""
import numpy as np

from . import _capi

_NUMPY_DTYPES = {np.dtype(np.float32): _capi.FLOAT32, np.dtype(np.float64): _capi.FLOAT64,
                 np.dtype(np.float16): _capi.FLOAT16, np.dtype(np.int32): _capi.INT32,
                 np.dtype(np.int64): _capi.INT64}
ACCEPTED = "float32, float64, float16, bfloat16 (torch), int32, int64"


class Buffer:
    __slots__ = ("obj", "array", "address", "count", "dtype")

    def __init__(self, obj, array, dtype):
        self.obj = obj        # what the caller gave (returned as the result)
        self.array = array    # a NumPy view of the same memory
        self.address = array.ctypes.data
        self.count = array.size
        self.dtype = dtype


def _is_torch(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "numpy")


def as_buffer(obj, what, writable):
    """The Buffer of obj; ValueError/TypeError naming `what` when Tessera cannot use it."""
    if _is_torch(obj):
        import torch
        if obj.device.type != "cpu":
            raise ValueError(f"{what}: a tensor on {obj.device}: the Python layer takes host "
                             f"memory (move it with .cpu())")
        if not obj.is_contiguous():
            raise ValueError(f"{what}: a non-contiguous tensor (use .contiguous())")
        view = obj.detach()  # the same memory, without autograd (numpy() refuses it)
        if obj.dtype == torch.bfloat16:
            return Buffer(obj, view.view(torch.int16).numpy(), _capi.BFLOAT16)
        if obj.dtype not in (torch.float32, torch.float64, torch.float16, torch.int32, torch.int64):
            raise ValueError(f"{what}: dtype {obj.dtype} is not accepted ({ACCEPTED})")
        array = view.numpy()
        return Buffer(obj, array, _NUMPY_DTYPES[array.dtype])
    if not isinstance(obj, np.ndarray):
        raise TypeError(f"{what}: a {type(obj).__name__}, not a NumPy array or a PyTorch tensor")
    dtype = _NUMPY_DTYPES.get(obj.dtype)
    if dtype is None:
        raise ValueError(f"{what}: dtype {obj.dtype} is not accepted ({ACCEPTED})")
    if not obj.flags.c_contiguous:
        raise ValueError(f"{what}: a non-contiguous array (use numpy.ascontiguousarray)")
    if writable and not obj.flags.writeable:
        raise ValueError(f"{what}: a read-only array receives the result")
    return Buffer(obj, obj, dtype)


def empty_like(buf, times=1, divide=1):
    """A new array (or tensor, for a tensor) of buf's type whose first dimension is buf's
    times `times` (all-gather: the ranks' inputs stacked along it, as torch's
    all_gather_into_tensor) or divided by `divide` (reduce-scatter: one block of it); flat when
    buf is 0-d or `divide` does not divide its first dimension."""
    shape = tuple(buf.obj.shape)
    if shape and shape[0] % divide == 0:
        shape = (shape[0] * times // divide,) + shape[1:]
    else:
        shape = (buf.count * times // divide,)
    if _is_torch(buf.obj):
        import torch
        return torch.empty(shape, dtype=buf.obj.dtype)
    return np.empty(shape, dtype=buf.array.dtype)


def same_type(a, b, what):
    if a.dtype != b.dtype:
        raise ValueError(f"{what}: element type differs from the input's "
                         f"({b.array.dtype} against {a.array.dtype})")
