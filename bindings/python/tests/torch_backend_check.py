"""The "tessera" torch.distributed backend under tsrun (N ranks): every collective, op and dtype
against a float64 reference, in place and out of place, blocking and async (Work.wait and
get_future; an async call's input kept as long as its Work), non-contiguous tensors (through
copies, as gloo takes them), new_group([1, 3]) and
new_group([0, 2]) on 4 ranks, splitting on PyTorch 2.x, and the errors: a mismatch on every rank
naming both ranks, a bad dtype or device named before anything is sent (a CUDA tensor where
none can be taken included)."""
import datetime
import sys

import torch
import torch.distributed as dist

import tessera.torch  # noqa: F401  (registers the backend)
from checks import Checks

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]
OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.AVG: "avg", dist.ReduceOp.MIN: "min",
       dist.ReduceOp.MAX: "max", dist.ReduceOp.PRODUCT: "prod"}


def value(rank, j, op):
    """Small integers (exact in every dtype); PRODUCT keeps |x| <= 2 so N products stay exact."""
    if op == "prod":
        return float(((rank + j) % 3) - 1 or 2)
    return float((rank * 7 + j * 3) % 11 - 5)


def reference(size, count, op):
    cols = torch.tensor([[value(r, j, op) for j in range(count)] for r in range(size)], dtype=torch.float64)
    if op in ("sum", "avg"):
        out = cols.sum(0)
        return out / size if op == "avg" else out
    if op == "min":
        return cols.min(0).values
    if op == "max":
        return cols.max(0).values
    return cols.prod(0)


def close(got, want, dtype, op):
    got = got.double()
    if dtype in (torch.int32, torch.int64):
        want = torch.trunc(want) if op == "avg" else want
        return torch.equal(got, want)
    tol = {torch.float16: 1e-2, torch.bfloat16: 2e-2}.get(dtype, 1e-6)
    return torch.allclose(got, want, rtol=tol, atol=tol)


def store_secret(c):
    """Groups that meet through torch's store, which is not authenticated: rank 0 publishes a
    secret there only when the user gave none of their own, and under tsrun only a nonce the
    secret derives from (with the job secret)."""
    import os
    from tessera.torch import _backend
    saved = {k: os.environ.pop(k) for k in ("TSR_JOB_SECRET", "TSR_JOB_SECRET_FILE") if k in os.environ}
    try:
        store = dist.HashStore()
        drawn, held = _backend._peers_through(store, 0, 1, "a")
        held.close()
        c.expect(len(drawn.get("secret", "")) == 64 and store.num_keys() == 2,
                 f"no secret of the user's: rank 0 draws one and publishes it ({sorted(drawn)})")
        # Under tsrun what travels is a nonce: the secret derives from the job's, never sent.
        published = store.get("tessera/a/secret").decode()
        c.expect(_backend._launch_key is not None and drawn["secret"] != published,
                 "under tsrun the group's secret must derive from the job secret, not be the published value")
        os.environ["TSR_JOB_SECRET"] = "the-user's-own-secret"
        store = dist.HashStore()
        own, held = _backend._peers_through(store, 0, 1, "b")
        held.close()
        c.expect("secret" not in own and store.num_keys() == 1,
                 f"TSR_JOB_SECRET set: the store must hold no secret ({sorted(own)})")
    finally:
        os.environ.pop("TSR_JOB_SECRET", None)
        os.environ.update(saved)


def port_reservation(c):
    """A store-met group's bootstrap port is held from the moment it is published until the
    communicator listens: nobody else can bind it meanwhile, the bootstrap's listener can, and
    it lies below the ephemeral range that bind(0) and outgoing connections draw from."""
    import socket
    from tessera.torch import _backend
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    held = _backend._reserve_port(True)
    port = held.getsockname()[1]
    c.expect(20000 <= port < low, f"reserved port {port} must lie in 20000..{low - 1}")
    with held, socket.socket() as other, socket.socket() as listener:
        try:
            other.bind(("127.0.0.1", port))
            c.expect(False, f"a plain bind took the reserved port {port}")
        except OSError:
            pass
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))  # raises (and fails the check) if the reservation blocks it
        listener.listen()


