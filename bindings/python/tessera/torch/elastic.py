"""Training goes on when a rank dies (PyTorch 2.x): after a collective of a tessera process group
fails, every surviving rank calls shrink(), which shrinks the group's Tessera communicator to
the survivors (tsr_comm_shrink: they agree on who is lost; only a majority goes on) and returns
a torch ProcessGroup of them, registered with torch.distributed as split_group's groups are, so
that DDP, the collectives (group=) and get_rank/get_world_size take it:

    try:
        loss.backward()                     # DDP's allreduce fails: a rank died
    except RuntimeError:
        group = tessera.torch.elastic.shrink(group)
        model = DDP(model.module, process_group=group)   # re-wrapped: it broadcasts the state
        ...                                 # re-shard the data by dist.get_rank(group)

The world group itself keeps its dead members (torch cannot shrink it): use the returned group
from then on. Start the job with tsrun --elastic (docs/elastic.md)."""
import itertools

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from .. import Communicator
from . import _backend

_shrinks = itertools.count()


def shrink(group=None):
    """The survivors' ProcessGroup, after a failure of `group` (default: the world), called by
    every live rank of it. Raises RuntimeError when this rank's side is not a majority, or the
    survivors do not agree in time."""
    if not hasattr(dist, "split_group"):
        raise NotImplementedError(f"tessera.torch.elastic needs PyTorch 2.x (this is {torch.__version__})")
    group = group or c10d._get_default_group()
    backend = _backend.tessera_backend_of(group)
    if backend is None:
        raise ValueError(f"tessera.torch.elastic.shrink: {group} has no tessera backend")
    old_ranks = c10d.get_process_group_ranks(group)  # global ranks, in group order
    me = old_ranks[group.rank()]
    survivors = backend._shrink()
    # Which global ranks survived: each survivor's, gathered over the survivors' communicator.
    comm = Communicator.adopt(survivors._communicator(), owner=survivors)
    global_ranks = [int(r) for r in comm.allgather(np.array([me], np.int64))]
    comm.close()
    name = f"tessera-shrink-{next(_shrinks)}-{'-'.join(map(str, global_ranks))}"
    store = dist.PrefixStore(f"{name}/", c10d._world.pg_map[group][1])
    pg = dist.ProcessGroup(store, survivors.rank(), survivors.size())
    kind = dist.ProcessGroup.BackendType.CUSTOM
    for device in ("cpu", "cuda") if _backend._ext.cuda_tensors else ("cpu",):
        pg._register_backend(torch.device(device), kind, survivors)
    pg._set_default_backend(kind)
    pg._set_group_name(name)
    pg._set_group_desc(name)
    survivors._set_sequence_number_for_group()
    # Known to torch.distributed as split_group's groups are (distributed_c10d.split_group).
    backend_name = c10d._world.pg_map[group][0]
    c10d._world.pg_map[pg] = (backend_name, store)
    c10d._world.pg_names[pg] = name
    c10d._register_process_group(name, pg)
    c10d._world.pg_backend_config[pg] = c10d._world.pg_backend_config.get(group, str(backend_name))
    tag = f"ptd:{name}"
    c10d._world.tags_to_pg.setdefault(tag, []).append(pg)
    c10d._world.pg_to_tag[pg] = tag
    c10d._world.pg_group_ranks[pg] = {g: i for i, g in enumerate(global_ranks)}
    return pg

