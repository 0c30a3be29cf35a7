"""Works and futures of the "tessera" torch.distributed backend, and the Python layer's futures,
under tsrun (2 or more ranks): a future's then() callback that waits on another collective (what
DDP's PowerSGD hook does; once hung the job on the progress thread) returns, nested too; DDP
trains with PowerSGD, the ranks alike; Work.wait(timeout) raises once the timeout has passed
while a peer has not posted yet, and the collective still ends right; the Python layer's
get_future() callbacks may wait too, and a wait in a Request.then() callback, which runs on the
thread that drives Tessera, raises, saying why; a callback that destroys its own group returns
(the group's shutdown does not wait for the completion it runs in); the copies back into a
parameter or an inference tensor are made below autograd, as gloo's; sparse tensors are refused."""
import datetime
import sys
import threading

import torch
import torch.distributed as dist

import tessera
import tessera.torch  # noqa: F401  (registers the backend)
from checks import Checks


def waiting_callbacks(c, rank, size):
    x, y, z = torch.tensor([rank + 1.0]), torch.tensor([10.0 * (rank + 1)]), torch.tensor([100.0])
    total = size * (size + 1) / 2

    def inner(f):
        return dist.all_reduce(z, async_op=True).get_future().wait()[0] + f.value()[0]

    def outer(f):  # a callback whose own collective's future has a waiting callback
        return dist.all_reduce(y, async_op=True).get_future().then(inner).wait() + f.value()[0]

    got = dist.all_reduce(x, async_op=True).get_future().then(outer).wait()
    want = 100.0 * size + 10.0 * total + total
    c.expect(got.tolist() == [want], f"then() callbacks waiting on collectives: {got.tolist()}, want {want}")


