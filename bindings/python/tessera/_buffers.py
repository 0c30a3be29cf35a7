"""What the collectives and tensors take: NumPy arrays, PyTorch CPU tensors and DLPack
producers in host memory, C-contiguous, aligned, of a Tessera element type; the
Communicator's dense collectives also take CUDA memory (PyTorch CUDA tensors, any object with
__cuda_array_interface__, such as CuPy's arrays, or with DLPack, such as JAX's).
Every array the package hands to C goes through as_buffer, which checks the dtype, the size in
bytes, the layout, the memory and, where C writes, the writability, and names what is wrong: C
trusts the pointer and the count it is given, so a float64 array passed where float32 was
declared would be read half and written wrong, and a float16 one written past its end."""
import sys

import numpy as np

from . import _capi, _dlpack

_NUMPY_DTYPES = {np.dtype(np.float32): _capi.FLOAT32, np.dtype(np.float64): _capi.FLOAT64,
                 np.dtype(np.float16): _capi.FLOAT16, np.dtype(np.int32): _capi.INT32,
                 np.dtype(np.int64): _capi.INT64}
NAMES = {_capi.FLOAT32: "float32", _capi.FLOAT64: "float64", _capi.FLOAT16: "float16",
         _capi.BFLOAT16: "bfloat16", _capi.INT32: "int32", _capi.INT64: "int64"}
ITEM_BYTES = {_capi.FLOAT32: 4, _capi.FLOAT64: 8, _capi.FLOAT16: 2, _capi.BFLOAT16: 2,
              _capi.INT32: 4, _capi.INT64: 8}
ACCEPTED = "float32, float64, float16, bfloat16 (torch), int32, int64"


# __cuda_array_interface__'s typestr of each element type (CUDA has no bfloat16 typestr).
_TYPESTRS = {"<f4": _capi.FLOAT32, "<f8": _capi.FLOAT64, "<f2": _capi.FLOAT16, "<i4": _capi.INT32,
             "<i8": _capi.INT64}


class Buffer:
    __slots__ = ("obj", "array", "address", "count", "dtype", "device", "stream", "owner")

    def __init__(self, obj, array, dtype, address=None, count=None, device=None, stream=None, owner=None):
        self.obj = obj        # what the caller gave (returned as the result)
        self.array = array    # a NumPy view of the same memory (host memory only)
        self.address = array.ctypes.data if array is not None else address
        self.count = array.size if array is not None else count
        self.dtype = dtype
        self.device = device  # None: host memory; else the CUDA device ("cuda:0", "cuda" when unknown)
        # CUDA memory: the stream (a cudaStream_t as an int) whose earlier work produces it; None
        # when its producer says it needs no ordering, or does not say.
        self.stream = stream
        self.owner = owner    # what keeps the memory alive besides obj (a DLPack capsule)

    @property
    def nbytes(self):
        return self.count * ITEM_BYTES[self.dtype]

    def overlaps(self, other):
        return (self.address < other.address + other.nbytes and other.address < self.address + self.nbytes
                and self.nbytes and other.nbytes)


def _is_torch(obj):
    """A torch.Tensor, its subclasses included (nn.Parameter, a user's own: a test by module
    name sent those down the DLPack path, where in-place calls were refused as read-only).
    torch is asked only when the program has imported it."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, getattr(torch, "Tensor", ()))


def _torch_codes():
    import torch
    return {torch.float32: _capi.FLOAT32, torch.float64: _capi.FLOAT64, torch.float16: _capi.FLOAT16,
            torch.bfloat16: _capi.BFLOAT16, torch.int32: _capi.INT32, torch.int64: _capi.INT64}


def dtype_code(dtype, what):
    """The tsr_dtype_t of a dtype given as a name ("float32", "bfloat16"), a NumPy dtype
    (np.float32, np.dtype("float16")) or a torch dtype (torch.float32, torch.bfloat16)."""
    if type(dtype).__module__.startswith("torch"):
        code = _torch_codes().get(dtype)
    elif isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        code = _capi.BFLOAT16
    elif isinstance(dtype, str) and dtype in ("float", "double", "half"):
        # NumPy reads "float" as float64, torch (whose names these are) as float32: refused as
        # ambiguous rather than read one way silently.
        raise ValueError(f"{what}: dtype {dtype!r} is ambiguous (float32 in torch, float64 in NumPy): "
                         f"say float32, float64 or float16")
    elif dtype is None:  # np.dtype(None) would be float64
        code = None
    else:
        try:
            code = _NUMPY_DTYPES.get(np.dtype(dtype))
        except TypeError:
            code = None
    if code is None:
        raise ValueError(f"{what}: dtype {dtype!r} is not accepted ({ACCEPTED}; as a name, a NumPy or a torch dtype)")
    return code


def _cuda_view(obj, what):
    """(address, count, dtype code, device, read-only, stream) of a CUDA tensor or array,
    refusing what C could not read as one block. The stream: PyTorch's current one for a
    tensor; __cuda_array_interface__'s "stream" (version 3) for any other array, whose 1 and 2
    are the CUDA runtime's own handles of the legacy and per-thread default streams."""
    if _is_torch(obj):
        code = _torch_codes().get(obj.dtype)
        if code is None:
            raise ValueError(f"{what}: dtype {obj.dtype} is not accepted ({ACCEPTED})")
        if not obj.is_contiguous():
            raise ValueError(f"{what}: a non-contiguous tensor (use .contiguous())")
        import torch
        stream = torch.cuda.current_stream(obj.device).cuda_stream
        return obj.data_ptr(), obj.numel(), code, str(obj.device), False, stream
    cai = obj.__cuda_array_interface__
    code = _TYPESTRS.get(cai.get("typestr"))
    if code is None:
        raise ValueError(f"{what}: CUDA array of typestr {cai.get('typestr')!r} is not accepted ({ACCEPTED})")
    shape = tuple(cai.get("shape", ()))
    count = 1
    for n in shape:
        count *= n
    strides = cai.get("strides")
    if strides is not None and count > 1:
        want, step = [], ITEM_BYTES[code]
        for n in reversed(shape):
            want.insert(0, step)
            step *= n
        if any(n > 1 and got != w for n, got, w in zip(shape, strides, want)):
            raise ValueError(f"{what}: a non-contiguous CUDA array (strides {tuple(strides)})")
    address, readonly = cai["data"]
    device = getattr(getattr(obj, "device", None), "id", None)
    stream = cai.get("stream")
    return address, count, code, "cuda" if device is None else f"cuda:{device}", bool(readonly), stream or None


