"""The "tessera" torch.distributed backend on CUDA tensors, on a GPU machine: tools/gpu/device_check.sh
runs it under the kit's tsrun with the backend it built there against the machine's PyTorch.

Every collective on CUDA tensors of each dtype (and every op) against a float64 reference computed
on the CPU; blocking, async (Work.wait) and through get_future().then(); the input made on a
stream of the caller's own (torch.cuda.stream) that the call is made on, behind queued work, so a
read that did not wait for that stream would see stale data; unless TSR_TORCH_STREAM_WAIT=0,
Work.wait() on a stream of the caller's own returning before the collective has ended, that stream
held until it has (on the default stream it blocks); all_to_all, send/recv (host-staged);
split_group with the device bound to the world; a mismatch raising on every rank; DDP on a small
CNN for a fixed number of steps on CUDA and on the CPU over the same group, with DDP's own
allreduce, with each of Tessera's hooks (dense; marsit, topk, spardl, onebit, compressed
(dithering, 127 levels) and auto with their buckets as memory=cuda tensors; covap with
interval 2, its residuals on the device, and with local=1) and with hooks.selsync (delta 0:
every step averages the parameters through SelSync's memory=cuda staging): every rank's CUDA
parameters bit-identical (covap local=1 and SelSync after their synchronize()), and the CUDA
loss within 1e-3 of the CPU one (relative; 1e-2 for the compressing hooks, ddp() says why).

    tsrun -np N python3 torch_cuda_check.py [--hosts H] [--cpu] [--quick]   (H: the ranks act as H hosts)
--quick leaves DDP out (the run under compute-sanitizer). Each part and each DDP configuration
prints its outcome and time as it ends ("rank R: NAME: ok in S s"), and with TESSERA_CHECK_DUMP_S=S
every Python thread's stack goes to stderr after S seconds (set below tsrun's --timeout, a
hang then says where each rank was).
Without a usable CUDA device it prints "no CUDA device" and exits 0 (device_check.sh fails that
on a GPU machine). --cpu runs the same checks on CPU tensors (the streams part left out), which
checks this script's own expectations on a machine without a GPU."""
import faulthandler
import os
import sys
import time

if float(os.environ.get("TESSERA_CHECK_DUMP_S", "0")) > 0:  # from the start: a hang in init shows too
    faulthandler.dump_traceback_later(float(os.environ["TESSERA_CHECK_DUMP_S"]), exit=False)

import torch  # noqa: E402  first: its CUDA runtime is the one the process uses

if "--hosts" in sys.argv:  # before the communicator exists: host mates share memory, others not
    hosts = int(sys.argv[sys.argv.index("--hosts") + 1])
    per_host = int(os.environ["TSR_WORLD_SIZE"]) // hosts
    os.environ["TSR_TEST_HOST_ID"] = f"gpu-check-host-{int(os.environ['TSR_RANK']) // per_host}"

import torch.distributed as dist  # noqa: E402

import tessera.torch  # noqa: E402,F401  (registers the backend)

ON_CPU, QUICK = "--cpu" in sys.argv, "--quick" in sys.argv
if not ON_CPU and not torch.cuda.is_available():
    print("no CUDA device: nothing to check", flush=True)
    sys.exit(0)
torch.backends.cudnn.allow_tf32 = False  # the CUDA and CPU runs of DDP compare in float32
torch.backends.cuda.matmul.allow_tf32 = False

if ON_CPU:  # torch binds only accelerators to a group; CPU index 0 stands in (split_group wants one)
    device = torch.device("cpu", 0)
    dist.init_process_group("tessera")
    dist.distributed_c10d._get_default_group().bound_device_id = device
