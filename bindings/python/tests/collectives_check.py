"""The Python layer over real UCX: run under tsrun (tsrun -np N python3 collectives_check.py).
Every collective, element type and reduction against a NumPy reference of all ranks' inputs,
non-blocking requests, PyTorch tensors, compressed tensors, and the errors bad input gets (CUDA
arrays' too: on a machine without a GPU, refused by the C library).
Exits non-zero on any failed check (each rank prints its own)."""
import sys

import numpy as np

import tessera
from checks import Checks

checks = Checks()
expect, raises = checks.expect, checks.raises


def inputs(rank, count, dtype, op):
    """Rank r's input: small values, so every reduction is exact in every type."""
    j = np.arange(count)
    if op == "prod":
        return ((j + rank) % 2 + 1).astype(dtype)           # 1 or 2
    return (((j * 7 + rank * 3) % 11) - 5).astype(dtype)      # -5..5


def reference(size, count, dtype, op):
    stack = np.stack([inputs(r, count, dtype, op).astype(np.float64) for r in range(size)])
    result = {"sum": stack.sum(0), "avg": stack.sum(0) / size, "min": stack.min(0),
              "max": stack.max(0), "prod": stack.prod(0)}[op]
    return result


comm = tessera.Communicator()
n, me = comm.size, comm.rank
counts = [1, n + 1, 4099, 1 << 18]

# allreduce: every type and reduction, in place and out of place.
for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64):
    for op in ("sum", "avg", "min", "max", "prod"):
        if op == "avg" and np.issubdtype(dtype, np.integer):
            continue
        for count in counts:
            data = inputs(me, count, dtype, op)
            want = reference(n, count, dtype, op)
            got = comm.allreduce(data, op=op)
            expect(got is data, "in-place allreduce returns its array")
            tol = 1e-2 if dtype == np.float16 else 1e-6
            expect(np.allclose(got.astype(np.float64), want, rtol=tol, atol=tol),
                   f"allreduce {np.dtype(dtype).name} {op} count {count}: wrong values")
            out = np.zeros(count, dtype=dtype)
            comm.allreduce(inputs(me, count, dtype, op), out=out, op=op)
            expect(np.allclose(out.astype(np.float64), want, rtol=tol, atol=tol),
                   f"allreduce {np.dtype(dtype).name} {op} count {count} out of place")

# The bitwise reductions: integers bit by bit (signs too); floats refused, naming both.
for dtype in (np.int32, np.int64):
    for op, fold in (("band", np.bitwise_and), ("bor", np.bitwise_or), ("bxor", np.bitwise_xor)):
        pattern = [((r + 1) * 0x2545F491 ^ np.arange(9, dtype=np.int64) * 0x9E3779B9) % (1 << 32) - (1 << 31)
                   for r in range(n)]
        got = comm.allreduce(pattern[me].astype(dtype), op=op)
        want = fold.reduce(np.stack(pattern).astype(dtype), axis=0)
        expect(np.array_equal(got, want), f"allreduce {np.dtype(dtype).name} {op}: {got} != {want}")
raises(tessera.InvalidArgumentError, "op bor is bitwise: it takes int32 and int64, not f32",
       lambda: comm.allreduce(np.zeros(3, dtype=np.float32), op="bor"), "bitwise op on floats")

