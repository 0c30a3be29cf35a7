"""Every array the Python layer hands to C is checked before anything is sent: run under tsrun
(tsrun -np N python3 buffers_check.py). For each collective and each tensor algorithm (and
SelSync, COVAP, residuals): a wrong dtype, a short buffer, a non-contiguous view and a
read-only array are refused naming what was wrong, and the caller's memory is left as it was
(C trusts the pointer and count it gets: a float64 array of a float32 tensor's count used to
be half zeroed, a float16 one written past its end)."""
import numpy as np

import tessera
from checks import Checks

checks = Checks()
expect, raises = checks.expect, checks.raises
comm = tessera.Communicator()
n, me = comm.size, comm.rank
try:
    import torch
except ImportError:
    torch = None


def read_only(array):
    array = array.copy()
    array.flags.writeable = False
    return array


def refused(fn, needle, what, *guarded):
    """fn() raises ValueError naming `needle`, and the arrays in `guarded` keep their bytes."""
    before = [g.copy() for g in guarded]
    raises(ValueError, needle, fn, what)
    expect(all(np.array_equal(b, g) for b, g in zip(before, guarded)), f"{what}: memory changed")


f32 = np.arange(8 * n, dtype=np.float32)
strided = np.zeros((8 * n, 2), dtype=np.float32)[:, 0]

# The dense collectives: data and out.
refused(lambda: comm.allreduce(f32, out=np.zeros(8 * n, np.float64)), "float64", "allreduce out dtype")
refused(lambda: comm.allreduce(f32, out=np.zeros(8 * n - 1, np.float32)), "elements", "allreduce short out")
refused(lambda: comm.allreduce(strided), "non-contiguous", "allreduce strided data")
refused(lambda: comm.allreduce(f32, out=np.zeros((8 * n, 2), np.float32)[:, 1]), "non-contiguous",
        "allreduce strided out")
refused(lambda: comm.allreduce(read_only(f32)), "read-only", "allreduce read-only in place")
refused(lambda: comm.allreduce(f32, out=read_only(f32)), "read-only", "allreduce read-only out")
both = np.zeros(8 * n + 4, np.float32)
refused(lambda: comm.allreduce(both[:8 * n], out=both[4:]), "overlaps", "allreduce overlapping out", both)
refused(lambda: comm.allreduce(np.zeros(4, np.uint8)), "uint8", "allreduce uint8")
refused(lambda: comm.allgather(f32, out=np.zeros(8 * n * n, np.int32)), "int32", "allgather out dtype")
refused(lambda: comm.allgather(f32, out=np.zeros(8 * n * n - 1, np.float32)), "elements", "allgather short out")
refused(lambda: comm.allgather(strided), "non-contiguous", "allgather strided data")
refused(lambda: comm.allgather(f32, out=read_only(np.zeros(8 * n * n, np.float32))), "read-only",
        "allgather read-only out")
refused(lambda: comm.broadcast(np.zeros(4, np.uint16)), "uint16", "broadcast dtype")
refused(lambda: comm.broadcast(strided), "non-contiguous", "broadcast strided")
refused(lambda: comm.broadcast(read_only(f32)), "read-only", "broadcast read-only")
refused(lambda: comm.reduce_scatter(f32, out=np.zeros(8, np.float16)), "float16", "reduce_scatter out dtype")
refused(lambda: comm.reduce_scatter(f32, out=np.zeros(7, np.float32)), "elements", "reduce_scatter short out")
refused(lambda: comm.reduce_scatter(np.zeros((8 * n, 2), np.float32)[:, 0]), "non-contiguous",
        "reduce_scatter strided data")
refused(lambda: comm.reduce_scatter(f32, out=read_only(np.zeros(8, np.float32))), "read-only",
        "reduce_scatter read-only out")
refused(lambda: comm.reduce_scatter(f32, out=f32[1:9]), "overlaps", "reduce_scatter out inside data", f32)
misaligned = np.frombuffer(bytearray(4 * 9), dtype=np.uint8)[1:33].view(np.float32)
refused(lambda: comm.allreduce(np.copy(misaligned), out=misaligned), "misaligned", "allreduce misaligned out")
raises(TypeError, "list", lambda: comm.allreduce([1.0]), "a list")
comm.barrier()  # every rank refused the same calls; nothing was posted

# Each tensor algorithm: data of the declared count in the wrong dtype, a short buffer, a
# strided view, a read-only array; the residual setter likewise.
count = 64
algorithms = {"dense": {}, "marsit": {"algorithm": "marsit"}, "compressed": {"algorithm": "compressed",
              "compressor": "topk", "k": 8}, "spardl": {"algorithm": "spardl", "density": 0.25}}
for name, params in algorithms.items():
    with tessera.CompressedTensor(comm, f"{name}.w", count, **params) as t:
        what = f"{name} tensor"
        wide, narrow = np.arange(count, dtype=np.float64), np.arange(count, dtype=np.float16)
        refused(lambda: t.allreduce(wide), "dtype float64, declared float32", f"{what} float64 data", wide)
        refused(lambda: t.allreduce(narrow), "dtype float16, declared float32", f"{what} float16 data", narrow)
        refused(lambda: t.allreduce(np.zeros(count - 1, np.float32)), "63 elements, declared with 64",
                f"{what} short data")
        refused(lambda: t.allreduce(np.zeros((count, 2), np.float32)[:, 0]), "non-contiguous", f"{what} strided")
        refused(lambda: t.allreduce(read_only(np.zeros(count, np.float32))), "read-only", f"{what} read-only")
        refused(lambda: t.set_residual(np.zeros(count, np.float64)), "float64", f"{what} residual dtype")
        refused(lambda: t.set_residual(np.zeros(count + 1, np.float32)), "65 elements", f"{what} long residual")
        refused(lambda: t.set_residual(np.zeros((count, 2), np.float32)[:, 0]), "non-contiguous",
                f"{what} strided residual")
        if torch is not None:  # a float64 torch tensor of the declared count
            t64 = torch.arange(count, dtype=torch.float64)
            raises(ValueError, "float64", lambda: t.allreduce(t64), f"{what} torch float64")
            expect(torch.equal(t64, torch.arange(count, dtype=torch.float64)), f"{what}: torch tensor changed")
            raises(ValueError, "non-contiguous", lambda: t.allreduce(torch.zeros(2, count).t()),
                   f"{what} torch non-contiguous")
        good = np.full(count, me + 1.0, np.float32)
        t.allreduce(good)  # the tensor still works, in step on every rank
        expect(t.steps == 1, f"{what}: {t.steps} steps after the refusals")