def subgroups(c, rank, size):
    """new_group([1, 3]) and new_group([0, 2]) inside a 4-rank job: each its own communicator,
    found through the store on the members only; the world goes on beside them."""
    odd, even = dist.new_group([1, 3]), dist.new_group([0, 2])
    mine, members = (odd, [1, 3]) if rank % 2 else (even, [0, 2])
    c.expect(dist.get_rank(mine) == members.index(rank) and dist.get_world_size(mine) == 2,
             f"new_group {members}: rank {dist.get_rank(mine)} of {dist.get_world_size(mine)}")
    t = torch.tensor([float(rank), 1.0])
    dist.all_reduce(t, group=mine)
    c.expect(t.tolist() == [float(sum(members)), 2.0], f"all_reduce on new_group {members}: {t.tolist()}")
    b = torch.tensor([float(rank)] * 3)
    dist.broadcast(b, src=members[1], group=mine)  # src is the global rank
    c.expect(b.tolist() == [float(members[1])] * 3, f"broadcast on new_group {members}: {b.tolist()}")
    out = [torch.zeros(2) for _ in members]
    dist.all_gather(out, torch.tensor([float(rank), -1.0]), group=mine)
    c.expect([o[0].item() for o in out] == [float(m) for m in members], f"all_gather on {members}: {out}")
    world = torch.tensor([1.0])
    dist.all_reduce(world)
    c.expect(world.item() == size, f"the world after new_group: {world.item()}")


def split(c, rank, size):
    """PyTorch 2.x's splitting (4 ranks): ProcessGroup.split_group, which asks the backend's
    split (one tsr_comm_split of the world, every rank taking part, nothing through the store),
    and dist.split_group, which wants a device bound to the world (only accelerators have one:
    CPU index 0 stands in here). Each group is its own communicator, ranked as torch ranks it."""
    world = dist.distributed_c10d._get_default_group()
    backend = world._get_backend(torch.device("cpu"))
    c.expect(backend.supports_splitting, "the backend does not say it supports splitting")
    mine = [1, 2, 3] if rank else [0]
    pg = world.split_group(mine, timeout=datetime.timedelta(seconds=60), group_name=f"tsr-split-{len(mine)}")
    c.expect(pg is not None and pg.rank() == mine.index(rank) and pg.size() == len(mine),
             f"split_group {mine}: {pg and (pg.rank(), pg.size())}")
    t = torch.tensor([float(rank), 1.0])
    pg.allreduce([t]).wait()
    c.expect(t.tolist() == [float(sum(mine)), float(len(mine))], f"allreduce on split {mine}: {t.tolist()}")
    outsider = world.split_group([0, 2], group_name="tsr-split-02")  # ranks 1 and 3 take no part
    c.expect((outsider is None) == (rank % 2 == 1), f"split_group [0, 2] on rank {rank}: {outsider}")
    if outsider is not None:
        b = torch.tensor([float(rank)] * 2)
        outsider.broadcast([b], dist.BroadcastOptions()).wait()
        c.expect(b.tolist() == [0.0, 0.0], f"broadcast on split [0, 2]: {b.tolist()}")
    world.bound_device_id = torch.device("cpu", 0)
    try:
        halves = dist.split_group(split_ranks=[[0, 1], [2, 3]])
        # The same split twice: ranks 2 and 3, in no group, take part in both (torch gives them
        # the same group name each time), and the world goes on.
        pairs = [dist.split_group(split_ranks=[[0, 1]]) for _ in range(2)]
    finally:
        world.bound_device_id = None
    c.expect(all((p is None) == (rank >= 2) for p in pairs), f"split_group [[0, 1]] twice: {pairs}")
    w = torch.ones(1)
    dist.all_reduce(w)
    c.expect(w.item() == size, f"the world after two equal splits: {w.item()}")
    s = torch.tensor([float(rank)])
    dist.all_reduce(s, group=halves)
    want = 1.0 if rank < 2 else 5.0
    c.expect(s.item() == want and dist.get_rank(halves) == rank % 2, f"dist.split_group halves: {s.item()}")


