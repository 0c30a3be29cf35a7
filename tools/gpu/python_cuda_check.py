"""The Python layer's dense collectives on CUDA tensors, on a GPU machine (tools/gpu/device_check.sh
runs it under tsrun from the kit): allreduce (every op), allgather, broadcast and reduce_scatter
on PyTorch CUDA tensors of each dtype, blocking and async, against a float64 reference of every
rank's input computed on the CPU; the results stay on the device. Then the same memory as other
libraries' arrays, which the layer reads without PyTorch (objects that offer only
__cuda_array_interface__ version 3, as CuPy's arrays, or only __dlpack__, as JAX's): allreduce
in place and broadcast on the first, allreduce into out= from the second (DLPack arrays are
read-only), and a non-contiguous one refused by name. Without a usable CUDA device it
prints "no CUDA device" and exits 0 (device_check.sh fails that on a GPU machine). With
TESSERA_CHECK_DUMP_S=S every Python thread's stack goes to stderr after S seconds (a hang says where)."""
import faulthandler
import os
import sys

if float(os.environ.get("TESSERA_CHECK_DUMP_S", "0")) > 0:  # a hang: every Python thread's stack on stderr
    faulthandler.dump_traceback_later(float(os.environ["TESSERA_CHECK_DUMP_S"]), exit=False)

import torch  # noqa: E402  first: its CUDA runtime is the one the process uses

import tessera  # noqa: E402

if not torch.cuda.is_available():
    print("no CUDA device: nothing to check", flush=True)
    sys.exit(0)

comm = tessera.Communicator()
n, me = comm.size, comm.rank
device = torch.device("cuda", comm.local_rank % torch.cuda.device_count())
torch.cuda.set_device(device)
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def values(rank, count):
    return torch.tensor([float((rank * 7 + j * 3) % 11 - 5) for j in range(count)], dtype=torch.float64)


tol = {torch.float16: 1e-2, torch.bfloat16: 2e-2}
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64):
    for op in ("sum", "min", "max", "avg"):
        if op == "avg" and not dtype.is_floating_point:
            continue
        count = 4099
        stack = torch.stack([values(r, count) for r in range(n)])
        want = {"sum": stack.sum(0), "min": stack.min(0).values, "max": stack.max(0).values,
                "avg": stack.sum(0) / n}[op]
        t = values(me, count).to(dtype).to(device)
        request = comm.allreduce(t, op=op, async_op=(op == "max"))
        if op == "max":
            request.wait()
        got = t.double().cpu()
        ok = torch.allclose(got, want, rtol=tol.get(dtype, 1e-6), atol=tol.get(dtype, 1e-6))
        expect(t.is_cuda and ok, f"allreduce {op} {dtype}: {got[:4].tolist()} vs {want[:4].tolist()}")
    mine = (torch.arange(5) + 10 * me).to(dtype).to(device)
    gathered = comm.allgather(mine)
    expect(gathered.is_cuda and gathered.cpu().tolist() == [v + 10 * r for r in range(n) for v in range(5)],
           f"allgather {dtype}")
    b = torch.full((7,), float(me), device=device).to(dtype)
    comm.broadcast(b, root=n - 1)
    expect(b.cpu().tolist() == [n - 1] * 7, f"broadcast {dtype}: {b.cpu().tolist()}")
    blocks = torch.cat([torch.full((3,), float(r + me)) for r in range(n)]).to(dtype).to(device)
    part = comm.reduce_scatter(blocks)
    expect(part.is_cuda and part.cpu().tolist() == [float(sum(me + q for q in range(n)))] * 3,
           f"reduce_scatter {dtype}: {part.cpu().tolist()}")


class InterfaceArray:
    """A CUDA array as CuPy presents one: __cuda_array_interface__ (version 3, its stream the
    legacy default one, 1, where the tensor was made) and nothing of PyTorch's."""

    def __init__(self, tensor, strides=None):
        self.tensor = tensor  # owns the memory
        cai = dict(tensor.__cuda_array_interface__)
        cai.update(version=3, stream=1)
        if strides is not None:
            cai["strides"] = strides
        self.__cuda_array_interface__ = cai


class DlpackArray:
    """A CUDA array as JAX presents one: __dlpack__ and __dlpack_device__ only."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


for dtype in (torch.float32, torch.float16, torch.int64):
    count = 1031
    want = torch.stack([values(r, count) for r in range(n)]).sum(0)
    t = values(me, count).to(dtype).to(device)
    comm.allreduce(InterfaceArray(t))
    ok = torch.allclose(t.double().cpu(), want, rtol=tol.get(dtype, 1e-6), atol=tol.get(dtype, 1e-6))
    expect(ok, f"allreduce of a __cuda_array_interface__ array, {dtype}: {t[:4].tolist()} vs {want[:4].tolist()}")
    b = torch.full((9,), float(me), device=device).to(dtype)
    comm.broadcast(InterfaceArray(b), root=0)
    expect(b.cpu().tolist() == [0] * 9, f"broadcast of a __cuda_array_interface__ array, {dtype}: {b.cpu().tolist()}")
    src, out = values(me, count).to(dtype).to(device), torch.zeros(count, device=device).to(dtype)
    comm.allreduce(DlpackArray(src), out=out)
    ok = torch.allclose(out.double().cpu(), want, rtol=tol.get(dtype, 1e-6), atol=tol.get(dtype, 1e-6))
    expect(ok, f"allreduce of a DLPack array into out=, {dtype}: {out[:4].tolist()} vs {want[:4].tolist()}")
    try:
        comm.allreduce(DlpackArray(values(me, count).to(dtype).to(device)))
        failures.append(f"an in-place allreduce of a read-only DLPack array was taken ({dtype})")
    except ValueError as e:
        expect("read-only" in str(e), f"in-place DLPack refusal: {e}")
wide = torch.zeros((4, 8), device=device)
try:
    comm.allreduce(InterfaceArray(wide[:, :4], strides=(32, 4)))
    failures.append("a non-contiguous __cuda_array_interface__ array was taken")
except ValueError as e:
    expect("non-contiguous" in str(e), f"non-contiguous refusal: {e}")
comm.close()
for f in failures:
    print(f"rank {me}: FAILED: {f}", flush=True)
if me == 0 and not failures:
    print(f"python cuda: PASSED on {n} ranks ({torch.cuda.get_device_name(device)})", flush=True)
sys.exit(1 if failures else 0)