# SelSync and COVAP buckets, and data injection.
with tessera.SelSync(comm, [count], delta=0) as sync:
    for bad, needle in [(np.zeros(count, np.float64), "float64"), (np.zeros(count - 1, np.float32), "elements"),
                        (np.zeros((count, 2), np.float32)[:, 0], "non-contiguous"),
                        (read_only(np.zeros(count, np.float32)), "read-only")]:
        refused(lambda: sync.step(1.0, [bad]), needle, f"selsync bucket ({needle})", bad)
with tessera.Covap(comm, [count], interval=1) as covap:
    covap.begin_step()
    for bad, needle in [(np.zeros(count, np.float16), "float16"), (np.zeros(count + 1, np.float32), "elements"),
                        (np.zeros((count, 2), np.float32)[:, 0], "non-contiguous"),
                        (read_only(np.zeros(count, np.float32)), "read-only")]:
        refused(lambda: covap.bucket_ready(0, bad), needle, f"covap bucket ({needle})", bad)
    covap.bucket_ready(0, np.ones(count, np.float32))
    covap.finish_step()
refused(lambda: tessera.inject(comm, 1, 0, 1.0, np.zeros(3, np.float64)), "float64", "inject share dtype")
refused(lambda: tessera.inject(comm, 1, 0, 1.0, strided), "non-contiguous", "inject strided share")

# Scalars: ctypes would wrap a count (2**64 + 5 reaching C as 5) or cut a float (2.7 as 2).
raises(ValueError, "count 18446744073709551621: out of range (0..1099511627776)",
       lambda: tessera.CompressedTensor(comm, "wrap", 2**64 + 5), "a tensor count past 2^40")
raises(ValueError, "count -1: out of range", lambda: tessera.CompressedTensor(comm, "neg", -1), "a negative count")
raises(TypeError, "count 8.0: not an integer (float)", lambda: tessera.CompressedTensor(comm, "f", 8.0),
       "a float count")
raises(TypeError, "tensor name 7: not a str", lambda: tessera.CompressedTensor(comm, 7, 8), "a name not a str")
raises(ValueError, "contains a NUL", lambda: tessera.CompressedTensor(comm, "a\0b", 8), "a name with NUL")
raises(ValueError, "nbytes 18446744073709551621: out of range", lambda: comm.estimate("allreduce", 2**64 + 5),
       "an estimate past 2^63")
raises(TypeError, "buckets[0] 100.0: neither an element count nor an array", lambda: tessera.SelSync(comm, [100.0]),
       "a float bucket count")
raises(ValueError, "buckets[1] 0: out of range", lambda: tessera.Covap(comm, [4, 0]), "an empty bucket")
raises(TypeError, "broadcast root True: an integer, not a bool", lambda: comm.broadcast(f32.copy(), root=True),
       "a bool root")
raises(ValueError, f"broadcast root {n}: out of range", lambda: comm.broadcast(f32.copy(), root=n), "root = size")
with tessera.Covap(comm, [4, 4], interval=1) as covap:
    raises(TypeError, "covap bucket 0.5: not an integer", lambda: covap.bucket_ready(0.5, np.ones(4, np.float32)),
           "a float bucket index")
# NumPy integers are integers; an array's shape gives its count (a PyTorch tensor's too).
root = np.int64(n - 1)
value = np.full(4, float(me), np.float32)
comm.broadcast(value, root=root)
expect(np.all(value == n - 1), f"broadcast from a NumPy integer root: {value}")
with tessera.SelSync(comm, [np.zeros((3, 5), np.float32), np.int32(7)] + ([torch.zeros(2, 4)] if torch else []),
                     delta=0) as sync:
    expect(sync._counts == [15, 7] + ([8] if torch else []), f"bucket counts from arrays: {sync._counts}")
# A torch.Tensor subclass is a tensor (one was read through DLPack: in place refused as
# read-only, bfloat16 refused); "float" names float32 in torch, float64 in NumPy: refused.
if torch:
    class Mine(torch.Tensor):
        pass
    for torch_dtype in (torch.float32, torch.bfloat16):
        sub = torch.full((4,), float(me), dtype=torch_dtype).as_subclass(Mine)
        comm.allreduce(sub)
        expect(sub.float().tolist() == [n * (n - 1) / 2] * 4, f"a {torch_dtype} tensor subclass in place: {sub}")
raises(ValueError, "dtype 'float' is ambiguous", lambda: tessera.CompressedTensor(comm, "f", 8, dtype="float"),
       "dtype 'float'")
# reduce_scatter in place: out is data's block `rank` (as the C API takes it).
data = np.full(4 * n, 1.0, np.float32)
block = data[4 * me:4 * me + 4]
comm.reduce_scatter(data, out=block)
expect(np.all(block == n), f"reduce_scatter into its own block: {block}")

comm.close()
checks.finish(me, n, "python buffers")