def rooted(c, rank, size):
    """reduce, gather and scatter to and from a root other than 0 where there is one; the group's
    sequence number, the same everywhere; a monitored barrier."""
    root = size - 1
    t = torch.full((5,), float(rank + 1))
    dist.reduce(t, dst=root)
    want = float(size * (size + 1) / 2) if rank == root else float(rank + 1)
    c.expect(torch.equal(t, torch.full((5,), want)), f"reduce to rank {root}: {t.tolist()} (non-roots keep theirs)")
    mine = torch.arange(3, dtype=torch.int64) + 10 * rank
    out = [torch.zeros(3, dtype=torch.int64) for _ in range(size)] if rank == root else None
    dist.gather(mine, out, dst=root)
    if rank == root:
        c.expect(all(torch.equal(out[r], torch.arange(3) + 10 * r) for r in range(size)), f"gather: {out}")
    src = 1 % size
    got = torch.zeros(4, dtype=torch.float64)
    blocks = [torch.full((4,), float(100 + r), dtype=torch.float64) for r in range(size)] if rank == src else None
    dist.scatter(got, blocks, src=src)
    c.expect(torch.equal(got, torch.full((4,), float(100 + rank), dtype=torch.float64)), f"scatter: {got.tolist()}")
    group = dist.distributed_c10d._get_default_group()
    c.raises(RuntimeError, f"root rank {size} is not in", lambda: group.reduce([torch.zeros(2)], _reduce_options(size)),
             "a root out of range")
    # torch 2.x's ProcessGroup asks only gloo and NCCL for it: the backend is asked directly.
    from tessera.torch import _backend
    seq = torch.tensor([_backend.tessera_backend_of(group)._get_sequence_number_for_group()], dtype=torch.int64)
    every = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
    dist.all_gather(every, seq)
    c.expect(seq.item() > 0 and all(int(e) == int(seq) for e in every), f"sequence numbers {every}")
    # dist.monitored_barrier refuses every backend but gloo in torch itself; the group's own
    # method reaches the backend.
    import datetime
    group.monitored_barrier(datetime.timedelta(seconds=60))


def all_to_all(c, rank, size):
    """all_to_all_single even (also in place) and uneven (rank s sends (s + 2d) % 3 + 1 rows of 2 to rank d), and
    all_to_all of a list of tensors of different sizes, against what each rank sent; a rank
    whose split disagrees with its peer's raises on every rank."""
    even_in = torch.arange(size * 3, dtype=torch.float64) + 100 * rank
    even_out = torch.zeros(size * 3, dtype=torch.float64)
    dist.all_to_all_single(even_out, even_in)
    want = torch.cat([torch.arange(3 * rank, 3 * rank + 3, dtype=torch.float64) + 100 * s for s in range(size)])
    c.expect(torch.equal(even_out, want), f"all_to_all_single even: {even_out.tolist()}")
    in_place = torch.arange(size * 3, dtype=torch.float64) + 100 * rank  # (t, t), as gloo takes it
    dist.all_to_all_single(in_place, in_place)
    c.expect(torch.equal(in_place, want), f"all_to_all_single in place: {in_place.tolist()}")
    rows = lambda s, d: (s + 2 * d) % 3 + 1  # noqa: E731
    send = [rows(rank, d) for d in range(size)]
    recv = [rows(s, rank) for s in range(size)]
    x = torch.cat([torch.full((n, 2), float(10 * rank + d), dtype=torch.int32) for d, n in enumerate(send)])
    y = torch.zeros(sum(recv), 2, dtype=torch.int32)
    work = dist.all_to_all_single(y, x, output_split_sizes=recv, input_split_sizes=send, async_op=True)
    work.wait()
    want = torch.cat([torch.full((n, 2), 10 * s + rank, dtype=torch.int32) for s, n in enumerate(recv)])
    c.expect(torch.equal(y, want), f"all_to_all_single uneven: {y.flatten().tolist()}")
    ins = [torch.full((d + 1,), float(rank), dtype=torch.float32) for d in range(size)]
    outs = [torch.zeros(rank + 1, dtype=torch.float32) for _ in range(size)]
    dist.all_to_all(outs, ins)
    c.expect(all(torch.equal(outs[s], torch.full((rank + 1,), float(s))) for s in range(size)),
             f"all_to_all of a list: {[o.tolist() for o in outs]}")
    if size > 1:  # rank 0 expects one row too many from rank 1, which is told too
        bad = list(recv)
        if rank == 0:
            bad[1] += 1
        c.raises(RuntimeError, "rank 1 sends", lambda: dist.all_to_all_single(
            torch.zeros(sum(bad), 2, dtype=torch.int32), x, output_split_sizes=bad, input_split_sizes=send),
            "an uneven split that rank 0 and rank 1 disagree on")
    c.raises(RuntimeError, "split sizes add up to", lambda: dist.all_to_all_single(
        torch.zeros(size, dtype=torch.int32), torch.zeros(size, dtype=torch.int32),
        output_split_sizes=[1] * size, input_split_sizes=[2] * size), "splits that do not fit the tensor")