# allgather, broadcast, reduce_scatter, barrier.
mine = np.full(5, me, dtype=np.int32) + np.arange(5, dtype=np.int32)
gathered = comm.allgather(mine)
expect(gathered.tolist() == [r + j for r in range(n) for j in range(5)], "allgather in rank order")
root = n - 1
b = np.arange(1000, dtype=np.float64) * (1 if me == root else 0) - (0 if me == root else 7)
comm.broadcast(b, root=root)
expect(np.array_equal(b, np.arange(1000, dtype=np.float64)), f"broadcast from rank {root}")
block = 1001
rs = comm.reduce_scatter(np.arange(n * block, dtype=np.float32) + me)
want = np.arange(me * block, (me + 1) * block, dtype=np.float64) * n + n * (n - 1) / 2
expect(np.array_equal(rs.astype(np.float64), want), "reduce_scatter gives block `rank`")
# Shapes: all-gather stacks along the first dimension, reduce-scatter takes one block of it.
grid = np.full((2, 3), me, dtype=np.float32)
stacked = comm.allgather(grid)
expect(stacked.shape == (2 * n, 3) and stacked[2 * n - 1, 2] == n - 1, f"allgather shape {stacked.shape}")
expect(comm.allgather(np.array(me, dtype=np.int64)).tolist() == list(range(n)), "allgather of a 0-d array")
part = comm.reduce_scatter(np.ones((n * 2, 5), dtype=np.float64))
expect(part.shape == (2, 5) and np.all(part == n), f"reduce_scatter shape {part.shape}")
flat = comm.reduce_scatter(np.ones((n + 1, n), dtype=np.float64))  # n does not divide n + 1 (n > 1)
expect(flat.shape == ((n + 1,) if n > 1 else (2, 1)), f"reduce_scatter of shape ({n + 1}, {n}): {flat.shape}")
empty = comm.allreduce(np.zeros(0, dtype=np.float32))
expect(empty.size == 0, "an empty allreduce")
comm.barrier()

# split: halves by rank parity, ranked in reverse (key -rank); the last rank takes no part.
last = n - 1
half = comm.split(None if me == last and n > 1 else me % 2, key=-me)
if half is None:
    expect(me == last and n > 1, "split gave None to a rank with a color")
else:
    members = sorted((r for r in range(n) if r % 2 == me % 2 and not (r == last and n > 1)), reverse=True)
    expect((half.rank, half.size) == (members.index(me), len(members)), f"split: rank {half.rank} of {half.size}")
    expect(half.allgather(np.array([me], dtype=np.int64)).tolist() == members, "split: members in key order")
    half.close()
raises(ValueError, "color -3", lambda: comm.split(-3), "a negative color")
# Ints past a C int are refused, not wrapped (2**32 + 1 would reach the library as 1).
raises(ValueError, "split: color 4294967297", lambda: comm.split(2**32 + 1), "a color past a C int")
raises(ValueError, "send: peer 4294967297", lambda: comm.send(np.zeros(1, np.float32), 2**32 + 1), "a peer past a C int")
raises(ValueError, "recv: tag 4294967299", lambda: comm.recv(np.zeros(1, np.float32), 0, tag=2**32 + 3), "a big tag")
raises(ValueError, "timeout_ms 4294967301", lambda: setattr(comm, "timeout_ms", 2**32 + 5), "a big timeout")
raises(ValueError, "nbytes -1", lambda: comm.estimate("allreduce", -1), "a negative size")
# revoke: the last rank revokes a communicator of every rank; each rank's next call raises.
every = comm.split(0)
if me == n - 1:
    every.revoke()
raises(tessera.RevokedError, f"rank {n - 1} revoked the communicator", every.barrier, "a barrier after a revoke")
every.close()

# send/recv around the ring (two tags, received in the other order than sent); the timeout.
if n > 1:
    nxt, prev = (me + 1) % n, (me - 1) % n
    got_a, got_b = np.zeros(3, dtype=np.int32), np.zeros(1000, dtype=np.float64)
    rb = comm.recv(got_b, prev, tag=2, async_op=True)
    ra = comm.recv(got_a, prev, tag=1, async_op=True)
    comm.send(np.arange(3, dtype=np.int32) + me, nxt, tag=1)
    comm.send(np.full(1000, me, dtype=np.float64), nxt, tag=2)
    expect(ra.wait() is got_a and rb.wait() is got_b, "recv's request returns out")
    expect(got_a.tolist() == [prev, prev + 1, prev + 2] and np.all(got_b == prev), "send/recv ring")
    raises(tessera.TesseraError, f"peer {me} is this rank itself", lambda: comm.send(got_a, me), "a send to itself")
