"""Tessera for PyTorch: `import tessera.torch` registers the "tessera" backend of
torch.distributed, and tessera.torch.hooks puts Tessera's algorithms under a
DistributedDataParallel model.

    import torch.distributed as dist
    import tessera.torch
    dist.init_process_group("tessera")      # under tsrun: no store server needed
    model = torch.nn.parallel.DistributedDataParallel(net)
    tessera.torch.hooks.register(model, "marsit")

Under tsrun the ranks find each other through Tessera's launch, whatever MASTER_ADDR holds.
Under torchrun (or any other launcher with MASTER_ADDR and MASTER_PORT) they meet through
torch's store instead; init_method="tessera://" asks for Tessera's store-less rendezvous
explicitly (mpirun, srun with TSR_PEERS). The backend takes CPU tensors of float32, float64,
float16, bfloat16, int32 and int64 (uint8, int8 and bool carried as int32; non-contiguous ones
through copies), on PyTorch 1.13 and 2.x, and CUDA tensors on 2.2 and later (docs/torch.md).
"""
from . import _backend

_backend.register()

ProcessGroupTessera = _backend.ProcessGroupTessera
TesseraStore = _backend.TesseraStore

from . import hooks  # noqa: E402  (after the backend: hooks use it)

__all__ = ["ProcessGroupTessera", "TesseraStore", "hooks"]
