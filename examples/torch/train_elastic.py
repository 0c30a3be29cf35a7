"""train_elastic.py: the Fashion-MNIST CNN of train_fashion_mnist.py under DDP over Tessera's
backend, going on when a rank dies (PyTorch 2.x; start it with tsrun --elastic).

    tsrun --elastic -np 4 ~/venv/bin/python examples/torch/train_elastic.py --steps 120 --kill-rank 3 --kill-step 40

Every step is a global batch of --batch images per rank of the starting world, split over the
ranks training now. When a step's backward raises (DDP's allreduce failed: a rank died), every
survivor calls tessera.torch.elastic.shrink, which gives a process group of the survivors, wraps
the model in a new DDP over it (which broadcasts the parameters from its rank 0) and redoes
the step over the new world: no restart, no checkpoint. The optimizer's state (momentum) is
the same on every survivor and carries on. --kill-rank/--kill-step make one rank SIGKILL itself
at a step, to try it.

Rank 0 of the group prints a JSON line every --log-every steps (step, world size, seconds since
training began, loss) and one per recovery (the step, the survivors, how long the shrink and
the re-wrap took, and the time from the failed step's start to the redone step's end); at the
end, the test accuracy.

The usual way out, for comparison (tools/bench/elastic_cluster.sh): --backend gloo with
--checkpoint FILE --checkpoint-every K: rank 0 saves the model and optimizer every K steps, a
failure ends the job, and the job started again resumes from the last checkpoint.
"""
import argparse
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_fashion_mnist import DATA, Net, load  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("tessera", "gloo"), default="tessera",
                   help="gloo: no recovery (a failure ends the job); with --checkpoint, a restart resumes")
    p.add_argument("--checkpoint", default="", help="rank 0 saves here every --checkpoint-every steps; resumed from")
    p.add_argument("--checkpoint-every", type=int, default=20)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--batch", type=int, default=64, help="per rank of the starting world")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--kill-rank", type=int, default=-1, help="this rank SIGKILLs itself ...")
    p.add_argument("--kill-step", type=int, default=-1, help="... at the start of this step")
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--test-limit", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--data", default=DATA)
    return p.parse_args(argv)


def say(group, line):
    if dist.get_rank(group) == 0:
        print(json.dumps(line), flush=True)


def train(args):
    rank, start_size = dist.get_rank(), dist.get_world_size()
    global_batch = args.batch * start_size
    x, y = load(args.data, "train", args.steps * global_batch)
    torch.manual_seed(args.seed)
    net = Net()
    group = dist.group.WORLD
    model = DDP(net, process_group=group)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    began, step, failed_at = time.time(), 0, None
    if args.checkpoint and os.path.exists(args.checkpoint):
        saved = torch.load(args.checkpoint)
        net.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"]
        say(group, {"resumed_at_step": step})
    while step < args.steps:
        if rank == args.kill_rank and step == args.kill_step:
            os.kill(os.getpid(), signal.SIGKILL)
        step_began = time.time()
        # This rank's slice of the step's global batch, by its rank in the group of now.
        me, n = dist.get_rank(group), dist.get_world_size(group)
        rows = slice(step * global_batch + me * global_batch // n, step * global_batch + (me + 1) * global_batch // n)
        optimizer.zero_grad()
        try:
            loss = F.cross_entropy(model(x[rows]), y[rows])
            loss.backward()
        except RuntimeError as e:
            if args.backend != "tessera":
                raise
            failed_at, t0 = step_began, time.time()
            from tessera.torch import elastic
            group = elastic.shrink(group)
            model = DDP(net, process_group=group)
            say(group, {"recovery_at_step": step, "world": dist.get_world_size(group),
                        "shrink_and_rewrap_s": round(time.time() - t0, 3), "error": str(e).splitlines()[0][:160]})
            continue
        optimizer.step()
        if failed_at is not None:
            say(group, {"step": step, "training_again_after_s": round(time.time() - failed_at, 3)})
            failed_at = None
        step += 1
        if args.checkpoint and step % args.checkpoint_every == 0 and dist.get_rank(group) == 0:
            torch.save({"step": step, "model": net.state_dict(), "optimizer": optimizer.state_dict()},
                       args.checkpoint + ".tmp")
            os.replace(args.checkpoint + ".tmp", args.checkpoint)
        if step % args.log_every == 0 or step == args.steps:
            say(group, {"step": step, "world": dist.get_world_size(group), "seconds": round(time.time() - began, 2),
                        "loss": round(loss.item(), 4)})
    tx, ty = load(args.data, "test", args.test_limit)
    with torch.no_grad():
        accuracy = (net(tx).argmax(1) == ty).float().mean().item() * 100
    say(group, {"steps": args.steps, "world": dist.get_world_size(group), "test_accuracy": round(accuracy, 2),
                "seconds": round(time.time() - began, 2), "backend": args.backend, "torch": torch.__version__})


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.backend == "tessera":
        import tessera.torch  # noqa: F401  (registers the backend)
    dist.init_process_group(args.backend)
    train(args)


if __name__ == "__main__":
    main()