def powersgd(c, rank, size):
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2)
    ddp.register_comm_hook(state, psgd.powerSGD_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(rank)
    for _ in range(5):  # 2 plain allreduces, then PowerSGD's (whose callbacks wait)
        opt.zero_grad()
        ddp(torch.randn(16, 32, generator=gen)).square().mean().backward()
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = [torch.zeros_like(flat) for _ in range(size)]
    dist.all_gather(every, flat)
    c.expect(all(torch.equal(every[0], e) for e in every), "DDP with PowerSGD: the ranks' parameters differ")
    c.expect(bool(torch.isfinite(flat).all()), "DDP with PowerSGD: parameters not finite")


def wait_with_timeout(c, rank, comm):
    """Rank 1 posts only once rank 0's wait(timeout) has raised (comm.barrier says so)."""
    t = torch.tensor([rank + 1.0])
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        c.raises(RuntimeError, "not finished within 200 ms", lambda: work.wait(timeout=datetime.timedelta(milliseconds=200)),
                 "wait(timeout) on a collective a peer has not posted")
        c.expect(not work.is_completed(), "the Work completed though a peer had not posted")
        comm.barrier()
        work.wait()
    else:
        comm.barrier()
        dist.all_reduce(t)
    want = dist.get_world_size() * (dist.get_world_size() + 1) / 2
    c.expect(t.item() == want, f"the collective after a wait(timeout) raised: {t.item()}, want {want}")


def python_layer(c, rank, size, comm):
    a, b = torch.tensor([rank + 1.0]), torch.tensor([2.0])
    fut = comm.allreduce(a, async_op=True).get_future().then(
        lambda f: comm.allreduce(b, async_op=True).wait()[0] + f.value()[0])
    c.expect(fut.wait().item() == 2.0 * size + size * (size + 1) / 2,
             f"Python layer: get_future().then() waiting on a collective: {fut.wait()}")
    # Request.then(fn) runs on the thread that drives Tessera: a wait there on a receive still
    # pending (rank 1 sends only after the barrier) raises.
    if rank > 1:
        dist.barrier()
        comm.allreduce(torch.tensor([1.0]))
        comm.barrier()
        return
    got, mine = torch.zeros(1), torch.tensor([7.0])
    if rank == 0:
        pending = comm.recv(got, peer=1, tag=3, async_op=True)
        seen, ended = [], threading.Event()

        def waits(result, error):
            try:
                pending.wait()
                seen.append("returned")
            except tessera.TesseraError as e:
                seen.append(str(e))
            ended.set()

        # Registered before rank 1 posts (after the torch barrier): it runs on the progress thread.
        comm.allreduce(torch.tensor([1.0]), async_op=True).then(waits)
        dist.barrier()
        ended.wait(60)
        c.expect(seen and "tsr_request_on_complete callback" in seen[0], f"a wait in Request.then(): {seen}")
        comm.barrier()
        pending.wait()
        c.expect(got.item() == 7.0, f"the receive after: {got.item()}")
    else:
        dist.barrier()
        comm.allreduce(torch.tensor([1.0]))
        comm.barrier()
        comm.send(mine, peer=0, tag=3)


def destroyed_in_a_callback(c, rank, size):
    """A then() callback that destroys the group its collective ran on: the group's shutdown
    waits for every completion it owes but the one running it (PyTorch 2.x shuts it down)."""
    group = dist.new_group(list(range(size)))
    t = torch.ones(4)
    ended = []

    def destroy(fut):
        dist.destroy_process_group(group)
        ended.append(fut.value()[0].tolist())
        return fut.value()

    done = dist.all_reduce(t, group=group, async_op=True).get_future().then(destroy)
    done.wait()
    c.expect(ended == [[float(size)] * 4], f"the destroying callback ended: {ended}")


def below_autograd(c, rank, size):
    """The copies back into the caller's tensors are the collective's writes, as gloo's: a
    parameter (a leaf that requires grad) and an inference tensor take them, on the calling
    thread or a completion thread, whatever the grad mode."""
    p = torch.nn.Parameter(torch.ones(2, 3).t())  # transposed: through a copy, copied back
    dist.all_reduce(p)
    c.expect(torch.equal(p.detach(), torch.full((3, 2), float(size))), f"all_reduce of a parameter: {p.tolist()}")
    with torch.no_grad():
        work = dist.all_reduce(p, async_op=True)
        work.wait()
    c.expect(torch.equal(p.detach(), torch.full((3, 2), float(size * size))), "all_reduce of a parameter, no_grad")
    with torch.inference_mode():
        t = torch.ones(2, 3).t()
        dist.all_reduce(t, async_op=True).wait()
        c.expect(torch.equal(t, torch.full((3, 2), float(size))), f"all_reduce under inference_mode: {t.tolist()}")
    with torch.no_grad():
        outs = [torch.nn.Parameter(torch.zeros(3)) for _ in range(size)]
        dist.all_gather(outs, torch.full((3,), float(rank)))
        c.expect([o[0].item() for o in outs] == [float(r) for r in range(size)], "all_gather into parameters")
    sparse = torch.sparse_coo_tensor([[0]], [1.0], (4,))
    c.raises(RuntimeError, "tessera: a tensor of layout Sparse: the tessera backend takes dense (strided) tensors",
             lambda: dist.all_reduce(sparse), "a sparse tensor")


def main():
    import faulthandler
    faulthandler.dump_traceback_later(90, exit=True)  # a hang names where each rank was
    dist.init_process_group("tessera")
    rank, size = dist.get_rank(), dist.get_world_size()
    comm = tessera.Communicator()
    c = Checks()
    waiting_callbacks(c, rank, size)
    powersgd(c, rank, size)
    wait_with_timeout(c, rank, comm)
    python_layer(c, rank, size, comm)
    below_autograd(c, rank, size)
    destroyed_in_a_callback(c, rank, size)
    dist.barrier()
    c.finish(rank, size, "torch works and futures")


if __name__ == "__main__":
    sys.exit(main())