def current_device(device):
    """A context in which CUDA device `device` ("cuda:N", a torch.device, or None for host
    memory) is the calling thread's current one. The C library opens a communicator's staging
    (its copier stream) and a memory=cuda tensor's or SelSync's on the current device, at their
    first CUDA call or at creation, and records the caller's event there: a tensor on cuda:1
    posted while cuda:0 is current (no torch.cuda.set_device) would be read after cuda:0's
    default stream, not after its own. Nothing to do for host memory, an unknown index, or
    without PyTorch or CuPy in use (the caller's current device is then taken as it is)."""
    import contextlib
    if device is None:
        return contextlib.nullcontext()
    index = getattr(device, "index", None) if not isinstance(device, str) else (
        int(device.split(":", 1)[1]) if device.startswith("cuda:") else None)
    if getattr(device, "type", "cuda") != "cuda" or index is None:
        return contextlib.nullcontext()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.device(index)
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        return cupy.cuda.Device(index)
    return contextlib.nullcontext()


def _is_cuda(obj):
    if _is_torch(obj):
        return obj.device.type == "cuda"
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    return not isinstance(obj, np.ndarray) and _dlpack.device_type(obj) == _dlpack.CUDA


def _view(obj, what):
    """(NumPy view, dtype code) of obj's memory, refusing what C could not read as one block."""
    if _is_torch(obj):
        import torch
        if obj.device.type != "cpu":
            raise ValueError(f"{what}: a tensor on {obj.device}: this call takes host memory "
                             f"(move it with .cpu())")
        code = _torch_codes().get(obj.dtype)
        if code is None:
            raise ValueError(f"{what}: dtype {obj.dtype} is not accepted ({ACCEPTED})")
        if not obj.is_contiguous():
            raise ValueError(f"{what}: a non-contiguous tensor (use .contiguous())")
        view = obj.detach()  # the same memory, without autograd (numpy() refuses it)
        array = view.view(torch.int16).numpy() if code == _capi.BFLOAT16 else view.numpy()
        return array, code
    if hasattr(obj, "__cuda_array_interface__"):
        raise ValueError(f"{what}: CUDA memory ({type(obj).__name__}): this call takes host memory")
    kind = None if isinstance(obj, np.ndarray) else _dlpack.device_type(obj)
    if kind in (_dlpack.CUDA, _dlpack.CUDA_HOST):
        raise ValueError(f"{what}: CUDA memory ({type(obj).__name__}, DLPack): this call takes host memory")
    if kind == _dlpack.CPU:
        obj = _dlpack.host_array(obj, what)
    elif kind is not None:
        raise ValueError(f"{what}: a {type(obj).__name__} on DLPack device type {kind}: host (1) or CUDA (2) only")
    if not isinstance(obj, np.ndarray):
        raise TypeError(f"{what}: a {type(obj).__name__}, not a NumPy array or a PyTorch tensor")
    code = _NUMPY_DTYPES.get(obj.dtype)
    if code is None:
        raise ValueError(f"{what}: dtype {obj.dtype} is not accepted ({ACCEPTED})")
    if not obj.flags.c_contiguous:
        raise ValueError(f"{what}: a non-contiguous array (use numpy.ascontiguousarray)")
    return obj, code


