"""DDP training goes on through a failure (PyTorch 2.x, under tsrun --elastic, 4 ranks): the last
rank SIGKILLs itself at step 4; on the others that step's backward raises, and each shrinks the
group (tessera.torch.elastic.shrink), re-wraps DDP over the survivors' group (its construction
broadcasts the model from the new rank 0), re-shards the data by its new rank and redoes the
step. At the end every survivor shrank at the same step, ranks are in their old order, the
parameters are bit-identical on every survivor and the loss went down.

With --grow, under tsrun --respawn 1: the killed rank's replacement joins (elastic.join), the
survivors grow the group at the start of each step until it is in (elastic.grow), send it the
step, model and optimizer (elastic.broadcast_state) and all four re-wrap DDP and go on: at the
end the four have bit-identical parameters and the world is whole again.

With --hook ALGORITHM, DDP averages through that Tessera hook; re-registered on each re-wrapped
DDP with state_from, its tensors start with what the old ones held back (checked non-zero).
covap runs at interval 2; the replacement's hook takes a member's schedule() (sent with the
state) and at the end every rank's hook is at the same step.

With --cuda the model, its gradients and the batches are on GPU TSR_LOCAL_RANK modulo the GPUs
this rank sees (tools/gpu/device_check.sh runs it so)."""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import tessera.torch  # noqa: F401  (registers the backend)
from checks import Checks
from tessera.torch import elastic, hooks

STEPS, KILL_AT, BATCH = 12, 4, 96
GROW = "--grow" in sys.argv
HOOK = sys.argv[sys.argv.index("--hook") + 1] if "--hook" in sys.argv else None
HOOK_PARAMS = {"interval": 2} if HOOK == "covap" else {}
device = torch.device("cpu")
if "--cuda" in sys.argv:
    device = torch.device("cuda", int(os.environ.get("TSR_LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(device)
c = Checks()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
step, shrunk_at, grown_at, losses = 0, None, None, []
hook_from = None  # a replacement's: a member's covap schedule
if elastic.replacement():  # the killed rank, started again: join, take the state, go on
    group = elastic.join()
    state = elastic.broadcast_state(group)
    model.load_state_dict(state["model"])
    hook_from = state["hook"]
    opt.load_state_dict(state["opt"])
    step = grown_at = shrunk_at = state["step"]
    rank, size = int(os.environ["TSR_RANK"]), int(os.environ["TSR_WORLD_SIZE"])
else:
    dist.init_process_group("tessera")
    rank, size = dist.get_rank(), dist.get_world_size()
    group = dist.group.WORLD
victim = size - 1
hook = None


def rewrap(group):
    """DDP over `group`, with the hook carried over from the last one."""
    global hook
    wrapped = DDP(model, process_group=group)
    if HOOK:
        old, hook = hook, hooks.register(wrapped, HOOK, state_from=hook if hook is not None else hook_from,
                                         **HOOK_PARAMS)
        if old is not None:
            c.expect(hook.carried > 0, "the re-registered hook carried no residual over")
    return wrapped


ddp = rewrap(group)
gen = torch.Generator().manual_seed(7)
inputs = torch.randn(4096, 32, generator=gen)
labels = (inputs @ torch.randn(32, 4, generator=gen)).argmax(1)  # learnable: the loss must go down
inputs, labels = inputs.to(device), labels.to(device)


def shard(step):
    """This rank's share of the step's batch, by its rank in the group it trains in now."""
    rows = (torch.arange(step * BATCH, (step + 1) * BATCH) % len(inputs)).to(device)
    mine = rows[dist.get_rank(group)::dist.get_world_size(group)]
    return inputs[mine], labels[mine]


while step < STEPS:
    if rank == victim and step == KILL_AT and not elastic.replacement():
        os.kill(os.getpid(), signal.SIGKILL)
    if GROW and shrunk_at is not None and grown_at is None:
        grown = elastic.grow(group)  # None until the replacement has asked
        # Two steps on, the survivors wait for it (a training loop could go on and take it later).
        deadline = time.monotonic() + 60
        while grown is None and step >= KILL_AT + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
            grown = elastic.grow(group)
        if grown is not None:
            group, grown_at = grown, step
            elastic.broadcast_state(group, {"step": step, "model": model.state_dict(), "opt": opt.state_dict(),
                                            "hook": hook.schedule() if HOOK == "covap" else None})
            ddp = rewrap(group)
    x, y = shard(step)
    opt.zero_grad()
    try:
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
    except RuntimeError as e:
        if not c.expect(shrunk_at is None, f"a second failure at step {step}: {e}"):
            break
        t0 = time.monotonic()
        group = elastic.shrink(group)
        ddp = rewrap(group)
        shrunk_at, took = step, time.monotonic() - t0
        continue  # the same step again, over the survivors
    opt.step()
    losses.append(loss.item())
    step += 1

c.expect(shrunk_at == KILL_AT or (GROW and shrunk_at is not None), f"shrunk at step {shrunk_at}, the rank died at {KILL_AT}")
want = ((rank if rank < victim else size - 1), size) if GROW else (rank, size - 1)
c.expect((dist.get_rank(group), dist.get_world_size(group)) == want,
         f"rank {dist.get_rank(group)} of {dist.get_world_size(group)} at the end, want {want}")
c.expect(not GROW or grown_at is not None, "the replacement never joined")
flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
lo, hi = flat.clone(), flat.clone()
dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=group)
dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=group)
c.expect(torch.equal(lo, hi), "the survivors' parameters differ")
if HOOK == "covap":
    steps = torch.tensor([hook.step] * 2, dtype=torch.int64, device=device)
    steps[1] = -steps[1]
    dist.all_reduce(steps, op=dist.ReduceOp.MAX, group=group)
    c.expect(int(steps[0]) == -int(steps[1]) == STEPS, f"covap hooks at steps {-int(steps[1])}..{int(steps[0])}, "
             f"want {STEPS}")
first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
if not elastic.replacement():
    c.expect(len(losses) == STEPS and last < first, f"losses {first:.4f} -> {last:.4f} (first and last 3 steps)")
if dist.get_rank(group) == 0 and shrunk_at is not None:
    print(f"torch elastic: shrink and DDP re-wrap took {took * 1000:.0f} ms; loss {first:.4f} -> {last:.4f}", flush=True)
if dist.get_rank(group) == 0 and grown_at is not None:
    print(f"torch elastic: the replacement joined at step {grown_at}", flush=True)
c.finish(dist.get_rank(group), dist.get_world_size(group), "torch elastic grow" if GROW else "torch elastic")
sys.exit(0)
