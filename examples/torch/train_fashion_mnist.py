"""train_fashion_mnist.py: a CNN on Fashion-MNIST with PyTorch DistributedDataParallel, over
DDP's gloo or Tessera's backend, with PyTorch's built-in communication hooks or Tessera's.

    tsrun -np 4 /usr/bin/python3 examples/torch/train_fashion_mnist.py --backend tessera --hook marsit
    tsrun -np 2 python examples/torch/train_fashion_mnist.py --device cuda --hook marsit   # on GPUs

The model has two 3x3 convolutions (32 and 64 channels, each followed by 2x2 max-pooling) and a
3136-384-10 head: 1,227,274 parameters, so at 100 Mbit/s its communication-to-computation ratio
is close to VGG-16's at 10 Gbit/s. Each rank trains on its 1/N of the training set (seeded
shuffle), SGD with momentum; after each epoch rank 0 prints one JSON line: epoch, wall seconds
since training began, bytes this rank sent (Tessera's count, and the network interface's when
it has one of its own), mean train loss, test accuracy (%), and checks that every rank holds
the same parameters. Hooks: none (DDP's own allreduce), fp16 and powersgd (PyTorch's), dense,
marsit, spardl, topk, onebit, covap, auto (Tessera's; see tessera.torch.hooks), selsync
(Tessera's, around the optimizer). SelSync and COVAP with local=1 leave the ranks' models
apart between synchronizations: they are averaged before each evaluation. The data set comes
from Debian's dataset-fashion-mnist. With --device cuda each rank trains on GPU
TSR_LOCAL_RANK modulo the GPUs it sees (several ranks may share one), its gradients and the
hooks' residuals kept on the device (the tessera backend on PyTorch 2.2 or later; docs/torch.md).
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
TORCH_HOOKS = ("none", "fp16", "powersgd")
TESSERA_HOOKS = ("dense", "marsit", "spardl", "topk", "onebit", "covap", "auto", "selsync")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("gloo", "tessera"), default="tessera")
    p.add_argument("--hook", choices=TORCH_HOOKS + TESSERA_HOOKS, default="none")
    p.add_argument("--hook-param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of the hook (repeatable), e.g. density=0.05")
    p.add_argument("--powersgd-rank", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train-limit", type=int, default=0, help="use only the first N training images (0: all)")
    p.add_argument("--test-limit", type=int, default=0, help="use only the first N test images (0: all)")
    p.add_argument("--evals-per-epoch", type=int, default=1,
                   help="test evaluations (and JSON lines) per epoch; their time is not counted")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--json", default="", help="append the epoch lines to this file (rank 0)")
    p.add_argument("--label", default="", help="a name for this run in the JSON lines")
    p.add_argument("--data", default=DATA)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the model, its gradients and the batches live")
    return p.parse_args(argv)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        magic, = struct.unpack(">I", f.read(4))
        dims = struct.unpack(">" + "I" * (magic & 0xFF), f.read(4 * (magic & 0xFF)))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def load(data, split, limit):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data, f"{prefix}-labels-idx1-ubyte.gz"))
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    x = (x - 0.2860) / 0.3530  # Fashion-MNIST's mean and deviation
    return x, torch.from_numpy(labels.astype(np.int64))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(3136, 384)
        self.fc2 = nn.Linear(384, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def hook_params(pairs):
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--hook-param {pair!r}: KEY=VALUE expected")
        out[key] = value
    return out


def attach_hook(model, optimizer, args):
    """Returns (optimizer to use, Tessera communicator or None, the call that gives every rank
    one model before an evaluation, or None where the ranks always hold one)."""
    if args.hook == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif args.hook == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                            start_powerSGD_iter=2, random_seed=args.seed)
        model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    if args.hook in TORCH_HOOKS:
        return optimizer, None, None
    import tessera.torch
    params = hook_params(args.hook_param)
    # Marsit and onebit hand their estimate to the optimizer's momentum: tell them its value.
    handoff_key = {"marsit": "momentum", "onebit": "optimizer_momentum"}.get(args.hook)
    if handoff_key:
        params.setdefault(handoff_key, str(args.momentum))
    if args.hook == "selsync":
        optimizer = tessera.torch.hooks.selsync(model, optimizer, **params)
        return optimizer, optimizer.comm, optimizer.synchronize
    state = tessera.torch.hooks.register(model, args.hook, **params)
    local = args.hook == "covap" and params.get("local") == "1"  # local steps between turns
    return optimizer, state.comm, state.synchronize if local else None


def nic_bytes():
    """Bytes the network interface of this rank's host sent (a host of its own: net0)."""
    try:
        with open("/sys/class/net/net0/statistics/tx_bytes") as f:
            return int(f.read())
    except OSError:
        return None


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.backend == "tessera":
        import tessera.torch  # noqa: F401  (registers the backend)
    if args.backend == "gloo" and "RANK" not in os.environ and "TSR_RANK" in os.environ:
        # torch's env:// reads RANK and WORLD_SIZE; tsrun says TSR_RANK and TSR_WORLD_SIZE.
        os.environ.update(RANK=os.environ["TSR_RANK"], WORLD_SIZE=os.environ["TSR_WORLD_SIZE"])
    device = torch.device("cpu")
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: this PyTorch sees no CUDA device (torch.cuda.is_available() is False)")
        local = int(os.environ.get("TSR_LOCAL_RANK", os.environ.get("LOCAL_RANK", "0")))
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
        # tessera's group bound to the device where this torch takes device_id (2.3 and later).
        import inspect
        bind = args.backend == "tessera" and "device_id" in inspect.signature(dist.init_process_group).parameters
        dist.init_process_group(args.backend, **({"device_id": device} if bind else {}))
    else:
        dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    x_train, y_train = load(args.data, "train", args.train_limit)
    x_test, y_test = load(args.data, "test", args.test_limit)
    x_train, y_train, x_test, y_test = (t.to(device) for t in (x_train, y_train, x_test, y_test))
    # PowerSGD on gloo aborts with more than one bucket (torch 1.13): one bucket for it, the
    # first one (1 MiB by default) included.
    bucket_mb = 64 if args.hook == "powersgd" else 25
    if args.hook == "powersgd":
        dist._DEFAULT_FIRST_BUCKET_BYTES = bucket_mb << 20
    model = nn.parallel.DistributedDataParallel(Net().to(device), bucket_cap_mb=bucket_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    optimizer, comm, synchronize = attach_hook(model, optimizer, args)
    _alive.append(model)  # see the end of the file
    order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(args.seed))
    mine = order[rank::size].to(device)
    steps = len(mine) // args.batch
    nic0 = nic_bytes()
    bytes0 = comm.bytes_sent if comm is not None else None
    evals = max(1, args.evals_per_epoch)
    wall, total, done = 0.0, 0.0, 0
    for epoch in range(1, args.epochs + 1):
        shuffle = mine[torch.randperm(len(mine), generator=torch.Generator().manual_seed(args.seed * 1000 + epoch))
                       .to(device)]
        for part in range(evals):
            model.train()
            began = time.perf_counter()
            part_steps = range(part * steps // evals, (part + 1) * steps // evals)
            for step in part_steps:
                idx = shuffle[step * args.batch:(step + 1) * args.batch]
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
                loss.backward()
                optimizer.step()
                total = total + loss.detach()  # read once per report: no wait for the GPU each step
                done += 1
            if synchronize is not None:
                synchronize()  # evaluate (and go on from) one model
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # the steps' time, not only their queueing
            wall += time.perf_counter() - began  # training only: evaluations are not counted
            line = report(args, model, comm, epoch - 1 + (part + 1) / evals, wall, done,
                          float(total) / max(1, len(part_steps)), bytes0, nic0, x_test, y_test)
            total = 0.0
            if line is None:
                return 1
    dist.destroy_process_group()
    return 0


def report(args, model, comm, epoch, wall, steps, mean_loss, bytes0, nic0, x_test, y_test):
    """Evaluates, prints rank 0's JSON line; None when the ranks' parameters differ."""
    rank, size = dist.get_rank(), dist.get_world_size()
    accuracy = evaluate(model.module, x_test, y_test)
    same = parameters_agree(model.module)
    device = next(model.parameters()).device
    losses = torch.tensor([mean_loss], dtype=torch.float64, device=device)
    dist.all_reduce(losses)
    line = {"label": args.label or f"{args.backend}/{args.hook}", "backend": args.backend, "hook": args.hook,
            "ranks": size, "epoch": round(epoch, 4), "wall_s": round(wall, 3), "steps": steps,
            "train_loss": round(float(losses) / size, 5), "test_accuracy": round(accuracy, 3),
            "ranks_agree": same, "seed": args.seed, "device": str(device)}
    if comm is not None:
        line["tessera_bytes_sent"] = comm.bytes_sent - bytes0
    if nic0 is not None:
        line["nic_bytes_sent"] = nic_bytes() - nic0
    if rank == 0:
        print(json.dumps(line), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(line) + "\n")
    if not same:
        print(f"rank {rank}: the ranks' parameters differ after epoch {epoch}", file=sys.stderr, flush=True)
        return None
    return line


def evaluate(net, x, y):
    net.eval()
    with torch.no_grad():
        correct = sum(int((net(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum()) for i in range(0, len(x), 1000))
    return 100.0 * correct / len(x)


def parameters_agree(net):
    """Every rank holds bit-identical parameters (checked after the evaluation's averaging,
    where the hook takes local steps)."""
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).double()
    digest = torch.stack([flat.sum(), (flat * torch.arange(len(flat), dtype=torch.float64, device=flat.device)).sum()])
    low, high = digest.clone(), digest.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    return bool(torch.equal(low, high))


# torch 1.13's gloo process group can hang in its destructor (it joins a worker thread that
# waits for the GIL the destroying thread holds), which runs when the DDP model goes: the model
# is kept here, and the process leaves at once, without tearing anything down.
_alive = []

if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