saved = comm.timeout_ms
comm.timeout_ms = 12345
expect(comm.timeout_ms == 12345, f"timeout_ms set: {comm.timeout_ms}")
comm.timeout_ms = saved

# CUDA memory (__cuda_array_interface__, as CuPy's arrays): checked as host arrays are, then
# staged by the C library, which refuses it without a CUDA device, before anything is sent.
class DeviceArray:
    def __init__(self, count, typestr="<f4", strides=None, readonly=False, address=1 << 40, stream=None):
        self.__cuda_array_interface__ = {"shape": (count,), "typestr": typestr, "strides": strides,
                                         "data": (address, readonly), "version": 3, "stream": stream}


# The producer's stream, which the collective's read of the array waits for (tsr_comm_set_stream).
from tessera._buffers import as_buffer  # noqa: E402
expect([as_buffer(DeviceArray(4, stream=s), "x", False, cuda=True).stream for s in (None, 1, 0x7f00)] ==
       [None, 1, 0x7f00], "the stream of __cuda_array_interface__")


raises(ValueError, "typestr '|b1' is not accepted", lambda: comm.allreduce(DeviceArray(4, "|b1")), "a bool CUDA array")
raises(ValueError, "non-contiguous CUDA array", lambda: comm.allreduce(DeviceArray(4, strides=(8,))),
       "a strided CUDA array")
raises(ValueError, "read-only CUDA array", lambda: comm.allreduce(DeviceArray(4, readonly=True)),
       "a read-only CUDA array written in place")
raises(ValueError, "misaligned", lambda: comm.allreduce(DeviceArray(4, address=(1 << 40) + 2)), "a misaligned one")
raises(ValueError, "both must be on one side", lambda: comm.allreduce(np.zeros(4, np.float32), out=DeviceArray(4)),
       "host data into a CUDA out")
raises(ValueError, "pass out=", lambda: comm.allgather(DeviceArray(4)), "an allgather without out of a CUDA array")


def on_device(index, count):
    """A DeviceArray that says which device it is on (as CuPy's: .device.id)."""
    array = DeviceArray(count)
    array.device = type("Device", (), {"id": index})()
    return array


raises(ValueError, "on cuda:1, the input on cuda:0 (one call's buffers are on one device)",
       lambda: comm.allreduce(on_device(0, 4), out=on_device(1, 4)), "an allreduce from one device into another")
raises(ValueError, "on cuda:0, the input on cuda:1", lambda: comm.allgather(on_device(1, 4), out=on_device(0, 4 * n)),
       "an allgather from one device into another")
raises(ValueError, "this call takes host memory", lambda: comm.send(DeviceArray(4), (me + 1) % n),
       "a CUDA array to send")
try:
    import torch
    gpu = torch.cuda.is_available()
except ImportError:
    gpu = False
if not gpu:
    raises(tessera.NotSupportedError, "need a CUDA device", lambda: comm.allreduce(DeviceArray(4)),
           "a CUDA array without a CUDA device")
    expect(comm.allreduce(np.ones(3, np.float32)).tolist() == [n] * 3, "host memory again after the refusal")
if not gpu and "torch" in sys.modules:
    # The array's device is made current for the post (the C library opens its staging and
    # records the caller's event on the current device): entered before the C call, left after
    # it, failed or not. torch's device switch stood in for, as there is no device here.
    entered = []

    class FakeDevice:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            entered.append(("in", self.index))

        def __exit__(self, *exc):
            entered.append(("out", self.index))

    saved_device, saved_available = torch.cuda.device, torch.cuda.is_available
    torch.cuda.device, torch.cuda.is_available = FakeDevice, lambda: True
    try:
        raises(tessera.NotSupportedError, "need a CUDA device", lambda: comm.allreduce(on_device(1, 4)),
               "a CUDA array of device 1")
        from tessera._buffers import current_device  # noqa: E402
        with current_device(torch.device("cuda", 3)), current_device(None), current_device("cuda"):
            pass
    finally:
        torch.cuda.device, torch.cuda.is_available = saved_device, saved_available
    expect(entered == [("in", 1), ("out", 1), ("in", 3), ("out", 3)], f"the buffer's device made current: {entered}")

