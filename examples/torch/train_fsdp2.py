"""train_fsdp2.py: the Fashion-MNIST CNN of train_fashion_mnist.py sharded with FSDP2
(torch.distributed.fsdp.fully_shard, PyTorch 2.6 and later) over gloo or Tessera's backend.

    tsrun -np 4 ~/venv/bin/python examples/torch/train_fsdp2.py --backend tessera --steps 50

Each layer's parameters are sharded over the ranks: before a layer runs FSDP2 gathers them
(all_gather_into_tensor), after its backward it reduces the gradients to each rank's shard
(reduce_scatter_tensor), then every rank steps its shard. Every rank trains on its own slice of
each global batch (seeded), so the run is deterministic up to the order of floating-point
sums: over gloo and over tessera the same steps give the same parameters within float
tolerance. Rank 0 prints one JSON line at the end (steps, seconds, loss, test accuracy) and,
with --save, writes the full parameters (torch.save of a flat tensor) for comparison. With
--device cuda the model, its shards and the batches are on GPU TSR_LOCAL_RANK modulo the GPUs
this rank sees (the mesh a CUDA one).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_fashion_mnist import DATA, Net, load  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("gloo", "tessera"), default="tessera")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--test-limit", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--save", default="", help="rank 0 writes the final full parameters here")
    p.add_argument("--data", default=DATA)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    return p.parse_args(argv)


def rank_device(kind):
    """This rank's device: the CPU, or GPU TSR_LOCAL_RANK (LOCAL_RANK) modulo the count, made current."""
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise SystemExit("--device cuda: this PyTorch sees no CUDA device (torch.cuda.is_available() is False)")
    local = int(os.environ.get("TSR_LOCAL_RANK", os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device


def sharded_model(seed, device):
    """The CNN, every layer then the whole model wrapped with fully_shard on a 1-D mesh."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(seed)
    net = Net().to(device)
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    for layer in (net.conv1, net.conv2, net.fc1, net.fc2):
        fully_shard(layer, mesh=mesh)
    fully_shard(net, mesh=mesh)
    return net


def full_parameters(net):
    """Every parameter whole (DTensor.full_tensor gathers the shards), laid end to end."""
    return torch.cat([p.full_tensor().detach().reshape(-1) for p in net.parameters()])


def train(args):
    rank, size = dist.get_rank(), dist.get_world_size()
    device = rank_device(args.device)
    x, y = (t.to(device) for t in load(args.data, "train", args.steps * args.batch * size))
    net = sharded_model(args.seed, device)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    start, loss = time.time(), None
    for step in range(args.steps):
        at = (step * size + rank) * args.batch
        optimizer.zero_grad()
        loss = F.cross_entropy(net(x[at:at + args.batch]), y[at:at + args.batch])
        loss.backward()
        optimizer.step()
    seconds = time.time() - start
    flat = full_parameters(net).cpu()
    tx, ty = (t.to(device) for t in load(args.data, "test", args.test_limit))
    with torch.no_grad():
        accuracy = (net(tx).argmax(1) == ty).float().mean().item() * 100
    return flat, {"backend": args.backend, "ranks": size, "steps": args.steps, "seconds": round(seconds, 3),
                  "last_loss": round(loss.item(), 4), "test_accuracy": round(accuracy, 2),
                  "torch": torch.__version__, "device": str(device)}


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.backend == "tessera":
        import tessera.torch  # noqa: F401  (registers the backend)
    rank_device(args.device)  # current before the group is made
    dist.init_process_group(args.backend)
    flat, line = train(args)
    if dist.get_rank() == 0:
        print(json.dumps(line), flush=True)
        if args.save:
            torch.save(flat, args.save)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
