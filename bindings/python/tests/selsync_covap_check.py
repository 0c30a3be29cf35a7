"""SelSync, data injection and COVAP from Python over real UCX: run under tsrun
(tsrun -np N python3 selsync_covap_check.py). Exits non-zero on any failed check."""
import numpy as np

import tessera
from checks import Checks

checks = Checks()
expect, raises = checks.expect, checks.raises

comm = tessera.Communicator()
n, me = comm.size, comm.rank
avg = (n - 1) / 2  # the average of the ranks' ids

# SelSync, delta=0: every step synchronizes; the buckets become the average over ranks.
with tessera.SelSync(comm, [5, 3], delta=0) as sync:
    w, b = np.full(5, me, np.float32), np.full(3, 2.0 * me, np.float32)
    expect(sync.step(1.0, [w, b]), "delta=0: synchronized")
    expect(np.all(w == avg) and np.all(b == 2 * avg), f"delta=0: averaged ({w[0]}, {b[0]})")
    expect(sync.stats[:2] == (1, 0), f"delta=0 stats {sync.stats}")
# A large delta: the first step and a steady norm stay local; a jump synchronizes everyone.
with tessera.SelSync(comm, [4], delta=0.5) as sync:
    w = np.full(4, me, np.float32)
    expect(not sync.step(1.0, [w]) and np.all(w == me), "first step local, buckets untouched")
    expect(not sync.step(1.01, [w]) and np.all(w == me), "steady norm: local")
    expect(sync.step(1e6, [w]) and np.all(w == avg), "a jump in the norm: synchronized")
    sync_steps, local_steps, saved = sync.stats
    expect((sync_steps, local_steps) == (1, 2) and saved > 0, f"stats {sync.stats}")
    raises(ValueError, "5 elements, declared with 4", lambda: sync.step(1.0, [np.zeros(5, np.float32)]),
           "a bucket of the wrong size")
raises(tessera.InvalidArgumentError, "delta", lambda: tessera.SelSync(comm, [4], delta=-1), "delta=-1")
raises(tessera.InvalidArgumentError, "memory=gpu is not accepted (host|cuda)",
       lambda: tessera.SelSync(comm, [4], memory="gpu"), "memory=gpu")


# CUDA buckets: a host SelSync refuses device arrays, a memory=cuda one needs a device (this
# check runs where there is none) and refuses host arrays; all before anything is sent.
class DeviceArray:
    def __init__(self, count):
        self.__cuda_array_interface__ = {"shape": (count,), "typestr": "<f4", "data": (1 << 40, False),
                                         "version": 3, "strides": None}


with tessera.SelSync(comm, [4], delta=0) as sync:
    raises(ValueError, "selsync bucket 0: CUDA memory", lambda: sync.step(1.0, [DeviceArray(4)]),
           "a CUDA array to a host SelSync")
try:
    with tessera.SelSync(comm, [4], delta=0, memory="cuda") as sync:  # a machine with a GPU
        raises(ValueError, "selsync bucket 0: host memory, declared with memory=cuda",
               lambda: sync.step(1.0, [np.zeros(4, np.float32)]), "a host array to a memory=cuda SelSync")
except tessera.NotSupportedError as e:
    expect(str(e).find("selsync memory=cuda") >= 0, f"memory=cuda without a device: {e}")

# Data injection: alpha=1 draws every rank, so each receives all others' shares in rank order.
got = tessera.inject(comm, 7, 0, 1.0, np.full(3, 10.0 * me, np.float32))
want = [10.0 * r for r in range(n) if r != me for _ in range(3)]
expect(got.tolist() == want, f"inject alpha=1: {got.tolist()} against {want}")

# COVAP, interval=1: every shard every step, so the gradients are averaged exactly.
with tessera.Covap(comm, [6, 4], interval=1) as covap:
    for step in range(2):
        g1, g0 = np.full(4, me + step, np.float32), np.full(6, 3.0 * me, np.float32)
        covap.begin_step()
        covap.bucket_ready(0, g0)      # buckets in backprop order
        covap.bucket_ready(1, g1)
        covap.finish_step()
        expect(np.all(g0 == 3 * avg) and np.all(g1 == avg + step), f"covap step {step}: {g0[0]} {g1[0]}")
    expect(covap.interval == 1, f"covap interval {covap.interval}")
    raises(ValueError, "bucket 2", lambda: covap.bucket_ready(2, np.zeros(4, np.float32)), "bucket 2 of 2")
# interval=2: shard 0 is averaged at step 0, shard 1 skipped (zeroed, kept as residual).
with tessera.Covap(comm, [4, 6], interval=2) as covap:
    g0, g1 = np.array([me, 1, 1, 1], np.float32), np.array([2.0 * me, 0, 0, 0, 0, 0], np.float32)
    covap.begin_step()
    covap.bucket_ready(1, g1)
    covap.bucket_ready(0, g0)
    covap.finish_step()
    expect(g0[0] == avg and g1[0] == 0.0, f"covap interval 2: {g0[0]} {g1[0]}")
raises(tessera.InvalidArgumentError, "interval=0", lambda: tessera.Covap(comm, [4], interval=0), "interval=0")

comm.close()
checks.finish(me, n, "python selsync/covap")
