"""train_linear.py: data-parallel training of a linear model with Tessera from Python.

    tsrun -np 4 python3 examples/python/train_linear.py [steps]

Each rank owns a shard of a synthetic regression problem (y = w* . x + noise, NumPy). Every
step it computes its local gradient, averages it with the other ranks through a non-blocking
allreduce (computing the loss meanwhile), and takes an SGD step. The weights start from rank
0's (broadcast) and stay identical on every rank, which the end checks with an allgather.
Exit status 0 only when the loss fell 100-fold and the ranks agree. (The library is found
through TESSERA_LIBRARY, or build/lib/libtessera.so of this checkout; PYTHONPATH must reach
bindings/python.)"""
import sys

import numpy as np

import tessera

DIM, SAMPLES, RATE = 32, 256, 0.1

USAGE = "usage: tsrun -np N python3 train_linear.py [steps]"
if len(sys.argv) > 2 or (len(sys.argv) == 2 and not (sys.argv[1].isdigit() and 1 <= int(sys.argv[1]) <= 1000000)):
    # before the communicator: a usage error on every rank, none waiting for the others
    what = f"steps={sys.argv[1]!r} is not a whole number in 1..1000000" if len(sys.argv) == 2 else \
        f"{len(sys.argv) - 1} arguments, at most 1"
    sys.exit(f"train_linear.py: {what}\n{USAGE}")
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
comm = tessera.Communicator()
w_true = np.random.default_rng(12345).uniform(-1, 1, DIM)
shard = np.random.default_rng(1000 + comm.rank)           # each rank its own samples
x = shard.uniform(-1, 1, (SAMPLES, DIM))
y = x @ w_true + 0.01 * shard.standard_normal(SAMPLES)

w = np.full(DIM, 0.5 if comm.rank == 0 else 99.0)        # only rank 0's survive
comm.broadcast(w, root=0)
first = None
for step in range(steps):
    residual = x @ w - y
    grad = x.T @ residual / SAMPLES
    pending = comm.allreduce(grad, op="avg", async_op=True)
    loss = np.array([0.5 * np.mean(residual ** 2)])       # overlaps the allreduce
    comm.allreduce(loss, op="avg")
    first = loss[0] if first is None else first
    pending.wait()
    w -= RATE * 4 * grad

everyone = comm.allgather(w).reshape(comm.size, DIM)
agree = all(np.array_equal(everyone[r], w) for r in range(comm.size))
if comm.rank == 0:
    print(f"train_linear.py: {comm.size} ranks, {steps} steps, loss {first:.4g} -> {loss[0]:.4g}, "
          f"ranks {'agree' if agree else 'DIFFER'}")
comm.close()
sys.exit(0 if agree and loss[0] < first / 100 else 1)
