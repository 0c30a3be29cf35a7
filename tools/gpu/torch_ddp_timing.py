"""DDP's time per step on CUDA over gloo and over the tessera backend with each of Tessera's
hooks, on the same ranks in the same run: the ratios to gloo are the figure (docs/gpu.md).
tools/gpu/device_check.sh runs it under the kit's tsrun with the backend it built there.

The model: a small CNN with a wide classifier (8.5 M float32 parameters, 34 MB of gradients per
step) on synthetic 3x32x32 images, batch 32 per rank, SGD with momentum; each configuration
from the same seed, `--warmup` steps untimed, then `--steps` timed (the CUDA device
synchronized around them), the slowest rank's mean per step. After the timed steps every
rank's parameters must agree (covap local=1 and SelSync after their synchronize()), so a
configuration that trains wrong fails here too. Output: a table, and one JSON line per
configuration ("ddp_timing": name, ms per step, ratio to gloo).

    tsrun -np N python3 torch_ddp_timing.py [--steps S] [--warmup W] [--cpu]
--cpu runs the same on CPU tensors (gloo's CPU path), which checks the script on a machine
without a GPU; its times say nothing about a GPU's. Each configuration prints its outcome and
time as it ends; with TESSERA_CHECK_DUMP_S=S every Python thread's stack goes to stderr after S
seconds (a hang says where)."""
import faulthandler
import json
import os
import sys
import time

if float(os.environ.get("TESSERA_CHECK_DUMP_S", "0")) > 0:
    faulthandler.dump_traceback_later(float(os.environ["TESSERA_CHECK_DUMP_S"]), exit=False)

import torch  # noqa: E402  first: its CUDA runtime is the one the process uses
import torch.distributed as dist  # noqa: E402

import tessera.torch  # noqa: E402,F401  (registers the backend)
from tessera.torch import hooks  # noqa: E402


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


STEPS, WARMUP, ON_CPU = arg("--steps", 20), arg("--warmup", 5), "--cpu" in sys.argv
if not ON_CPU and not torch.cuda.is_available():
    print("no CUDA device: nothing to time", flush=True)
    sys.exit(0)
if ON_CPU:
    device = torch.device("cpu")
    dist.init_process_group("tessera")
else:
    device = torch.device("cuda", int(os.environ.get("TSR_LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    dist.init_process_group("tessera", device_id=device)
n, me = dist.get_world_size(), dist.get_rank()
gloo = dist.new_group(backend="gloo")

CONFIGS = [("gloo", None, {}), ("tessera", None, {}), ("tessera", "dense", {}), ("tessera", "marsit", {}),
           ("tessera", "topk", {}), ("tessera", "spardl", {}), ("tessera", "onebit", {}),
           ("tessera", "compressed", {"compressor": "dithering", "k": 127}), ("tessera", "auto", {}),
           ("tessera", "covap", {"interval": 2}), ("tessera", "covap", {"interval": 2, "local": 1}),
           ("tessera", "selsync", {"delta": 0.3})]


def model():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(8), torch.nn.Flatten(),
                               torch.nn.Linear(128 * 64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))


def sync():
    if not ON_CPU:
        torch.cuda.synchronize(device)


def run(backend, hook, params):
    """Mean seconds per timed step on this rank, and the DDP model."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    ddp = DDP(model().to(device), device_ids=None if ON_CPU else [device.index],
              process_group=gloo if backend == "gloo" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    state = None
    if hook == "selsync":
        opt = state = hooks.selsync(ddp, opt, **params)
    elif hook:
        state = hooks.register(ddp, hook, **params)
    gen = torch.Generator().manual_seed(1 + me)
    images = torch.randn(32, 3, 32, 32, generator=gen).to(device)
    labels = torch.randint(0, 10, (32,), generator=gen).to(device)
    started = None
    for step in range(WARMUP + STEPS):
        if step == WARMUP:
            sync()
            started = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(images), labels).backward()
        opt.step()
    sync()
    seconds = (time.perf_counter() - started) / STEPS
    if hasattr(state, "synchronize"):
        state.synchronize()
    return seconds, ddp


failures, rows = [], []
for backend, hook, params in CONFIGS:
    name = backend if hook is None else f"{hook}{''.join(f' {k}={v}' for k, v in params.items())}"
    began, before = time.monotonic(), len(failures)
    try:
        seconds, ddp = run(backend, hook, params)
        flat = torch.cat([p.detach().reshape(-1) for p in ddp.parameters()])
        lo, hi = flat.clone(), flat.clone()
        dist.all_reduce(lo, op=dist.ReduceOp.MIN)
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        if not torch.equal(lo, hi):
            failures.append(f"{name}: the ranks' parameters differ after the timed steps")
        slowest = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        rows.append((name, float(slowest) * 1e3))
    except Exception as e:  # noqa: BLE001  (named, then the others still run)
        failures.append(f"{name}: {type(e).__name__}: {e}")
    outcome = "ok" if len(failures) == before else "FAILED"
    print(f"rank {me}: {name}: {outcome} in {time.monotonic() - began:.1f} s", flush=True)
for f in failures:
    print(f"rank {me}: FAILED: {f}", flush=True)
if me == 0 and rows:
    base = dict(rows).get("gloo")
    where = "CPU" if ON_CPU else torch.cuda.get_device_name(device)
    print(f"DDP per step on {n} ranks ({where}; {STEPS} steps after {WARMUP}; 8.5 M parameters, batch 32 per rank)")
    print(f"{'configuration':40} {'ms/step':>9} {'x gloo':>8}")
    for name, ms in rows:
        ratio = ms / base if base else float("nan")
        print(f"{name:40} {ms:9.2f} {ratio:8.2f}")
        print(json.dumps({"ddp_timing": name, "ranks": n, "ms_per_step": round(ms, 3), "ratio_to_gloo": round(ratio, 3),
                          "device": where}), flush=True)
sys.exit(1 if failures else 0)
