"""CompressedTensor's declaration and state from Python: run under tsrun (tsrun -np N python3
tensor_check.py). dtypes as names, NumPy and torch dtypes (the C side says which algorithm
takes which); what a result is (the `result` property, op="avg"|"sum" for every algorithm);
residuals read, set and permuted when a buffer is re-laid-out (DDP's bucket re-layout), and
one live tensor per name."""
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

# dtypes: a name, a NumPy type or dtype, a torch dtype; dense takes any floating type.
for dtype, array in [("float32", np.float32), (np.float64, np.float64), (np.dtype("float16"), np.float16)]:
    with tessera.CompressedTensor(comm, f"d.{np.dtype(array).name}", 10, dtype=dtype) as t:
        g = np.full(10, me, dtype=array)
        t.allreduce(g)
        expect(t.dtype == np.dtype(array).name and np.all(g == (n - 1) / 2), f"dense {t.dtype}: {g[0]}")
raises(ValueError, "complex64", lambda: tessera.CompressedTensor(comm, "c", 4, dtype="complex64"), "complex dtype")
raises(tessera.NotSupportedError, "float32", lambda: tessera.CompressedTensor(
    comm, "m", 4, dtype="bfloat16", algorithm="marsit"), "marsit bfloat16")
raises(tessera.NotSupportedError, "float32", lambda: tessera.CompressedTensor(
    comm, "s", 4, dtype=np.float64, algorithm="spardl"), "spardl float64")
raises(tessera.InvalidArgumentError, "floating", lambda: tessera.CompressedTensor(
    comm, "i", 4, dtype=np.int32), "dense int32")
if torch is not None:
    with tessera.CompressedTensor(comm, "t.f32", 10, dtype=torch.float32, algorithm="marsit") as t:
        g = torch.linspace(-1, 1, 10) * (me + 1)
        t.allreduce(g)
        expect(t.dtype == "float32" and torch.all(g.abs() == g[0].abs()).item(), "marsit with torch.float32")
    with tessera.CompressedTensor(comm, "t.bf16", 10, dtype=torch.bfloat16) as t:
        h = torch.full((10,), float(2 * me), dtype=torch.bfloat16)
        t.allreduce(h)
        expect(t.dtype == "bfloat16" and torch.all(h == float(n - 1)).item(), f"dense bfloat16: {h[0]}")
        raises(ValueError, "declared bfloat16", lambda: t.allreduce(torch.zeros(10, dtype=torch.float16)),
               "bfloat16 tensor given float16")

# The registry's names: the four families, dense first, then presets naming their family; a
# preset runs with its defaults (topk: k = 1%).
table = tessera.tensor_algorithms()
names = [row[0] for row in table]
expect(names[:4] == ["dense", "marsit", "compressed", "spardl"] and len(set(names)) == len(names), f"names {names}")
expect(all(family in names[:4] for _, family, _, _ in table), "every family is a family of the table")
expect(dict((name, family) for name, family, _, _ in table).get("onebit") == "compressed", "onebit runs compressed")
with tessera.CompressedTensor(comm, "preset.topk", 1000, algorithm="topk") as t:
    expect(t.algorithm == "compressed:ef(topk(k=10))", f"topk preset: {t.algorithm}")
raises(tessera.InvalidArgumentError, "algorithm=topk sets compressor=topk", lambda: tessera.CompressedTensor(
    comm, "preset.bad", 8, algorithm="topk", compressor="randomk"), "a preset's own key")

# What a result is, and op= for every algorithm: the other kind is the same step scaled by N.
x = np.arange(16, dtype=np.float32) - 3 * me
want_sum = sum(np.arange(16, dtype=np.float64) - 3 * r for r in range(n))
kinds = {"dense": ({}, "average"), "marsit": ({"algorithm": "marsit", "seed": 5}, "average"),
         "compressed": ({"algorithm": "compressed", "compressor": "none"}, "average"),
         "spardl": ({"algorithm": "spardl", "density": 1}, "sum")}
for name, (params, native) in kinds.items():
    results = {}
    for op in (None, "avg", "sum"):
        with tessera.CompressedTensor(comm, f"{name}.{op}", 16, op=op, **params) as t:
            expect(t.result == (native if op is None else {"avg": "average", "sum": "sum"}[op]),
                   f"{name} op={op}: result {t.result}")
            g = x.copy()
            t.allreduce(g)
            results[op] = g
    expect(np.array_equal(results[None], results["avg" if native == "average" else "sum"]),
           f"{name}: the default is its own kind")
    if name == "spardl":
        expect(np.array_equal(results["avg"], results["sum"] / np.float32(n)), f"{name}: avg = sum / N")
    else:
        expect(np.array_equal(results["sum"], results["avg"] * np.float32(n)), f"{name}: sum = avg x N")
    if name != "marsit":  # exact algorithms: against the reference
        expect(np.allclose(results["sum"], want_sum, atol=1e-4), f"{name}: op=sum is the sum")
raises(tessera.InvalidArgumentError, "op=max", lambda: tessera.CompressedTensor(comm, "o", 4, op="max"),
       "op=max")

# One live tensor per name and communicator; closing frees the name.
first = tessera.CompressedTensor(comm, "fc1.weight", 8)
raises(tessera.InvalidArgumentError, "fc1.weight", lambda: tessera.CompressedTensor(
    comm, "fc1.weight", 8, algorithm="spardl"), "a second live tensor of that name")
first.close()
tessera.CompressedTensor(comm, "fc1.weight", 8, algorithm="spardl").close()

# Residuals follow a re-laid-out buffer. A bucket holds parameters a (5), b (3), c (4); after
# the first step DDP re-orders them c, a, b (same index, same size): permute_residual moves
# each parameter's residual to its new place, so the next step adds it to the same parameter.
sizes = {"a": 5, "b": 3, "c": 4}
with tessera.CompressedTensor(comm, "bucket0", 12, algorithm="spardl", density=0.25) as t:
    grad = np.arange(1, 13, dtype=np.float32) * (1 if me % 2 else -1) + me
    t.allreduce(grad)
    old = t.residual()
    expect(np.any(old != 0), "spardl dropped something into the residual")
    index = tessera.relayout_index(["a", "b", "c"], ["c", "a", "b"], sizes)
    expect(index.tolist() == [8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7], f"relayout index {index.tolist()}")
    t.permute_residual(index)
    new = t.residual()
    expect(np.array_equal(new[4:9], old[0:5]) and np.array_equal(new[0:4], old[8:12])
           and np.array_equal(new[9:12], old[5:8]), "each parameter's residual moved with it")
    raises(ValueError, "permutation", lambda: t.permute_residual(np.zeros(12, np.int64)), "index not a permutation")
    raises(ValueError, "12 integers", lambda: t.permute_residual(np.arange(11)), "index too short")
    t.set_residual(np.zeros(12, np.float32))
    expect(not np.any(t.residual()), "set_residual(zeros)")
    if torch is not None:
        t.set_residual(torch.full((12,), float(me)))
        expect(np.all(t.residual() == me), "set_residual from a torch tensor")
raises(ValueError, "same pieces", lambda: tessera.relayout_index(["a"], ["b"], {"a": 1, "b": 1}),
       "relayout of different pieces")
with tessera.CompressedTensor(comm, "dense.r", 4) as t:
    raises(tessera.InvalidArgumentError, "dense", lambda: t.set_residual(np.ones(4, np.float32)),
           "a dense tensor keeps no residual")

comm.close()
checks.finish(me, n, "python tensors")
