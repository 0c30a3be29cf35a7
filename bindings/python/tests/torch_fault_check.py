"""A rank killed in the middle of DDP training on the tessera backend: every other rank's
training step raises, naming the dead rank, within the timeout, and so does its next
collective; nobody hangs or crashes. Twice: with DDP's own allreduce and with Tessera's dense
hook (whose failed future must reach DDP as an error, not as a value DDP cannot cast to a
tensor). With --cuda the model, its gradients and the next collective's tensor are on the GPU
(tools/gpu/device_check.sh runs it so).

    torch_fault_check.py TSRUN N [--cuda]          (runs the jobs itself, checks what each rank printed)
    torch_fault_check.py --rank [--cuda] [HOOK]    (one rank of such a job)
"""
import os
import re
import signal
import subprocess
import sys
import time

VICTIM, TIMEOUT_MS = 1, 10000


def rank_main(hook, cuda):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    import tessera.torch  # noqa: F401

    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # tsrun's clean-up must not cut the report short
    device = torch.device("cpu")
    if cuda:
        device = torch.device("cuda", int(os.environ.get("TSR_LOCAL_RANK", "0")) % torch.cuda.device_count())
        torch.cuda.set_device(device)
        dist.init_process_group("tessera", device_id=device)
    else:
        dist.init_process_group("tessera")
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
    ddp = nn.parallel.DistributedDataParallel(net)
    if hook:
        from tessera.torch import hooks
        hooks.register(ddp, hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(32, 256, device=device), torch.randint(0, 10, (32,), device=device)
    start = None
    try:
        for step in range(10000):
            if step == 5:
                start = time.perf_counter()
                if rank == VICTIM:
                    print(f"rank {rank}: killing myself", flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            F.cross_entropy(ddp(x), y).backward()
            opt.step()
        print(f"rank {rank}: no failure seen", flush=True)
        return 0
    except RuntimeError as e:
        ms = int((time.perf_counter() - start) * 1000) if start else -1
        print(f"rank {rank}: FAILED after {ms} ms: {' '.join(str(e).split())}", flush=True)
    try:  # the group is broken: its next call fails too, naming why, and nothing crashes
        t = torch.ones(1000, device=device)
        dist.all_reduce(t)
        print(f"rank {rank}: the next call succeeded: {t[0].item()}", flush=True)
    except RuntimeError as e:
        print(f"rank {rank}: the next call raised: {' '.join(str(e).split())}", flush=True)
    return 3


def driver(tsrun, n, hook, cuda):
    env = dict(os.environ)
    job = subprocess.run([tsrun, "-np", str(n), "--grace", "9", "-x", f"TSR_TIMEOUT_MS={TIMEOUT_MS}",
                          sys.executable, os.path.abspath(__file__), "--rank"] + (["--cuda"] if cuda else [])
                         + ([hook] if hook else []), env=env, capture_output=True, text=True, timeout=120)
    out = job.stdout + job.stderr
    failures = []
    for r in range(n):
        if r == VICTIM:
            continue
        m = re.search(rf"^\[{r}\] rank {r}: FAILED after (\d+) ms: (.*)$", out, re.M)
        if not m:
            failures.append(f"rank {r} printed no failure")
            continue
        ms, message = int(m.group(1)), m.group(2)
        if ms > TIMEOUT_MS + 2000:
            failures.append(f"rank {r} failed only after {ms} ms")
        if f"rank {VICTIM}" not in message or "TSR_ERR" not in message:
            failures.append(f"rank {r}'s error does not name rank {VICTIM}: {message}")
        if "Unable to cast" in message:
            failures.append(f"rank {r}'s error reached DDP as the future's value: {message}")
        m = re.search(rf"^\[{r}\] rank {r}: the next call (raised|succeeded): (.*)$", out, re.M)
        if not m or m.group(1) != "raised" or "TSR_ERR" not in m.group(2):
            failures.append(f"rank {r}'s next call did not raise naming the failure: {m.group(0) if m else 'nothing'}")
    if job.returncode == 0:
        failures.append("the job exited 0")
    what = (f"the {hook} hook" if hook else "DDP's own allreduce") + (" on CUDA" if cuda else "")
    for f in failures:
        print(f"FAILED ({what}):", f)
    if failures:
        print(out)
        return 1
    print(f"torch fault ({what}): every other rank of {n} named rank {VICTIM} within the timeout")
    return 0


if __name__ == "__main__":
    on_cuda = "--cuda" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--cuda"]
    if args[0] == "--rank":
        sys.exit(rank_main(args[1] if len(args) > 1 else None, on_cuda))
    sys.exit(max(driver(args[0], int(args[1]), hook, on_cuda) for hook in (None, "dense")))
