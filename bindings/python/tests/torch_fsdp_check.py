"""FSDP2 and DTensor on the tessera backend (PyTorch 2.x), under tsrun on 4 ranks:
1. fully_shard trains the Fashion-MNIST CNN of examples/torch (train_fsdp2.py) for a few steps
   over gloo, then over tessera, from the same seed: the same parameters within float tolerance;
2. a 2 x 2 DeviceMesh (its row and column groups: new_group on the tessera backend) with a
   DTensor sharded on both dimensions, redistributed to replicated on one and on both, a
   partial sum reduced, each against the whole tensor.
With --cuda [--data DIR] (tools/gpu/device_check.sh, on a GPU machine) only the first, over
tessera on CUDA against tessera on the CPU (float tolerance for the GPU's other rounding): FSDP2
gathers and reduces on streams of its own, which the stream-side Work.wait() holds."""
import os
import sys

import torch
import torch.distributed as dist

import tessera.torch  # noqa: F401  (registers the backend)
from checks import Checks

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples", "torch"))
import train_fsdp2  # noqa: E402

STEPS = 6
CUDA = "--cuda" in sys.argv
DATA = sys.argv[sys.argv.index("--data") + 1] if "--data" in sys.argv else train_fsdp2.DATA


def fsdp_parameters(backend, device="cpu"):
    args = train_fsdp2.parse_args(["--backend", backend, "--steps", str(STEPS), "--batch", "32",
                                   "--test-limit", "200", "--data", DATA, "--device", device])
    bound = train_fsdp2.rank_device(device)
    dist.init_process_group(backend, **({"device_id": bound} if device == "cuda" else {}))
    flat, line = train_fsdp2.train(args)
    dist.destroy_process_group()
    return flat, line


def fsdp_on_cuda():
    """FSDP2 over tessera on CUDA against the same on the CPU."""
    c = Checks()
    reference, cpu_line = fsdp_parameters("tessera")
    flat, line = fsdp_parameters("tessera", "cuda")
    rank = int(os.environ["TSR_RANK"])
    difference = float((flat - reference).abs().max())
    c.expect(line["device"].startswith("cuda"), f"FSDP2 ran on {line['device']}")
    c.expect(torch.allclose(flat, reference, rtol=1e-3, atol=1e-4),
             f"FSDP2 on CUDA vs the CPU after {STEPS} steps: largest difference {difference:.3g}")
    c.expect(abs(line["last_loss"] - cpu_line["last_loss"]) <= 1e-3 * max(1.0, abs(cpu_line["last_loss"])),
             f"FSDP2 loss on CUDA {line['last_loss']} vs the CPU {cpu_line['last_loss']}")
    c.finish(rank, 4, f"torch FSDP2 on CUDA (largest difference to the CPU {difference:.3g})")


def dtensor_on_a_2x2_mesh(c, rank):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    row, col = divmod(rank, 2)
    c.expect(list(mesh.get_coordinate()) == [row, col], f"mesh coordinate {mesh.get_coordinate()}")
    c.expect(mesh.get_group("dp").size() == 2 and mesh.get_group("tp").size() == 2, "mesh groups of 2")
    whole = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    local = whole[4 * row:4 * row + 4, 4 * col:4 * col + 4].clone()
    dt = DTensor.from_local(local, mesh, [Shard(0), Shard(1)])
    c.expect(torch.equal(dt.full_tensor(), whole), "full_tensor of a tensor sharded on both dimensions")
    rows = dt.redistribute(mesh, [Replicate(), Shard(1)])
    c.expect(torch.equal(rows.to_local(), whole[:, 4 * col:4 * col + 4]),
             f"Shard(0) -> Replicate on dp: local {tuple(rows.to_local().shape)}")
    both = dt.redistribute(mesh, [Replicate(), Replicate()])
    c.expect(torch.equal(both.to_local(), whole), "Replicate on both dimensions")
    # A partial sum on tp (each rank holds rank + 1), reduced to replicated: 1+2 or 3+4.
    partial = DTensor.from_local(torch.full((3,), float(rank + 1)), mesh, [Replicate(), Partial()])
    summed = partial.redistribute(mesh, [Replicate(), Replicate()]).to_local()
    want = float(2 * row + 1 + 2 * row + 2)
    c.expect(torch.equal(summed, torch.full((3,), want)), f"Partial -> Replicate on tp: {summed.tolist()}")


def main():
    if CUDA:
        return fsdp_on_cuda()
    c = Checks()
    reference, gloo_line = fsdp_parameters("gloo")
    flat, line = fsdp_parameters("tessera")
    rank = int(os.environ["TSR_RANK"])
    difference = float((flat - reference).abs().max())
    c.expect(torch.allclose(flat, reference, rtol=1e-4, atol=1e-5),
             f"FSDP2 on tessera vs gloo after {STEPS} steps: largest difference {difference:.3g}")
    c.expect(line["last_loss"] == gloo_line["last_loss"] or abs(line["last_loss"] - gloo_line["last_loss"]) < 1e-3,
             f"FSDP2 loss {line['last_loss']} vs gloo {gloo_line['last_loss']}")
    dist.init_process_group("tessera")
    dtensor_on_a_2x2_mesh(c, rank)
    every = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(every, torch.tensor([difference]))
    dist.destroy_process_group()
    c.finish(rank, 4, f"torch FSDP2 and DTensor (largest difference to gloo {max(float(e) for e in every):.3g})")


if __name__ == "__main__":
    sys.exit(main())
