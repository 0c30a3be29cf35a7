"""ctypes declarations of libtessera.so (bindings/c/include/tessera/tessera.h): the only
module that touches the C library."""
import ctypes
import os
import pathlib

# tsr_status_t
OK = 0
IN_PROGRESS = 1

# tsr_dtype_t, tsr_op_t
FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT32, INT64 = range(6)
OPS = {"sum": 0, "avg": 1, "min": 2, "max": 3, "prod": 4, "band": 5, "bor": 6, "bxor": 7}
# tsr_memory_t
MEM_HOST, MEM_CUDA = 0, 1


def _library_path():
    """TESSERA_LIBRARY, else the package's own (pip install: tessera/_lib/libtessera.so.M.m),
    else the library of the install prefix the package sits in (cmake --install puts the
    package in LIBDIR/tessera/python and the library in LIBDIR), else the build of the source
    checkout it sits in (bindings/python/tessera, build/lib). Nowhere else: a libtessera.so in
    some parent folder or on the linker's path need not be ours, and loading it runs its code."""
    explicit = os.environ.get("TESSERA_LIBRARY")
    if explicit:
        return explicit
    package = pathlib.Path(__file__).resolve().parent
    wheel = sorted((package / "_lib").glob("libtessera.so*"))
    if wheel:
        return str(wheel[0])
    above = package.parents[1]  # LIBDIR/tessera or <checkout>/bindings
    root = package.parents[2]   # LIBDIR or <checkout>
    if package.parent.name == "python" and above.name == "tessera":
        # libtessera.so comes with the headers (tessera-dev); the runtime has its SONAME file.
        for installed in [root / "libtessera.so"] + sorted(root.glob("libtessera.so.*")):
            if installed.exists():
                return str(installed)
    checkout = package.parent.name == "python" and above.name == "bindings" and \
        (root / "bindings" / "c" / "include" / "tessera" / "tessera.h").exists()
    if checkout:
        built = root / "build" / "lib" / "libtessera.so"
        if built.exists():
            return str(built)
    raise ImportError("tessera: libtessera.so not found beside this package (" + str(package) + "): set "
                      "TESSERA_LIBRARY to its path, install it (cmake --install), or build this checkout "
                      "(cmake --build build)")


