"""What the Python layer adds per call: the median time of blocking allreduces from Python
(8 B and 1 MiB, barrier before each, max over ranks). Run it and tsr-bench the same way:
  PYTHONPATH=bindings/python build/bin/tsrun -np 4 python3 tools/bench/python_latency.py
  build/bin/tsrun -np 4 build/bin/tsr-bench -b 8 -e 1M -f 131072 -n 2000 -w 20"""
import time

import numpy as np
import tessera
comm = tessera.Communicator()
for size, iters in ((2, 2000), (262144, 200)):
    x = np.zeros(size, dtype=np.float32)
    for _ in range(20):
        comm.allreduce(x)
    times = []
    for _ in range(iters):
        comm.barrier()
        t0 = time.perf_counter()
        comm.allreduce(x)
        times.append(time.perf_counter() - t0)
    t = np.array([np.median(times) * 1e6])
    comm.allreduce(t, op="max")
    if comm.rank == 0:
        print(f"python allreduce {size * 4} B: {t[0]:.1f} us (median, max over ranks)")
comm.close()