def as_buffer(obj, what, writable, dtype=None, count=None, cuda=False):
    """The Buffer of obj; ValueError/TypeError naming `what` when Tessera cannot use it: not an
    array, a dtype it has no type for (or not `dtype`, when given), not `count` elements (the
    bytes C will touch), not C-contiguous, misaligned, read-only where C writes, or CUDA memory
    where the call takes host memory only (`cuda`: it takes both)."""
    if cuda and _is_cuda(obj):
        owner = None
        if _is_torch(obj) or hasattr(obj, "__cuda_array_interface__"):
            address, size, code, device, readonly, stream = _cuda_view(obj, what)
        else:
            address, size, code, device, owner = _dlpack.cuda_view(obj, what)
            readonly, stream = True, None  # as numpy.from_dlpack: a producer may be immutable (JAX)
        if dtype is not None and code != dtype:
            raise ValueError(f"{what}: dtype {NAMES[code]}, declared {NAMES[dtype]}")
        if count is not None and size != count:
            raise ValueError(f"{what}: {size} elements, declared with {count}")
        if address % ITEM_BYTES[code]:
            raise ValueError(f"{what}: misaligned memory (address {address:#x} is not a multiple of "
                             f"{ITEM_BYTES[code]})")
        if writable and readonly:
            hint = " (DLPack arrays are read-only: pass out=)" if owner is not None else ""
            raise ValueError(f"{what}: a read-only CUDA array receives the result{hint}")
        return Buffer(obj, None, code, address=address, count=size, device=device, stream=stream, owner=owner)
    array, code = _view(obj, what)
    if dtype is not None and code != dtype:
        raise ValueError(f"{what}: dtype {NAMES[code]}, declared {NAMES[dtype]} (the C side would read "
                         f"{ITEM_BYTES[dtype]}-byte elements from {ITEM_BYTES[code]}-byte ones)")
    if count is not None and array.size != count:
        item = ITEM_BYTES[code]
        raise ValueError(f"{what}: {array.size} elements, declared with {count} ({array.size * item} bytes "
                         f"where C would touch {count * item})")
    if array.ctypes.data % ITEM_BYTES[code]:
        raise ValueError(f"{what}: misaligned memory (address {array.ctypes.data:#x} is not a multiple of "
                         f"{ITEM_BYTES[code]}; use a copy)")
    if writable and not array.flags.writeable:
        raise ValueError(f"{what}: a read-only array receives the result" +
                         ("" if array is obj else " (DLPack arrays are read-only: pass out=)"))
    return Buffer(obj, array, code)


def empty_like(buf, times=1, divide=1):
    """A new array (or tensor, for a tensor) of buf's type whose first dimension is buf's
    times `times` (all-gather: the ranks' inputs stacked along it, as torch's
    all_gather_into_tensor) or divided by `divide` (reduce-scatter: one block of it); flat when
    buf is 0-d or `divide` does not divide its first dimension."""
    if buf.device is not None and not (_is_torch(buf.obj) or type(buf.obj).__module__.startswith("cupy")):
        raise ValueError(f"a {type(buf.obj).__name__} in CUDA memory: pass out= (only PyTorch and CuPy arrays "
                         "of the result's shape are made here)")
    shape = tuple(buf.array.shape if buf.array is not None else buf.obj.shape)
    if shape and shape[0] % divide == 0:
        shape = (shape[0] * times // divide,) + shape[1:]
    else:
        shape = (buf.count * times // divide,)
    if _is_torch(buf.obj):
        import torch
        return torch.empty(shape, dtype=buf.obj.dtype, device=buf.obj.device)
    if buf.device is not None and type(buf.obj).__module__.startswith("cupy"):
        import cupy
        with cupy.cuda.Device(buf.obj.device.id):  # the input's device, not the current one
            return cupy.empty(shape, dtype=buf.obj.dtype)
    return np.empty(shape, dtype=buf.array.dtype)


def same_type(a, b, what):
    if a.dtype != b.dtype:
        raise ValueError(f"{what}: dtype {NAMES[b.dtype]} differs from the input's {NAMES[a.dtype]}")
    if (a.device is None) != (b.device is None):
        raise ValueError(f"{what}: in {'host' if b.device is None else b.device} memory, the input in "
                         f"{'host' if a.device is None else a.device} memory (both must be on one side)")
    # Two CUDA devices: the call is staged and ordered on one device (the input's stream), so
    # the other's writes or reads would not be ordered with it.
    if a.device != b.device and "cuda" not in (a.device, b.device) and a.device is not None:
        raise ValueError(f"{what}: on {b.device}, the input on {a.device} (one call's buffers are on one device)")


def disjoint(send, recv, what, in_place=False):
    """Refuses recv overlapping send, unless `in_place` (the layout C takes in place)."""
    if send.overlaps(recv) and not in_place:
        raise ValueError(f"{what}: overlaps the input's memory (only the exact in-place layout is allowed)")
