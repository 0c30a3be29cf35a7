"""Tessera for PyTorch: `import tessera.torch` registers the "tessera" backend of
torch.distributed, and tessera.torch.hooks puts Tessera's algorithms under a
DistributedDataParallel model.

    import torch.distributed as dist
    import tessera.torch
    dist.init_process_group("tessera")      # under tsrun: no MASTER_ADDR, no store server
    model = torch.nn.parallel.DistributedDataParallel(net)
    tessera.torch.hooks.register(model, "marsit")

Under torchrun (or any launcher with MASTER_ADDR and MASTER_PORT) the ranks meet through
torch's store instead; init_method="tessera://" asks for Tessera's store-less rendezvous
explicitly (mpirun, srun with TSR_PEERS). The backend takes contiguous CPU tensors of float32,
float64, float16, bfloat16, int32 and int64.
"""
from . import _backend

_backend.register()

ProcessGroupTessera = _backend.ProcessGroupTessera
TesseraStore = _backend.TesseraStore

from . import hooks  # noqa: E402  (after the backend: hooks use it)

__all__ = ["ProcessGroupTessera", "TesseraStore", "hooks"]