class Param(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


def params(pairs):
    """A tsr_param_t array (and its length) from {key: value}; values become text."""
    items = [(str(k).encode(), _text(v).encode()) for k, v in pairs.items()]
    array = (Param * max(1, len(items)))(*[Param(k, v) for k, v in items])
    return array, len(items)


def forget_job_secret():
    """Creating a communicator takes TSR_JOB_SECRET out of the process environment (the C
    library keeps it): drop Python's copy too, so os.environ and the programs it starts do
    not hand it on."""
    os.environ.pop("TSR_JOB_SECRET", None)


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


LIBRARY_PATH = _library_path()
lib = ctypes.CDLL(LIBRARY_PATH)

_P = ctypes.c_void_p
_SIZE = ctypes.c_size_t
_INT = ctypes.c_int
# tsr_request_on_complete's callback: void fn(void* user, tsr_status_t status)
ON_COMPLETE = ctypes.CFUNCTYPE(None, _P, _INT)
_PROTOTYPES = {
    "tsr_comm_init_config": [ctypes.POINTER(_P), ctypes.POINTER(Param), _SIZE],
    "tsr_comm_destroy": [_P],
    "tsr_comm_abort": [_P],
    "tsr_comm_revoke": [_P],
    "tsr_comm_split": [_P, _INT, _INT, ctypes.POINTER(_P)],
    "tsr_comm_shrink": [_P, ctypes.POINTER(_P)],
    "tsr_comm_grow": [_P, ctypes.POINTER(_P)],
    "tsr_comm_join": [ctypes.POINTER(_P)],
    "tsr_tensor_move": [_P, _P],
    "tsr_comm_recovery_ms": [_P, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)],
    "tsr_comm_rank": [_P, ctypes.POINTER(_INT)],
    "tsr_comm_size": [_P, ctypes.POINTER(_INT)],
    "tsr_comm_local_rank": [_P, ctypes.POINTER(_INT)],
    "tsr_comm_bytes_sent": [_P, ctypes.POINTER(ctypes.c_uint64)],
    "tsr_comm_estimate": [_P, ctypes.c_char_p, _SIZE, ctypes.POINTER(ctypes.c_double)],
    "tsr_allreduce": [_P, _P, _P, _SIZE, _INT, _INT, ctypes.POINTER(_P)],
    "tsr_allgather": [_P, _P, _P, _SIZE, _INT, ctypes.POINTER(_P)],
    "tsr_broadcast": [_P, _P, _P, _SIZE, _INT, _INT, ctypes.POINTER(_P)],
    "tsr_reduce_scatter": [_P, _P, _P, _SIZE, _INT, _INT, ctypes.POINTER(_P)],
    "tsr_barrier": [_P, ctypes.POINTER(_P)],
    "tsr_send": [_P, _P, _SIZE, _INT, _INT, _INT, ctypes.POINTER(_P)],
    "tsr_recv": [_P, _P, _SIZE, _INT, _INT, _INT, ctypes.POINTER(_P)],
    "tsr_comm_finalize": [_P],
    "tsr_comm_set_memory_type": [_P, _INT],
    "tsr_comm_set_stream": [_P, _P],
    "tsr_comm_set_thread_buffers": [_P, _INT, _P],
    "tsr_comm_clear_thread_buffers": [_P],
    "tsr_get_version": [ctypes.POINTER(_INT)],
    "tsr_comm_set_timeout": [_P, _INT],
    "tsr_comm_timeout": [_P, ctypes.POINTER(_INT)],
    "tsr_test": [_P],
    "tsr_wait": [_P],
    "tsr_request_free": [_P],
    "tsr_request_on_complete": [_P, ON_COMPLETE, _P],
    "tsr_tensor_create": [_P, ctypes.c_char_p, _SIZE, _INT, ctypes.POINTER(Param), _SIZE,
                          ctypes.POINTER(_P)],
    "tsr_tensor_allreduce": [_P, _P, ctypes.POINTER(_P)],
    "tsr_tensor_info": [_P, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_char_p)],
    "tsr_tensor_residual": [_P, ctypes.POINTER(ctypes.c_float)],
    "tsr_tensor_set_residual": [_P, ctypes.POINTER(ctypes.c_float)],
    "tsr_tensor_result_kind": [_P, ctypes.POINTER(_INT)],
    "tsr_tensor_algorithm": [_SIZE] + [ctypes.POINTER(ctypes.c_char_p)] * 4,
    "tsr_tensor_destroy": [_P],
    "tsr_selsync_create": [_P, ctypes.POINTER(Param), _SIZE, ctypes.POINTER(_SIZE), _SIZE, ctypes.POINTER(_P)],
    "tsr_selsync_step": [_P, ctypes.c_double, ctypes.POINTER(_P), ctypes.POINTER(_INT)],
    "tsr_selsync_stats": [_P, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                          ctypes.POINTER(ctypes.c_uint64)],
    "tsr_selsync_move": [_P, _P],
    "tsr_selsync_destroy": [_P],
    "tsr_selsync_inject": [_P, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_double, _P, _SIZE, _P, _SIZE,
                           ctypes.POINTER(_SIZE)],
    "tsr_covap_create": [_P, ctypes.POINTER(Param), _SIZE, ctypes.POINTER(_SIZE), _SIZE, ctypes.POINTER(_P)],
    "tsr_covap_begin_step": [_P],
    "tsr_covap_bucket_ready": [_P, _SIZE, _P],
    "tsr_covap_finish_step": [_P],
    "tsr_covap_info": [_P, ctypes.POINTER(_INT), ctypes.POINTER(ctypes.c_double)],
    "tsr_covap_move": [_P, _P],
    "tsr_covap_steps": [_P, ctypes.POINTER(ctypes.c_uint64)],
    "tsr_covap_residual": [_P, _SIZE, _P],
    "tsr_covap_destroy": [_P],
}
for _name, _args in _PROTOTYPES.items():
    _fn = getattr(lib, _name)
    _fn.argtypes = _args
    _fn.restype = _INT
lib.tsr_last_error.argtypes = []
lib.tsr_last_error.restype = ctypes.c_char_p
lib.tsr_status_string.argtypes = [_INT]
lib.tsr_status_string.restype = ctypes.c_char_p


def version():
    """The loaded library's version, "MAJOR.MINOR.PATCH" (tsr_get_version)."""
    code = _INT()
    lib.tsr_get_version(ctypes.byref(code))
    return f"{code.value // 10000}.{code.value // 100 % 100}.{code.value % 100}"
