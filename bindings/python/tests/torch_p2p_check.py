"""Point-to-point and the group's lifetime on the "tessera" torch.distributed backend under tsrun
(4 ranks): send/recv around a ring (blocking, isend/irecv with two tags received in the other
order, batch_isend_irecv of a large tensor), inside new_group([1, 3]), bad input named before
anything is sent, a receive from any source refused; on PyTorch 2.x destroy_process_group(group)
shuts that group down (the handle Tessera's own layer borrowed then raises instead of crashing)
while the world goes on; last, a call's own timeout (opts.timeout) fails it, on every rank."""
import datetime
import sys

import torch
import torch.distributed as dist

import tessera
import tessera.torch  # noqa: F401  (registers the backend)
from checks import Checks
from tessera.torch import _backend


def ring(c, rank, size):
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    mine, theirs = torch.full((6,), float(rank)), torch.zeros(6)
    if rank % 2 == 0:
        dist.send(mine, nxt)
        dist.recv(theirs, prev)
    else:
        dist.recv(theirs, prev)
        dist.send(mine, nxt)
    c.expect(torch.equal(theirs, torch.full((6,), float(prev))), f"blocking send/recv ring: {theirs.tolist()}")
    # Two tags: received in the other order than sent, each in its own order.
    a, b, b2 = torch.zeros(3, dtype=torch.int64), torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
    works = [dist.irecv(b, prev, tag=5), dist.irecv(b2, prev, tag=5), dist.irecv(a, prev, tag=1)]
    works += [dist.isend(torch.arange(3) + 10 * rank, nxt, tag=1),
              dist.isend(torch.tensor([1.0, float(rank)], dtype=torch.float64), nxt, tag=5),
              dist.isend(torch.tensor([2.0, float(rank)], dtype=torch.float64), nxt, tag=5)]
    for w in works:
        w.wait()
    c.expect(a.tolist() == [10 * prev, 10 * prev + 1, 10 * prev + 2], f"isend/irecv tag 1: {a.tolist()}")
    c.expect(b.tolist() == [1.0, prev] and b2.tolist() == [2.0, prev], f"tag 5 in order: {b.tolist()} {b2.tolist()}")
    # batch_isend_irecv, both ways around the ring at once, large enough for UCX's rendezvous.
    n = 1 << 18
    out_next, out_prev = torch.full((n,), float(rank)), torch.full((n,), float(-rank))
    in_prev, in_next = torch.zeros(n), torch.zeros(n)
    ops = [dist.P2POp(dist.isend, out_next, nxt), dist.P2POp(dist.irecv, in_prev, prev),
           dist.P2POp(dist.isend, out_prev, prev), dist.P2POp(dist.irecv, in_next, nxt)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    c.expect(torch.equal(in_prev, torch.full((n,), float(prev))) and torch.equal(in_next, torch.full((n,), float(-nxt))),
             f"batch_isend_irecv: {in_prev[:2].tolist()} {in_next[:2].tolist()}")


def in_subgroup(c, rank):
    """new_group([1, 3]): dst and src are global ranks; ranks 0 and 2 meanwhile talk on the world."""
    odd = dist.new_group([1, 3])
    t = torch.tensor([float(rank)])
    if rank == 1:
        dist.send(t, 3, group=odd)
    elif rank == 3:
        dist.recv(t, 1, group=odd)
        c.expect(t.item() == 1.0, f"recv in new_group [1, 3]: {t.item()}")
    elif rank == 0:
        dist.send(t + 100, 2)
    else:
        dist.recv(t, 0)
        c.expect(t.item() == 100.0, f"send on the world beside a subgroup: {t.item()}")


def bad_input(c, rank, size):
    t = torch.zeros(4)
    backend = _backend.tessera_backend_of(dist.distributed_c10d._get_default_group())
    c.raises(RuntimeError, f"rank {size} is not in this group", lambda: backend.send([t], size, 0),
             "a send to a rank out of range")  # torch itself refuses it before the backend
    c.raises(RuntimeError, f"rank {rank} cannot send itself", lambda: backend.send([t], rank, 0), "a send to itself")
    c.raises(RuntimeError, "dtype Short is not taken", lambda: dist.send(torch.zeros(4, dtype=torch.int16),
                                                                           (rank + 1) % size), "an int16 tensor")
    c.raises(RuntimeError, "recvAnysource", lambda: dist.recv(t), "a receive from any source")


def shutdown(c, rank, size):
    """PyTorch 2.x calls the backend's shutdown() from destroy_process_group: the group's
    pending work ends, then its communicator; a hook's borrowed handle raises after."""
    whole = dist.new_group(list(range(size)))
    backend = _backend.tessera_backend_of(whole)
    borrowed = tessera.Communicator.adopt(backend._communicator(), owner=backend)
    t = torch.ones(1000)
    work = dist.all_reduce(t, group=whole, async_op=True)
    dist.destroy_process_group(whole)
    c.expect(work.is_completed() and torch.equal(t, torch.full((1000,), float(size))),
             f"shutdown waited for the pending all_reduce: {t[:2].tolist()}")
    c.raises(tessera.AbortedError, "destroyed", lambda: borrowed.allreduce(torch.ones(2)),
             "the borrowed communicator after shutdown")
    world = torch.ones(1)
    dist.all_reduce(world)
    c.expect(world.item() == size, f"the world after a group's shutdown: {world.item()}")


def call_timeout(c, rank):
    """Rank 0 alone calls an all_reduce whose own timeout is 500 ms: it fails in time, naming the
    timeout, and the others, waiting for a message from rank 0 (with the group's long timeout),
    are told of it."""
    group = dist.distributed_c10d._get_default_group()
    if rank == 0:
        opts = dist.AllreduceOptions()
        opts.timeout = datetime.timedelta(milliseconds=500)
        c.raises(RuntimeError, "timed out after 500 ms", lambda: group.allreduce([torch.ones(3)], opts).wait(),
                 "an all_reduce with opts.timeout that nobody joins")
    else:
        c.raises(RuntimeError, "timed out after 500 ms", lambda: dist.recv(torch.zeros(1), 0),
                 "a recv from rank 0, whose all_reduce timed out")


def main():
    dist.init_process_group("tessera")
    rank, size = dist.get_rank(), dist.get_world_size()
    c = Checks()
    world = _backend.tessera_backend_of(dist.distributed_c10d._get_default_group())
    before = world._get_sequence_number_for_group()
    ring(c, rank, size)
    bad_input(c, rank, size)
    after = world._get_sequence_number_for_group()
    c.expect(after == before, f"point-to-point counted as collectives: sequence number {before} -> {after}")
    if size == 4:
        in_subgroup(c, rank)
    if int(torch.__version__.split(".")[0]) >= 2:
        shutdown(c, rank, size)
    call_timeout(c, rank)
    c.finish(rank, size, "torch point-to-point")


if __name__ == "__main__":
    sys.exit(main())
