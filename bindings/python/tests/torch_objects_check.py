"""1-byte tensors on the "tessera" torch.distributed backend under tsrun (2 or more ranks), which
the backend carries widened to int32: torch's object collectives (they move uint8 tensors),
uint8, int8 and bool reductions against a reference (bool ones logical), a broadcast and an
all_gather of an odd number of bytes, DDP with a bool buffer (broadcast at its start); and the
bitwise reductions (BAND, BOR, BXOR) on every integer dtype and bool, refused on floats."""
import functools
import operator
import sys

import torch
import torch.distributed as dist

import tessera.torch  # noqa: F401  (registers the backend)
from checks import Checks


def objects(c, rank, size):
    mine = {"rank": rank, "text": "x" * (rank * 3 + 1)}  # pickles of different, odd lengths
    every = [None] * size
    dist.all_gather_object(every, mine)
    c.expect(every == [{"rank": r, "text": "x" * (r * 3 + 1)} for r in range(size)], f"all_gather_object: {every}")
    sent = [{"from": 0, "values": list(range(5))}, "hello"] if rank == 0 else [None, None]
    dist.broadcast_object_list(sent, src=0)
    c.expect(sent == [{"from": 0, "values": list(range(5))}, "hello"], f"broadcast_object_list: {sent}")
    gathered = [None] * size if rank == size - 1 else None
    dist.gather_object(("rank", rank), gathered, dst=size - 1)
    if rank == size - 1:
        c.expect(gathered == [("rank", r) for r in range(size)], f"gather_object: {gathered}")
    got = [None]
    dist.scatter_object_list(got, [f"for {r}" for r in range(size)] if rank == 0 else None, src=0)
    c.expect(got == [f"for {rank}"], f"scatter_object_list: {got}")
    if size >= 2 and rank < 2 and hasattr(dist, "send_object_list"):  # PyTorch 2.x
        box = [{"pair": 1}] if rank == 0 else [None]
        if rank == 0:
            dist.send_object_list(box, dst=1)
        else:
            dist.recv_object_list(box, src=0)
            c.expect(box == [{"pair": 1}], f"send/recv_object_list: {box}")


def small_types(c, rank, size):
    for dtype in (torch.uint8, torch.int8):
        t = torch.tensor([rank + 1, 100, 2 - rank % 2, rank], dtype=dtype)
        want = torch.tensor([size * (size + 1) // 2, 100 * size, sum(2 - r % 2 for r in range(size)),
                             size * (size - 1) // 2], dtype=torch.int64).to(dtype)  # wraps as torch's sum does
        dist.all_reduce(t)
        c.expect(torch.equal(t, want), f"all_reduce SUM {dtype}: {t.tolist()}, want {want.tolist()}")
        m = torch.tensor([rank, -rank if dtype == torch.int8 else 0], dtype=dtype)
        dist.all_reduce(m, op=dist.ReduceOp.MAX)
        c.expect(m.tolist() == [size - 1, 0], f"all_reduce MAX {dtype}: {m.tolist()}")
    flags = torch.tensor([rank == 0, True, False, rank % 2 == 1])
    anyof, allof = flags.clone(), flags.clone()
    dist.all_reduce(anyof)  # SUM of bools: or
    dist.all_reduce(allof, op=dist.ReduceOp.PRODUCT)  # and
    c.expect(anyof.tolist() == [True, True, False, size > 1], f"all_reduce SUM bool: {anyof.tolist()}")
    c.expect(allof.tolist() == [size == 1, True, False, False], f"all_reduce PRODUCT bool: {allof.tolist()}")
    c.raises(RuntimeError, "AVG of a bool tensor", lambda: dist.all_reduce(flags.clone(), op=dist.ReduceOp.AVG),
             "AVG of bools")
    odd = torch.arange(7, dtype=torch.uint8) * (rank + 1)
    dist.broadcast(odd, src=size - 1)
    c.expect(torch.equal(odd, torch.arange(7, dtype=torch.uint8) * size), f"broadcast uint8: {odd.tolist()}")
    gather_into = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
    c.raises(RuntimeError, "one dtype for all",
             lambda: gather_into(torch.zeros(2 * size, dtype=torch.uint8), torch.zeros(2, dtype=torch.int32)),
             "uint8 and int32 in one call")
    out = [torch.zeros(3, dtype=torch.bool) for _ in range(size)]
    dist.all_gather(out, torch.tensor([True, rank % 2 == 0, False]))
    c.expect(all(o.tolist() == [True, r % 2 == 0, False] for r, o in enumerate(out)), f"all_gather bool: {out}")


def bitwise(c, rank, size):
    ops = {dist.ReduceOp.BAND: ("BAND", operator.and_), dist.ReduceOp.BOR: ("BOR", operator.or_),
           dist.ReduceOp.BXOR: ("BXOR", operator.xor)}

    def pattern(r, dtype):  # every bit, negative values where the dtype has them
        bits = [(r + 1) * 0x2545F491 ^ j * 0x9E3779B9 for j in range(5)]
        if dtype == torch.bool:
            return [b % 3 == 0 for b in bits]
        width = {torch.uint8: 8, torch.int8: 8, torch.int32: 32, torch.int64: 32}[dtype]
        signed = dtype != torch.uint8
        vals = [b % (1 << width) for b in bits]
        return [v - (1 << width) if signed and v >= 1 << (width - 1) else v for v in vals]

    for dtype in (torch.int32, torch.int64, torch.uint8, torch.int8, torch.bool):
        for code, (name, fold) in ops.items():
            t = torch.tensor(pattern(rank, dtype), dtype=dtype)
            dist.all_reduce(t, op=code)
            want = [functools.reduce(fold, col) for col in zip(*(pattern(r, dtype) for r in range(size)))]
            c.expect(t.tolist() == want, f"all_reduce {name} {dtype}: {t.tolist()}, want {want}")
    c.raises(RuntimeError, "op band is bitwise: it takes int32 and int64, not f32",
             lambda: dist.all_reduce(torch.zeros(3), op=dist.ReduceOp.BAND), "BAND of a float tensor")


class WithMask(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
        self.register_buffer("mask", torch.tensor([True, rank == 0, False, True]))  # rank 0's wins

    def forward(self, x):
        return self.fc(x * self.mask)


def ddp_bool_buffer(c, rank, size):
    torch.manual_seed(rank)  # different parameters: DDP's start-up broadcast makes them rank 0's
    model = WithMask(rank)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp(torch.ones(3, 4)).sum().backward()
    c.expect(model.mask.tolist() == [True, True, False, True], f"DDP's bool buffer: {model.mask.tolist()}")
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = [torch.zeros_like(flat) for _ in range(size)]
    dist.all_gather(every, flat)
    c.expect(all(torch.equal(every[0], e) for e in every), "DDP: the ranks' parameters differ after the broadcast")


def main():
    dist.init_process_group("tessera")
    rank, size = dist.get_rank(), dist.get_world_size()
    c = Checks()
    objects(c, rank, size)
    small_types(c, rank, size)
    bitwise(c, rank, size)
    ddp_bool_buffer(c, rank, size)
    c.finish(rank, size, "torch 1-byte tensors")


if __name__ == "__main__":
    sys.exit(main())