else:
    device = torch.device("cuda", int(os.environ.get("TSR_LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    dist.init_process_group("tessera", device_id=device)
n, me = dist.get_world_size(), dist.get_rank()
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def timed(name, fn, *args):
    """fn(*args), an exception named as a failure; its outcome and time printed as it ends."""
    started, before, result = time.monotonic(), len(failures), None
    try:
        result = fn(*args)
    except Exception as e:  # noqa: BLE001  (named, then the others still run)
        failures.append(f"{name}: {type(e).__name__}: {e}")
    outcome = "ok" if len(failures) == before else "FAILED"
    print(f"rank {me}: {name}: {outcome} in {time.monotonic() - started:.1f} s", flush=True)
    return result


def values(rank, count, op="sum"):
    if op == "prod":
        return torch.tensor([float(((rank + j) % 3) - 1 or 2) for j in range(count)], dtype=torch.float64)
    return torch.tensor([float((rank * 7 + j * 3) % 11 - 5) for j in range(count)], dtype=torch.float64)


OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX,
       "prod": dist.ReduceOp.PRODUCT}
TOL = {torch.float16: 1e-2, torch.bfloat16: 2e-2}


def close(got, want, dtype):
    return torch.allclose(got.double().cpu(), want, rtol=TOL.get(dtype, 1e-6), atol=TOL.get(dtype, 1e-6))


def collectives():
    count = 4099
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64):
        for name, op in OPS.items():
            if name == "avg" and not dtype.is_floating_point:
                continue
            want = torch.stack([values(r, count, name) for r in range(n)])
            want = {"sum": want.sum(0), "avg": want.sum(0) / n, "min": want.min(0).values,
                    "max": want.max(0).values, "prod": want.prod(0)}[name]
            t = values(me, count, name).to(dtype).to(device)
            work = dist.all_reduce(t, op=op, async_op=name == "max")
            if work is not None:
                work.wait()
            expect(t.device.type == device.type and close(t, want, dtype), f"all_reduce {name} {dtype}")
        mine = (torch.arange(5) + 10 * me).to(dtype).to(device)
        out = [torch.zeros(5, dtype=dtype, device=device) for _ in range(n)]
        dist.all_gather(out, mine)
        flat = torch.zeros(5 * n, dtype=dtype, device=device)
        dist.all_gather_into_tensor(flat, mine)
        want = [v + 10 * r for r in range(n) for v in range(5)]
        expect(torch.cat(out).cpu().tolist() == want and flat.cpu().tolist() == want, f"all_gather {dtype}")
        b = torch.full((7,), float(me), device=device).to(dtype)
        dist.broadcast(b, src=n - 1)
        expect(b.cpu().tolist() == [n - 1] * 7, f"broadcast {dtype}: {b.cpu().tolist()}")
        blocks = [torch.full((3,), float(r + me), device=device).to(dtype) for r in range(n)]
        part, part2 = torch.zeros(3, dtype=dtype, device=device), torch.zeros(3, dtype=dtype, device=device)
        dist.reduce_scatter(part, blocks)
        dist.reduce_scatter_tensor(part2, torch.cat(blocks))
        want = [float(sum(me + q for q in range(n)))] * 3
        expect(part.cpu().tolist() == want and part2.cpu().tolist() == want, f"reduce_scatter {dtype}")


def streams_and_futures():
    """The input made on the caller's own stream behind queued work, the call made on it; the
    result seen on another stream through the Work and through a future's then()."""
    side = torch.cuda.Stream(device)
    big = torch.empty(64 << 20, device=device)
    for rnd in range(10):
        with torch.cuda.stream(side):
            for _ in range(8):
                big.fill_(float(rnd))  # queued ahead of the input on `side`
            x = torch.full((1 << 20,), float(me + rnd), device=device)
            dist.all_reduce(x)
        torch.cuda.current_stream(device).wait_stream(side)
        expect(x[-1].item() == float(sum(range(n)) + n * rnd), f"stream round {rnd}: {x[-1].item()}")
    y = torch.full((1000,), float(me), device=device)
    fut = dist.all_reduce(y, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    expect(fut.wait()[-1].item() == 2.0 * sum(range(n)), "get_future().then() on CUDA")


def wait_holds_the_stream():
    """Work.wait() on a stream of the caller's own makes that stream wait and returns before the
    collective has ended (tsr_stream_hold): rank 1 joins only once rank 0 has seen its Work still
    running after wait() (a file is the signal; after 20 s rank 1 joins anyway, so a wait that
    blocks fails here instead of hanging); the result is then read on that stream. On the default
    stream, and on a blocking stream of one's own, wait() blocks instead (a held blocking stream
    would stall the device). With TSR_TORCH_STREAM_WAIT=0 wait() always blocks: nothing to check."""
    import pathlib
    import time
    if os.environ.get("TSR_TORCH_STREAM_WAIT") == "0":
        return
    signal = pathlib.Path(f"/tmp/tessera-gpu-check-{os.environ.get('TSR_JOB_ID', 'job')}-held")
    mine = torch.cuda.Stream(device)
    with torch.cuda.stream(mine):
        x = torch.full((1 << 20,), float(me), device=device)
        if me == 1:
            deadline = time.monotonic() + 20
            while not signal.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        work = dist.all_reduce(x, async_op=True)
        work.wait()
        if me == 0:
            expect(not work.is_completed(), "Work.wait() on CUDA tensors returned only once the collective had ended")
            signal.touch()
        expect(x[-1].item() == float(sum(range(n))), f"after a stream-side wait: {x[-1].item()}")
    on_default = torch.full((1000,), float(me), device=device)
    work = dist.all_reduce(on_default, async_op=True)
    work.wait()
    expect(work.is_completed(), "Work.wait() on the default stream returned before the collective had ended")
    expect(on_default[-1].item() == float(sum(range(n))), f"after a wait on the default stream: {on_default[-1].item()}")
    # A blocking stream of the caller's own (made by the driver, flags 0) is not held either:
    # the legacy default stream and every blocking stream wait for each other.
    import ctypes
    driver, handle = ctypes.CDLL("libcuda.so.1"), ctypes.c_void_p()
    driver.cuStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
    driver.cuStreamDestroy_v2.argtypes = [ctypes.c_void_p]
    made = driver.cuStreamCreate(ctypes.byref(handle), 0)
    expect(made == 0, f"cuStreamCreate (a blocking stream) failed: CUresult {made}")
    # On a blocking stream made here, or else on the default one: every rank calls the collective.
    with torch.cuda.stream(torch.cuda.ExternalStream(handle.value, device=device) if made == 0 else None):
        blocking = torch.full((1000,), float(me), device=device)
        work = dist.all_reduce(blocking, async_op=True)
        work.wait()
        expect(work.is_completed(), "Work.wait() on a blocking stream returned before the collective had ended")
        expect(blocking[-1].item() == float(sum(range(n))), f"after a wait on a blocking stream: {blocking[-1].item()}")
    del blocking, work  # their memory was last used on that stream: freed before it goes
    torch.cuda.synchronize(device)
    if made == 0:
        expect(driver.cuStreamDestroy_v2(handle) == 0, "cuStreamDestroy of the blocking stream failed")
    # A gather into a list ends with copies on a stream of PyTorch's pool, synchronized by the
    # thread that gives the releases; torch.cuda.Stream() hands out the same pool's streams, so
    # each of them is once the held caller's stream here: none may be the one synchronized.
    for k in range(34):  # the pool has 32 streams per priority
        with torch.cuda.stream(torch.cuda.Stream(device)):
            outs = [torch.empty(4, device=device) for _ in range(n)]
            dist.all_gather(outs, torch.full((4,), float(me + k), device=device), async_op=True).wait()
            got = [o[0].item() for o in outs]
        expect(got == [float(r + k) for r in range(n)], f"all_gather to a list on pool stream {k}: {got}")
    dist.barrier()
    if me == 0:
        signal.unlink(missing_ok=True)


def host_staged_and_split():
    x = torch.arange(2 * n, dtype=torch.float32, device=device) + 100 * me
    y = torch.zeros_like(x)
    dist.all_to_all_single(y, x)
    want = [100 * r + 2 * me + k for r in range(n) for k in range(2)]
    expect(y.cpu().tolist() == want, f"all_to_all_single on CUDA: {y.cpu().tolist()}")
    if n >= 2 and me < 2:
        t = torch.full((3,), float(me), device=device)
        dist.send(t, 1) if me == 0 else dist.recv(t, 0)
        expect(t.cpu().tolist() == [0.0] * 3, f"send/recv on CUDA: {t.cpu().tolist()}")
    halves = dist.split_group(split_ranks=[list(range(n // 2)), list(range(n // 2, n))]) if n >= 2 else None
    if halves is not None:
        s = torch.tensor([float(me)], device=device)
        dist.all_reduce(s, group=halves)
        mine = range(n // 2) if me < n // 2 else range(n // 2, n)
        expect(s.item() == float(sum(mine)), f"split_group half: {s.item()}")
    dist.barrier(device_ids=None if ON_CPU else [device.index])


def ddp(hook=None, params=None, steps=20):
    """The same CNN and data on CUDA and on the CPU, each under DDP over this group: DDP's own
    allreduce, a Tessera hook (tessera.torch.hooks) on the buckets with `params`, or SelSync
    wrapping the optimizer (hook "selsync")."""
    params = dict(params or {})
    from torch.nn.parallel import DistributedDataParallel as DDP

    from tessera.torch import hooks

    def run(dev):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                    torch.nn.Linear(8 * 26 * 26, 10)).to(dev)
        model = DDP(model, device_ids=[dev.index] if dev.type == "cuda" else None)
        state = hooks.register(model, hook, **params) if hook and hook != "selsync" else None
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        if hook == "selsync":
            opt = state = hooks.selsync(model, opt, **params)
        gen = torch.Generator().manual_seed(1 + me)
        loss = None
        for _ in range(steps):
            images, labels = torch.randn(16, 1, 28, 28, generator=gen), torch.randint(0, 10, (16,), generator=gen)
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(images.to(dev)), labels.to(dev))
            loss.backward()
            opt.step()
        if hasattr(state, "synchronize"):  # covap local=1, SelSync: the ranks' models differ between syncs
            state.synchronize()
        return model, loss.item()

    gpu_model, gpu_loss = run(device)
    cpu_model, cpu_loss = run(torch.device("cpu"))
    flat = torch.cat([p.detach().reshape(-1) for p in gpu_model.parameters()])
    lo, hi = flat.clone(), flat.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    what = f"DDP ({hook or 'its own allreduce'}{''.join(f' {k}={v}' for k, v in params.items())})"
    expect(torch.equal(lo, hi), f"{what} on CUDA: the ranks' parameters differ")
    # CUDA's and the CPU's float32 sums round differently. Exact averaging carries that as it is;
    # a compressing hook may turn it into a different sign or a different top-k pick: on the CPU,
    # initial weights perturbed by 3e-5 (relative) moved their loss after these steps by up to
    # 8e-4 of it (marsit, onebit), the exact ones' by 1e-5. Each gets ten times its figure.
    tol = 1e-3 if hook in (None, "dense", "selsync") else 1e-2
    expect(abs(gpu_loss - cpu_loss) <= tol * max(1.0, abs(cpu_loss)),
           f"{what}: loss CUDA {gpu_loss} vs CPU {cpu_loss} (tolerance {tol} of it)")
    return gpu_loss


for part in (collectives, host_staged_and_split) if ON_CPU else (collectives, streams_and_futures,
                                                                  wait_holds_the_stream, host_staged_and_split):
    timed(part.__name__, part)
loss = None
HOOKS = [(None, {}), ("dense", {}), ("marsit", {}), ("topk", {}), ("spardl", {}), ("onebit", {}),
         ("compressed", {"compressor": "dithering", "k": 127}), ("auto", {}), ("covap", {"interval": 2}),
         ("covap", {"interval": 2, "local": 1}), ("selsync", {"delta": 0})]
for hook, params in [] if QUICK else HOOKS:
    ended = timed(f"ddp {hook} {params}", ddp, hook, params)
    loss = loss if ended is None else ended


def mismatch():
    """A mismatch (rank 0 counts one more) raises on every rank: at wait(), or, where wait()
    only holds the caller's stream (a stream of the caller's own), from the Work's future."""
    try:
        work = dist.all_reduce(torch.zeros(9 if me == 0 else 8, device=device), async_op=True)
        work.wait()
        work.get_future().wait()
        failures.append("a mismatched all_reduce on CUDA succeeded")
    except RuntimeError as e:
        expect("MISMATCH" in str(e), f"mismatch message: {e}")


timed("mismatch", mismatch)
for f in failures:
    print(f"rank {me}: FAILED: {f}", flush=True)
if me == 0 and not failures:
    where = "CPU" if ON_CPU else torch.cuda.get_device_name(device)
    ddp_loss = "DDP left out" if QUICK else f"DDP loss {loss:.4f}"
    print(f"torch cuda: PASSED on {n} ranks ({where}; {ddp_loss})", flush=True)
sys.exit(1 if failures else 0)
