"""train_elastic.py: the Fashion-MNIST CNN of train_fashion_mnist.py under DDP over Tessera's
backend, going on when a rank dies, and whole again when its replacement joins (PyTorch 2.x;
start it with tsrun --elastic, or tsrun --respawn N to have failed ranks started again).

    tsrun --elastic -np 4 ~/venv/bin/python examples/torch/train_elastic.py --steps 120 --kill-rank 3 --kill-step 40
    tsrun --respawn 1 -np 4 ~/venv/bin/python examples/torch/train_elastic.py --steps 120 --kill-rank 3 --kill-step 40

Every step is a global batch of --batch images per rank of the starting world, split over the
ranks training now. When a step's backward raises (DDP's allreduce failed: a rank died), every
survivor calls tessera.torch.elastic.shrink, which gives a process group of the survivors, wraps
the model in a new DDP over it (which broadcasts the parameters from its rank 0) and redoes
the step over the new world: no restart, no checkpoint. The optimizer's state (momentum) is
the same on every survivor and carries on. --kill-rank/--kill-step make one rank SIGKILL itself
at a step, to try it.

Under --respawn the failed rank is started again (TSR_JOIN=1): it joins (elastic.join) while
the survivors train on; at the start of each step they call elastic.grow, which lets it in
when it has asked (a small all-gather otherwise), send it the step, model and optimizer
(elastic.broadcast_state), and all re-wrap DDP: the step goes on over the whole world again.

Rank 0 of the group prints a JSON line every --log-every steps (step, world size, seconds since
training began, loss, the clock) and one per recovery: the step, the survivors, its phases
(detection: from the failed step's start to the error; agreement, bootstrap and group:
elastic.last_recovery(); rewrap: DDP's construction) and then the time from the failed step's
start to the redone step's end; one per grow (its phases, the state's broadcast); the
replacement one when it has joined (from its start: imports and data, join, state); at the end,
the test accuracy.

The usual way out, for comparison (tools/bench/elastic_cluster.sh): --backend gloo with
--checkpoint FILE --checkpoint-every K: rank 0 saves the model and optimizer every K steps, a
failure ends the job, and the job started again resumes from the last checkpoint.
"""
import time

STARTED = time.time()  # before the imports: a replacement's time to join counts them

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

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


def state_of(step, net, optimizer, began):
    return {"step": step, "model": net.state_dict(), "optimizer": optimizer.state_dict(), "began": began}


def train(args, elastic=None):
    replacement = elastic is not None and elastic.replacement()
    torch.manual_seed(args.seed)
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    began, step, failed_at, waiting = time.time(), 0, None, elastic is not None
    if replacement:  # a failed rank started again: join the others and take their state
        rank, start_size = int(os.environ["TSR_RANK"]), int(os.environ["TSR_WORLD_SIZE"])
    else:
        rank, start_size = dist.get_rank(), dist.get_world_size()
        group = dist.group.WORLD
    global_batch = args.batch * start_size
    x, y = load(args.data, "train", args.steps * global_batch)
    if replacement:
        ready = time.time()
        group = elastic.join()
        joined = time.time()
        state = elastic.broadcast_state(group)
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, began = state["step"], state["began"]
        print(json.dumps({"replacement_joined_at_step": step, "rank": dist.get_rank(group), "time": round(time.time(), 3),
                          "world": dist.get_world_size(group), "start_to_ready_s": round(ready - STARTED, 2),
                          "join_s": round(joined - ready, 2), "state_s": round(time.time() - joined, 2),
                          "from_its_start_s": round(time.time() - STARTED, 2)}), flush=True)
    model = DDP(net, process_group=group)
    logged, logged_at = 0.0, step  # losses summed since the last line's step
    if args.checkpoint and os.path.exists(args.checkpoint):
        saved = torch.load(args.checkpoint)
        net.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = logged_at = saved["step"]
        say(group, {"resumed_at_step": step})
    while step < args.steps:
        if rank == args.kill_rank and step == args.kill_step and not replacement:
            os.kill(os.getpid(), signal.SIGKILL)
        # Below the starting size, each step asks for a replacement (an 8-byte all-gather).
        if waiting and dist.get_world_size(group) < start_size:
            t0 = time.time()
            grown = elastic.grow(group)  # None while no replacement has asked
            if grown is not None:
                group, t1 = grown, time.time()
                phases = {k + "_s": round(v, 3) for k, v in elastic.last_recovery().items()}
                elastic.broadcast_state(group, state_of(step, net, optimizer, began))
                t2 = time.time()
                model = DDP(net, process_group=group)
                say(group, {"grown_at_step": step, "world": dist.get_world_size(group), **phases,
                            "state_s": round(t2 - t1, 3), "rewrap_s": round(time.time() - t2, 3),
                            "grow_s": round(time.time() - t0, 3)})
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
            group = elastic.shrink(group)
            t1 = time.time()
            model = DDP(net, process_group=group)
            phases = {k + "_s": round(v, 3) for k, v in elastic.last_recovery().items()}
            say(group, {"recovery_at_step": step, "world": dist.get_world_size(group), "time": round(t0, 3),
                        "detection_s": round(t0 - step_began, 3), **phases, "rewrap_s": round(time.time() - t1, 3),
                        "error": str(e).splitlines()[0][:160]})
            continue
        optimizer.step()
        logged += loss.item()
        if failed_at is not None:
            say(group, {"step": step, "training_again_after_s": round(time.time() - failed_at, 3)})
            failed_at = None
        step += 1
        if args.checkpoint and step % args.checkpoint_every == 0 and dist.get_rank(group) == 0:
            torch.save({"step": step, "model": net.state_dict(), "optimizer": optimizer.state_dict()},
                       args.checkpoint + ".tmp")
            os.replace(args.checkpoint + ".tmp", args.checkpoint)
        if step % args.log_every == 0 or step == args.steps:
            # The mean loss of the steps since the last line.
            say(group, {"step": step, "world": dist.get_world_size(group), "seconds": round(time.time() - began, 2),
                        "loss": round(logged / (step - logged_at), 4), "time": round(time.time(), 3)})
            logged, logged_at = 0.0, step
    tx, ty = load(args.data, "test", args.test_limit)
    with torch.no_grad():
        accuracy = (net(tx).argmax(1) == ty).float().mean().item() * 100
    say(group, {"steps": args.steps, "world": dist.get_world_size(group), "test_accuracy": round(accuracy, 2),
                "seconds": round(time.time() - began, 2), "backend": args.backend, "torch": torch.__version__})


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    elastic = None
    if args.backend == "tessera":
        import tessera.torch  # noqa: F401  (registers the backend)
        from tessera.torch import elastic
    if elastic is None or not elastic.replacement():
        dist.init_process_group(args.backend)
    train(args, elastic)


if __name__ == "__main__":
    main()