# DLPack producers (JAX's arrays, TensorFlow's tensors), read-only as numpy.from_dlpack makes
# them: host ones read through NumPy; CUDA ones from their DLTensor, checked as CUDA arrays
# are, refused without a device.
class HostProducer:
    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


class DeviceProducer:
    """A DLManagedTensor made here, naming "CUDA memory" at a made-up address."""

    def __init__(self, count, code=2, bits=32, strides=None, device=2):
        import ctypes
        from tessera import _dlpack
        self.shape = (ctypes.c_int64 * 1)(count)
        self.strides = (ctypes.c_int64 * 1)(*strides) if strides else None
        self.managed = (ctypes.c_byte * (ctypes.sizeof(_dlpack.DLTensor) + 16))()
        t = _dlpack.DLTensor.from_buffer(self.managed)
        t.data, t.device.device_type, t.ndim = 1 << 40, device, 1
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        if self.strides:
            t.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.capsule = new(ctypes.addressof(self.managed), b"dltensor", None)
        self.device = device

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (self.device, 0)


host, out = HostProducer(np.full(5, float(me), np.float32)), np.zeros(5, np.float32)
expect(comm.allreduce(host, out=out) is out and out.tolist() == [n * (n - 1) / 2] * 5 and host.array[0] == me,
       "a host DLPack producer into out=")
raises(ValueError, "(DLPack arrays are read-only: pass out=)", lambda: comm.allreduce(host), "in place into DLPack")
raises(ValueError, "(DLPack arrays are read-only: pass out=)", lambda: comm.allreduce(DeviceProducer(4)),
       "in place into a DLPack CUDA array")
raises(ValueError, "DLPack dtype (code 1, bits 8, lanes 1) is not accepted",
       lambda: comm.allreduce(DeviceProducer(4, code=1, bits=8)), "a uint8 DLPack CUDA array")
raises(ValueError, "non-contiguous DLPack array (strides (2,) in elements)",
       lambda: comm.allreduce(DeviceProducer(4, strides=[2])), "a strided DLPack CUDA array")
raises(ValueError, "DLPack): this call takes host memory", lambda: comm.send(DeviceProducer(4), (me + 1) % n),
       "a DLPack CUDA array to send")
raises(ValueError, "DLPack device type 7", lambda: comm.allreduce(DeviceProducer(4, device=7)), "a Vulkan array")
if not gpu:
    raises(tessera.NotSupportedError, "need a CUDA device",
           lambda: comm.allreduce(DeviceProducer(4), out=DeviceArray(4)), "a DLPack CUDA array without a CUDA device")

# Non-blocking: several in flight, then waited; test() until done.
arrays = [np.full(1 << 16, me + k, dtype=np.float32) for k in range(3)]
requests = [comm.allreduce(a, async_op=True) for a in arrays]
for k, (a, r) in enumerate(zip(arrays, requests)):
    expect(r.wait() is a, "wait() returns the result")
    expect(np.all(a == n * k + n * (n - 1) / 2), f"non-blocking allreduce {k}")
r = comm.barrier(async_op=True)
while not r.test():
    pass
expect(r.test(), "test() stays true after completion")

# PyTorch CPU tensors, bfloat16 included.
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    t = torch.full((64, 3), float(me + 1))
    comm.allreduce(t, op="avg")
    expect(torch.all(t == (n + 1) / 2).item(), "torch float32 allreduce avg")
    h = torch.full((100,), float(me), dtype=torch.bfloat16)
    comm.allreduce(h)
    expect(torch.all(h == float(n * (n - 1) / 2)).item(), "torch bfloat16 allreduce")
    g = comm.allgather(torch.tensor([me], dtype=torch.int64))
    expect(isinstance(g, torch.Tensor) and g.tolist() == list(range(n)), "torch allgather")