def kept_inputs(c, rank, size):
    """An async collective's input stays alive while its Work does (Tessera may still read it),
    whatever the caller drops, and goes with the Work."""
    import gc
    import weakref
    gather = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
    scatter = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    for name, call, count in (("all_gather_into_tensor", lambda out, x: gather(out, x, async_op=True), 1000),
                              ("reduce_scatter_tensor", lambda out, x: scatter(out, x, async_op=True), 1000 * size)):
        x = torch.full((count,), float(rank + 1))
        out = torch.zeros(1000 * size if name == "all_gather_into_tensor" else 1000)
        ref = weakref.ref(x)
        work = call(out, x)
        del x
        gc.collect()
        c.expect(ref() is not None, f"{name}: the input was let go while its Work lives")
        work.wait()
        del work
        gc.collect()
        c.expect(ref() is None, f"{name}: the input outlived its Work")
        want = float(size) if name == "all_gather_into_tensor" else float(sum(range(1, size + 1)))
        c.expect(out[-1].item() == want, f"{name} with the input dropped: {out[-1].item()}")


class _NoStorageCuda(torch.Tensor):
    """A tensor that says it is on cuda:0 and has no memory (torch's wrapper subclass, as its
    fake tensors are): enough for the backend's placement checks, which must refuse it before
    anything touches CUDA or is sent."""

    @staticmethod
    def __new__(cls, count):
        return torch.Tensor._make_wrapper_subclass(cls, (count,), dtype=torch.float32, device=torch.device("cuda", 0))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"no memory behind this tensor ({func})")


def devices(c, rank, size):
    """Where the tensors are, checked on the backend itself (PyTorch 2.x hands it out; torch's
    own dispatch, which 1.13's group calls go through, stops a meta or storage-less tensor
    first): another device type, CPU and CUDA mixed in one call, and a CUDA tensor where this
    build or process cannot take one, each named, on every rank alike, and the group goes on."""
    from tessera.torch import _backend
    world = dist.distributed_c10d._get_default_group()
    if not hasattr(world, "_get_backend"):
        return
    backend = _backend.tessera_backend_of(world)
    sequence = backend._get_sequence_number_for_group()
    c.raises(RuntimeError, "a tensor on meta: the tessera backend takes CPU and CUDA tensors",
             lambda: backend.allreduce([torch.zeros(3, device="meta")]), "a meta tensor")
    fake = _NoStorageCuda(3)
    c.raises(RuntimeError, "tensor 1 is on cpu and an earlier one on cuda:0: one call's tensors are on one device",
             lambda: backend.allgather([[fake] + [torch.zeros(3)] * (size - 1)], [torch.zeros(3)]), "CPU and CUDA mixed")
    if not _backend._ext.cuda_tensors:
        needle = f"CUDA tensors need the backend built against PyTorch 2.2 or later (this one: {torch.__version__}"
    elif not torch.cuda.is_available():
        needle = "a tensor on cuda:0, but this process has 0 usable CUDA devices"
    else:
        return
    c.raises(RuntimeError, needle, lambda: backend.allreduce([fake]), "a CUDA tensor here")
    c.expect(backend._get_sequence_number_for_group() == sequence, "refused calls counted in the group's sequence")
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    c.expect(t.item() == sum(range(size)), f"an all_reduce after the refused calls: {t.item()}")
    c.expect(backend._get_sequence_number_for_group() == sequence + 1, "the all_reduce not counted in the sequence")


def strided(c, rank, size):
    """Non-contiguous tensors, as gloo takes them: through contiguous copies, copied back."""
    grid = torch.arange(12.0).reshape(3, 4) + rank
    dist.all_reduce(grid.t())  # in place through the transposed view
    want = (torch.arange(12.0).reshape(3, 4) * size + size * (size - 1) / 2)
    c.expect(torch.equal(grid, want), f"all_reduce of a transposed tensor: {grid.tolist()}")
    row = torch.zeros(2, 6)
    row[:, ::2] = rank + 1.0
    dist.broadcast(row[:, ::2], src=size - 1)  # every other column
    c.expect(torch.equal(row[:, ::2], torch.full((2, 3), float(size))) and not row[:, 1::2].any(),
             f"broadcast into a strided slice: {row.tolist()}")
    out = torch.zeros(3, size)
    dist.all_gather(list(out.t().unbind()), torch.tensor([rank, 10.0 * rank, -rank]))  # columns
    c.expect(all(out[:, r].tolist() == [r, 10.0 * r, -r] for r in range(size)), f"all_gather into columns: {out}")


