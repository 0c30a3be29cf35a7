"""Training goes on when a rank dies, and a replacement joins (PyTorch 2.x). After a collective of
a tessera process group fails, every surviving rank calls shrink(), which shrinks the group's
Tessera communicator to the survivors (tsr_comm_shrink: they agree on who is lost; only a
majority goes on) and returns a torch ProcessGroup of them, registered with torch.distributed
as split_group's groups are, so that DDP, the collectives (group=) and get_rank/get_world_size
take it:

    try:
        loss.backward()                     # DDP's allreduce fails: a rank died
    except RuntimeError:
        group = tessera.torch.elastic.shrink(group)
        model = DDP(model.module, process_group=group)   # re-wrapped: it broadcasts the state
        ...                                 # re-shard the data by dist.get_rank(group)

Between steps the members call grow(group): None while nobody waits, else the group grown by
the replacements (tsrun --respawn starts a failed rank again with TSR_JOIN=1), which meet it
with join() and take the training state from the members with broadcast_state():

    if replacement():                       # TSR_JOIN=1
        group = join()                      # also torch.distributed's default group here
        state = broadcast_state(group)      # the members' step, model and optimizer
    ...
    grown = grow(group)                     # members, every few steps
    if grown is not None:
        group = grown
        broadcast_state(group, {"step": step, "model": net.state_dict(), ...})
        model = DDP(net, process_group=group)

The world group itself keeps its dead members (torch cannot shrink it): use the returned group
from then on, and group ranks (group_src=, group_dst=) rather than global ones. Start the job
with tsrun --elastic or --respawn N (docs/elastic.md)."""
import io
import itertools
import os
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from .. import Communicator
from . import _backend

_shrinks = itertools.count()


# On a replacement, the global rank (in this process's torch world, the grown group) of each
# process's launch slot (its TSR_RANK); None on the ranks launched first, where the two are one.
_slot_global = None


def replacement():
    """Whether this process was started to replace a failed rank (tsrun --respawn: TSR_JOIN=1)."""
    return os.environ.get("TSR_JOIN") == "1"


def _need_2x():
    if not hasattr(dist, "split_group"):
        raise NotImplementedError(f"tessera.torch.elastic needs PyTorch 2.x (this is {torch.__version__})")


def _backend_of(group, what):
    group = group or c10d._get_default_group()
    backend = _backend.tessera_backend_of(group)
    if backend is None:
        raise ValueError(f"tessera.torch.elastic.{what}: {group} has no tessera backend")
    return group, backend


def _my_slot():
    return int(os.environ["TSR_RANK"]) if _slot_global is not None else dist.get_rank()


_last = {}


def last_recovery():
    """How the latest shrink, grow or join of this process went, in seconds: "agreement" (who
    is lost; who joins), "bootstrap" (the new communicator: endpoints, schedules planned
    afresh), "group" (the torch group made and registered over it)."""
    return dict(_last)


def _slots_of(backend):
    """Every rank's launch slot, in the order of `backend`'s communicator (an all-gather); notes
    the recovery's times."""
    comm = Communicator.adopt(backend._communicator(), owner=backend)
    agreement, bootstrap = comm.recovery_ms()
    slots = [int(r) for r in comm.allgather(np.array([_my_slot()], np.int64))]
    comm.close()
    _last.clear()
    _last.update(agreement=agreement / 1000, bootstrap=bootstrap / 1000, group=0.0)
    return slots


def _global_ranks(slots):
    """The global ranks (in this process's torch world) of processes known by their slots."""
    if _slot_global is None:
        return slots
    for slot in slots:
        if slot not in _slot_global:  # one that came after this replacement: a number of its own
            _slot_global[slot] = max(max(_slot_global.values()) + 1, dist.get_world_size())
    return [_slot_global[slot] for slot in slots]


