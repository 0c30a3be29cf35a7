"""Launching as torchrun users expect, under tsrun (N ranks), in one process each, in turn:
1. before Tessera is imported: tsrun's torchrun variables (RANK, WORLD_SIZE, LOCAL_RANK,
   LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) are right, and a gloo script runs on them with
   torch's own env:// rendezvous;
2. init_process_group("tessera") with MASTER_ADDR pointing nowhere (a cluster profile's stale
   value): Tessera's launch finds the peers, no store is made or reached; on 2.x, rank 0's
   abort() fails every rank's next collective;
3. init_process_group("gloo") with Tessera imported: its rendezvous hands gloo a real store at
   tsrun's MASTER_ADDR:MASTER_PORT, made on first use;
4. init_process_group("tessera") once more, and new_group: a store there again; on 2.x with
   torch's start barrier on (TORCH_DIST_INIT_BARRIER=1), a group of the last rank alone with
   use_local_synchronization: its barrier's add (that rank's alone) goes to the store, not to
   a world collective the others never join."""
import datetime
import inspect
import os
import sys

import torch
import torch.distributed as dist

from checks import Checks

TIMEOUT = datetime.timedelta(seconds=60)


def summed(rank, size, what, c):
    t = torch.tensor([float(rank + 1), 2.0])
    dist.all_reduce(t)
    want = torch.tensor([size * (size + 1) / 2, 2.0 * size])
    c.expect(torch.equal(t, want), f"{what}: all_reduce gave {t.tolist()}, expected {want.tolist()}")


def main():
    c = Checks()
    env = os.environ
    rank, size = int(env["TSR_RANK"]), int(env["TSR_WORLD_SIZE"])
    for name, want in (("RANK", rank), ("WORLD_SIZE", size), ("LOCAL_RANK", int(env["TSR_LOCAL_RANK"])),
                       ("LOCAL_WORLD_SIZE", int(env["TSR_LOCAL_SIZE"]))):
        c.expect(env.get(name) == str(want), f"{name}={env.get(name)!r}, expected {want}")
    rank0 = env["TSR_PEERS"].split(",")[0].rsplit(":", 1)[0]
    c.expect(env.get("MASTER_ADDR") == rank0, f"MASTER_ADDR={env.get('MASTER_ADDR')!r}, expected rank 0's {rank0}")
    c.expect(env.get("MASTER_PORT", "").isdigit(), f"MASTER_PORT={env.get('MASTER_PORT')!r}")

    # 1. gloo on torch's own env:// rendezvous, as under torchrun.
    dist.init_process_group("gloo", timeout=TIMEOUT)
    c.expect((dist.get_rank(), dist.get_world_size()) == (rank, size), "gloo: rank and size")
    summed(rank, size, "gloo under tsrun", c)
    dist.destroy_process_group()

    # 2. tessera, whatever MASTER_ADDR holds: nothing is sent there.
    import tessera.torch  # noqa: F401  (registers the backend and the rendezvous)
    master = env["MASTER_ADDR"], env["MASTER_PORT"]
    env["MASTER_ADDR"], env["MASTER_PORT"] = "no-store.invalid", "1"
    dist.init_process_group("tessera", timeout=TIMEOUT)
    c.expect(dist.get_backend() == "tessera", f"backend {dist.get_backend()}")
    summed(rank, size, "tessera with MASTER_ADDR pointing nowhere", c)
    if int(torch.__version__.split(".")[0]) >= 2:  # Backend.abort: rank 0's call fails the others'
        from tessera.torch import _backend
        if rank == 0:
            # Once this returns every rank has finished the sum above (an abort fails whatever
            # is still pending anywhere, so it must not overtake that).
            dist.all_reduce(torch.ones(1))
            _backend.tessera_backend_of(dist.distributed_c10d._get_default_group()).abort()
            c.raises(RuntimeError, "rank 0 aborted", lambda: dist.all_reduce(torch.ones(1)), "a call after abort()")
        else:  # the first of these may still finish; the second cannot, rank 0 never joins it
            c.raises(RuntimeError, "rank 0 aborted", lambda: [dist.all_reduce(torch.ones(1)) for _ in range(2)],
                     "a collective after rank 0's abort()")
    dist.destroy_process_group()
    env["MASTER_ADDR"], env["MASTER_PORT"] = master

    # 3. gloo with Tessera imported: the store is made at tsrun's address when gloo asks.
    dist.init_process_group("gloo", timeout=TIMEOUT)
    summed(rank, size, "gloo with tessera.torch imported", c)
    dist.destroy_process_group()

    # 4. tessera again, and a group that needs the store: the last init's store let its port go
    # (rank 0 could not host a second one there: EADDRINUSE).
    local_sync = "use_local_synchronization" in inspect.signature(dist.new_group).parameters
    if local_sync:
        env["TORCH_DIST_INIT_BARRIER"] = "1"
    dist.init_process_group("tessera", timeout=TIMEOUT)
    group = dist.new_group(list(range(size)))
    t = torch.ones(1)
    dist.all_reduce(t, group=group)
    c.expect(t.item() == size, f"a new_group after a second init: {t.item()}")
    if local_sync:
        if rank == size - 1:
            alone = dist.new_group([rank], use_local_synchronization=True)
            c.expect(dist.get_world_size(alone) == 1, "a group of one rank, locally synchronized")
        summed(rank, size, "the world after a locally synchronized new_group", c)
        del env["TORCH_DIST_INIT_BARRIER"]
    dist.destroy_process_group()
    c.finish(rank, size, "torch launch")


if __name__ == "__main__":
    sys.exit(main())