def _reduce_options(size):
    opts = dist.ReduceOptions()
    opts.rootRank = size
    return opts


def main():
    dist.init_process_group("tessera")
    rank, size = dist.get_rank(), dist.get_world_size()
    c = Checks()
    store_secret(c)
    port_reservation(c)
    for dtype in DTYPES:
        for op_code, op in OPS.items():
            if op == "avg" and dtype in (torch.int32, torch.int64):
                continue  # torch's AVG is for floating tensors
            for count in (1, 7, 1000):
                t = torch.tensor([value(rank, j, op) for j in range(count)], dtype=dtype)
                async_op = count == 7
                work = dist.all_reduce(t, op=op_code, async_op=async_op)
                if async_op:
                    fut = work.get_future()
                    fut.wait()
                    c.expect(work.is_completed(), f"all_reduce {dtype} {op} work not done")
                    c.expect(fut.value()[0] is not None, f"all_reduce {dtype} {op}: future has no value")
                c.expect(close(t, reference(size, count, op), dtype, op), f"all_reduce {dtype} {op} count {count}: {t[:4]}")
        # broadcast from the last rank, all_gather (list and into one tensor), reduce_scatter
        t = torch.full((5,), float(rank + 1), dtype=dtype)
        dist.broadcast(t, src=size - 1)
        c.expect(torch.equal(t, torch.full((5,), float(size), dtype=dtype)), f"broadcast {dtype}: {t}")
        mine = torch.arange(3, dtype=dtype) + 10 * rank
        out = [torch.zeros(3, dtype=dtype) for _ in range(size)]
        dist.all_gather(out, mine)
        c.expect(all(torch.equal(out[r], torch.arange(3, dtype=dtype) + 10 * r) for r in range(size)),
                 f"all_gather {dtype}")
        flat = torch.zeros(3 * size, dtype=dtype)
        dist.all_gather_into_tensor(flat, mine) if hasattr(dist, "all_gather_into_tensor") else \
            dist._all_gather_base(flat, mine)
        c.expect(torch.equal(flat, torch.cat(out)), f"all_gather_into_tensor {dtype}")
        blocks = [torch.full((4,), float(r + rank), dtype=dtype) for r in range(size)]
        got = torch.zeros(4, dtype=dtype)
        dist.reduce_scatter(got, blocks)
        want = float(sum(rank + q for q in range(size)))
        c.expect(torch.equal(got, torch.full((4,), want, dtype=dtype)), f"reduce_scatter {dtype}: {got}")
        got2 = torch.zeros(4, dtype=dtype)
        work = dist.reduce_scatter_tensor(got2, torch.cat(blocks), async_op=True) \
            if hasattr(dist, "reduce_scatter_tensor") else dist._reduce_scatter_base(got2, torch.cat(blocks), async_op=True)
        work.wait()
        c.expect(torch.equal(got2, got), f"reduce_scatter_tensor {dtype}: {got2}")
    dist.barrier()
    strided(c, rank, size)
    kept_inputs(c, rank, size)
    rooted(c, rank, size)
    all_to_all(c, rank, size)
    devices(c, rank, size)
    if size == 4:
        subgroups(c, rank, size)
        if hasattr(dist, "split_group"):
            split(c, rank, size)
    # Local errors name what was wrong, before anything is sent.
    c.raises(RuntimeError, "dtype Short is not taken", lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int16)),
             "an int16 tensor")
    if hasattr(dist, "_make_nccl_premul_sum"):
        c.raises(RuntimeError, "reduce op PREMUL_SUM is not taken",
                 lambda: dist.all_reduce(torch.zeros(3), op=dist._make_nccl_premul_sum(2.0)), "PREMUL_SUM")
    # A mismatch (rank 0 counts one more) raises on every rank, naming the field and two ranks.
    if size > 1:
        t = torch.zeros(9 if rank == 0 else 8)
        try:
            dist.all_reduce(t)
            c.expect(False, "a mismatched all_reduce succeeded")
        except RuntimeError as e:
            c.expect("TSR_ERR_MISMATCH" in str(e) and "count differs" in str(e), f"mismatch message: {e}")
        try:
            dist.barrier()
            c.expect(False, "a barrier after the mismatch succeeded")
        except RuntimeError as e:
            c.expect("TSR_ERR_ABORTED" in str(e) or "MISMATCH" in str(e), f"after the mismatch: {e}")
    c.finish(rank, size, "torch backend")


if __name__ == "__main__":
    sys.exit(main())