def _as_group(backend, parent, slots, kind_name):
    """A torch ProcessGroup over `backend`, known to torch.distributed as split_group's groups
    are (distributed_c10d.split_group)."""
    global_ranks = _global_ranks(slots)
    name = f"tessera-{kind_name}-{next(_groups)}-{'-'.join(map(str, slots))}"
    store = dist.PrefixStore(f"{name}/", c10d._world.pg_map[parent][1])
    pg = dist.ProcessGroup(store, backend.rank(), backend.size())
    kind = dist.ProcessGroup.BackendType.CUSTOM
    for device in ("cpu", "cuda") if _backend._ext.cuda_tensors else ("cpu",):
        pg._register_backend(torch.device(device), kind, backend)
    pg._set_default_backend(kind)
    pg._set_group_name(name)
    pg._set_group_desc(name)
    backend._set_sequence_number_for_group()
    backend_name = c10d._world.pg_map[parent][0]
    c10d._world.pg_map[pg] = (backend_name, store)
    c10d._world.pg_names[pg] = name
    c10d._register_process_group(name, pg)
    c10d._world.pg_backend_config[pg] = c10d._world.pg_backend_config.get(parent, str(backend_name))
    tag = f"ptd:{name}"
    c10d._world.tags_to_pg.setdefault(tag, []).append(pg)
    c10d._world.pg_to_tag[pg] = tag
    c10d._world.pg_group_ranks[pg] = {g: i for i, g in enumerate(global_ranks)}
    return pg


_groups = itertools.count()


def shrink(group=None):
    """The survivors' ProcessGroup, after a failure of `group` (default: the world), called by
    every live rank of it. Raises RuntimeError when this rank's side is not a majority, or the
    survivors do not agree in time."""
    _need_2x()
    group, backend = _backend_of(group, "shrink")
    began = time.monotonic()
    survivors = backend._shrink()
    slots = _slots_of(survivors)
    pg = _as_group(survivors, group, slots, "shrink")
    _last["group"] = time.monotonic() - began - _last["agreement"] - _last["bootstrap"]
    return pg


def grow(group=None):
    """Called by every member of `group` at the same point (between steps): the group grown by
    the replacements that asked to join since the last call (members first, in their order,
    replacements after), or None when nobody was waiting (one small all-gather). `group` stays
    usable either way. Send the replacements the training state next (broadcast_state)."""
    _need_2x()
    group, backend = _backend_of(group, "grow")
    began = time.monotonic()
    grown = backend._grow()
    if grown is None:
        return None
    slots = _slots_of(grown)
    pg = _as_group(grown, group, slots, "grow")
    _last["group"] = time.monotonic() - began - _last["agreement"] - _last["bootstrap"]
    return pg


def join():
    """In a replacement (replacement() is true): asks the running job's members to let it in
    and waits for their next grow(); returns the grown group, which is also torch.distributed's
    default group in this process (init_process_group is not to be called)."""
    global _slot_global
    _need_2x()
    if not replacement():
        raise RuntimeError("tessera.torch.elastic.join: this process was not started as a replacement "
                           "(tsrun --respawn sets TSR_JOIN=1)")
    if dist.is_initialized():
        raise RuntimeError("tessera.torch.elastic.join: torch.distributed is initialized already; "
                           "join() makes the default group")
    backend = _backend.ProcessGroupTessera._join()
    _slot_global = {}
    slots = _slots_of(backend)
    _slot_global = {slot: r for r, slot in enumerate(slots)}
    _backend.hand_over(backend)
    dist.init_process_group("tessera", store=dist.HashStore(), rank=backend.rank(), world_size=backend.size())
    return c10d._get_default_group()


def broadcast_state(group, state=None):
    """Rank 0 of `group` sends `state` (any picklable object: a step number, state_dicts with
    their tensors) to every other rank, which gets it as the return value (rank 0 gets its own
    back). As int64 tensors over the group's own collectives."""
    me = dist.get_rank(group)
    payload = np.zeros(0, np.int64)
    if me == 0:
        buffer = io.BytesIO()
        torch.save(state, buffer)
        raw = buffer.getvalue()
        payload = np.frombuffer(raw + b"\0" * (-len(raw) % 8), np.int64)
    length = torch.tensor([len(payload), len(raw) if me == 0 else 0], dtype=torch.int64)
    src = c10d.get_global_rank(group, 0)
    dist.broadcast(length, src=src, group=group)
    data = torch.from_numpy(payload.copy()) if me == 0 else torch.zeros(int(length[0]), dtype=torch.int64)
    dist.broadcast(data, src=src, group=group)
    if me == 0:
        return state
    raw = data.numpy().tobytes()[:int(length[1])]
    return torch.load(io.BytesIO(raw), weights_only=False)
