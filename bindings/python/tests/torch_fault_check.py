"""A rank killed in the middle of DDP training on the tessera backend: every other rank's
training step raises, naming the dead rank, within the timeout; nobody hangs. Twice: with
DDP's own allreduce and with Tessera's dense hook (whose failed future must reach DDP as an
error, not as a value DDP cannot cast to a tensor).

    torch_fault_check.py TSRUN N          (runs the jobs itself and checks what each rank printed)
    torch_fault_check.py --rank [HOOK]    (one rank of such a job)
"""
import os
import re
import signal
import subprocess
import sys
import time

VICTIM, TIMEOUT_MS = 1, 10000


def rank_main(hook):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    import tessera.torch  # noqa: F401

    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # tsrun's clean-up must not cut the report short
    dist.init_process_group("tessera")
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    ddp = nn.parallel.DistributedDataParallel(net)
    if hook:
        from tessera.torch import hooks
        hooks.register(ddp, hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
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
        return 3


def driver(tsrun, n, hook):
    env = dict(os.environ)
    job = subprocess.run([tsrun, "-np", str(n), "--grace", "9", "-x", f"TSR_TIMEOUT_MS={TIMEOUT_MS}",
                          sys.executable, os.path.abspath(__file__), "--rank"] + ([hook] if hook else []),
                         env=env, capture_output=True, text=True, timeout=120)
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
    if job.returncode == 0:
        failures.append("the job exited 0")
    what = f"the {hook} hook" if hook else "DDP's own allreduce"
    for f in failures:
        print(f"FAILED ({what}):", f)
    if failures:
        print(out)
        return 1
    print(f"torch fault ({what}): every other rank of {n} named rank {VICTIM} within the timeout")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--rank":
        sys.exit(rank_main(sys.argv[2] if len(sys.argv) > 2 else None))
    sys.exit(max(driver(sys.argv[1], int(sys.argv[2]), hook) for hook in (None, "dense")))
