"""DLPack producers (JAX, CuPy, TensorFlow: any array with __dlpack__ and __dlpack_device__)
for as_buffer. Host ones are viewed through NumPy (numpy.from_dlpack); CUDA ones are read from
their DLTensor (address, shape, strides, dtype), and the capsule that owns it stays referenced
by the buffer, so the memory lives as long as the collective. The capsule is not renamed: it
keeps ownership, and its destructor hands the tensor back to the producer. Either kind is
read-only, as numpy.from_dlpack makes it (a producer may be immutable, as JAX's arrays are):
results go to out=."""
import ctypes

from . import _capi

CPU, CUDA, CUDA_HOST = 1, 2, 3  # DLDeviceType

# (type code, bits) -> element type: kDLInt 0, kDLFloat 2, kDLBfloat 4.
_DTYPES = {(2, 32): _capi.FLOAT32, (2, 64): _capi.FLOAT64, (2, 16): _capi.FLOAT16, (4, 16): _capi.BFLOAT16,
           (0, 32): _capi.INT32, (0, 64): _capi.INT64}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):  # the first member of DLManagedTensor (capsule "dltensor")
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def device_type(obj):
    """The DLDeviceType of a DLPack producer, else None (NumPy arrays and torch tensors have
    paths of their own and are not asked)."""
    if not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")):
        return None
    return int(obj.__dlpack_device__()[0])


def host_array(obj, what):
    """A NumPy view of a host DLPack producer's memory."""
    import numpy as np
    try:
        view = np.from_dlpack(obj)
    except (TypeError, RuntimeError, BufferError, AttributeError) as e:
        raise ValueError(f"{what}: a {type(obj).__name__} NumPy cannot view through DLPack: {e}") from e
    view.flags.writeable = False  # read-only whatever NumPy's version made it (2.1 on: writable)
    return view


def cuda_view(obj, what):
    """(address, count, dtype code, device, capsule) of a CUDA DLPack producer's memory,
    refusing what C could not read as one block. Asked for the legacy default stream (1): the
    producer orders its work before that stream, which Tessera's staged copy waits for."""
    try:
        capsule = obj.__dlpack__(stream=1)
    except TypeError:  # a producer without the stream keyword
        capsule = obj.__dlpack__()
    pointer = _get_pointer(capsule, b"dltensor")
    t = DLTensor.from_address(pointer)
    dt = (t.dtype.code, t.dtype.bits)
    code = _DTYPES.get(dt) if t.dtype.lanes == 1 else None
    if code is None:
        raise ValueError(f"{what}: DLPack dtype (code {dt[0]}, bits {dt[1]}, lanes {t.dtype.lanes}) is not accepted "
                         f"(float32, float64, float16, bfloat16, int32, int64)")
    shape = [t.shape[i] for i in range(t.ndim)]
    count = 1
    for n in shape:
        count *= n
    if t.strides and count > 1:
        want = 1
        for i in reversed(range(t.ndim)):
            if shape[i] > 1 and t.strides[i] != want:
                strides = tuple(t.strides[k] for k in range(t.ndim))
                raise ValueError(f"{what}: a non-contiguous DLPack array (strides {strides} in elements)")
            want *= shape[i]
    address = (t.data or 0) + t.byte_offset
    return address, count, code, f"cuda:{t.device.device_id}", capsule