# Compressed tensors: dense averages exactly; Marsit is the same on every rank and counts steps.
grad = np.linspace(-1, 1, 4096, dtype=np.float32) * (me + 1)
with tessera.CompressedTensor(comm, "dense.w", grad.size, algorithm="dense") as dense:
    dense.allreduce(grad)
    expect(np.allclose(grad, np.linspace(-1, 1, 4096) * (n + 1) / 2, atol=1e-5), "dense tensor averages")
    expect(dense.algorithm == "dense" and dense.steps == 1, f"dense tensor info {dense.algorithm} {dense.steps}")
with tessera.CompressedTensor(comm, "marsit.w", 4096, algorithm="marsit", topology="ring") as marsit:
    for step in range(2):
        g = np.sin(np.arange(4096, dtype=np.float32) * (me + 1 + step))
        marsit.allreduce(g)
        everyone = comm.allgather(g)
        expect(all(np.array_equal(everyone[r * 4096:(r + 1) * 4096], g) for r in range(n)),
               f"marsit step {step}: ranks disagree")
    expect(marsit.steps == 2 and marsit.algorithm.startswith("marsit"),
           f"marsit info {marsit.algorithm} {marsit.steps}")
    expect(np.all(np.isfinite(marsit.residual())), "marsit residual finite")
raises(tessera.InvalidArgumentError, "topology", lambda: tessera.CompressedTensor(
    comm, "bad.w", 16, algorithm="marsit", topology="mobius"), "bad tensor parameter")

# Bad input: refused before anything is sent, naming what was wrong.
x = np.zeros((8, 8), dtype=np.float32)
raises(ValueError, "non-contiguous", lambda: comm.allreduce(x[:, 0]), "strided array")
raises(ValueError, "uint8", lambda: comm.allreduce(np.zeros(4, np.uint8)), "unsupported dtype")
ro = np.zeros(4, np.float32)
ro.flags.writeable = False
raises(ValueError, "read-only", lambda: comm.allreduce(ro), "read-only in place")
raises(ValueError, "'mean'", lambda: comm.allreduce(np.zeros(4, np.float32), op="mean"), "unknown op")
raises(ValueError, f"root {n}", lambda: comm.broadcast(np.zeros(4), root=n), "broadcast root out of range")
raises(ValueError, "equal blocks", lambda: comm.reduce_scatter(np.zeros(n * 3 + 1, np.float32)),
       "reduce_scatter uneven")
raises(TypeError, "list", lambda: comm.allreduce([1.0, 2.0]), "a list")
raises(ValueError, "out", lambda: comm.allreduce(np.zeros(4, np.float32), out=np.zeros(5, np.float32)),
       "out of the wrong length")
raises(tessera.InvalidArgumentError, "TSR_TIMEOUT_MS", lambda: tessera.Communicator(timeout_ms="soon"),
       "bad setting")

# Last (it breaks the communicator): ranks that disagree on the count all hear of it, in that
# allreduce or in the barrier before it, if it is still finishing on this rank when the
# abort notice comes (the notice fails whatever is pending).
try:
    comm.barrier()
    comm.allreduce(np.zeros(10 + me, np.float32))
    expect(False, "mismatched counts: no error")
except tessera.MismatchError as e:
    expect("count differs" in str(e), f"mismatch message: {e}")
except tessera.TesseraError as e:
    expect(False, f"mismatched counts: {type(e).__name__}: {e}")
# Later collectives fail too: "unusable", or that very mismatch on a rank that failed in the
# barrier (the mismatched allreduce is then its next collective).
try:
    comm.barrier()
    expect(False, "a collective after the failed one: no error")
except (tessera.AbortedError, tessera.MismatchError) as e:
    expect("unusable" in str(e) or "count differs" in str(e), f"after the failure: {e}")
comm.close()

checks.finish(me, n, "python collectives")
