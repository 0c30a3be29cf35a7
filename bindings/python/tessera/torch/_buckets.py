"""One Tessera tensor per DDP bucket, whose state (residual, compensation) follows the
parameters when DDP re-lays-out its buckets.

DDP builds its buckets from the parameters' declaration order, then, after the first
iteration, rebuilds them in the order the gradients became ready: the same parameters land in
other buckets, at other offsets, and the bucket sizes change. A residual kept per bucket index
would then be added to another parameter's gradient. So each bucket's tensor remembers which
parameter sits where; when a bucket's layout changes, every old tensor's residual is read once,
split by parameter, and each new tensor starts with its parameters' pieces (zeros for a
parameter never seen)."""
import itertools

import numpy as np

import tessera
from tessera._buffers import current_device

_instances = itertools.count()  # every rank registers its hooks in the same order

# The share of each bucket the sparse hooks (spardl, topk and its presets, compressed with
# topk or randomk, auto) keep unless told. Not the tensors' own 1%: a hook stands in for DDP's
# averaging, so its default must train as dense does. On the Fashion-MNIST CNN under SGD
# momentum 0.9, 1% ends 1.5-2.8 points below dense after three epochs and 5% within 0.8 of a
# point on two seeds (docs/torch.md, "Sparse hooks at 5%"), sending a tenth (SparDL) to a fifth
# (top-k) of dense's bytes.
SPARSE_DENSITY = 0.05


def _keeps_k(params):
    """Whether a compressed tensor's compressor keeps k entries (top-k, random-k, their presets)."""
    if "compressor" in params:
        return params["compressor"] in ("topk", "randomk")
    return params["algorithm"].startswith("topk")


def _layout(bucket):
    """((parameter id, element count), ...) in the bucket's buffer order, and the bucket's CUDA
    device, None in host memory (its tensor then takes memory=cuda: Tessera's device path)."""
    buffer = bucket.buffer()
    return tuple((id(p), p.numel()) for p in bucket.parameters()), buffer.device if buffer.is_cuda else None


class BucketTensors:
    def __init__(self, comm, params, family):
        self.comm = comm
        self.params = params
        self.family = family  # the registry family params["algorithm"] runs
        self.by_index = {}  # bucket index -> (tensor, layout)
        self.generation = 0
        self.pieces = None  # parameter id -> its residual, while buckets are being rebuilt
        self.visited = set()  # bucket indices already stepped this iteration (their step may run)
        self.prefix = f"ddp{next(_instances)}"

    def check(self):
        """Creates a one-element tensor with the parameters and closes it: a bad key or value is
        reported at registration, not at the first step (creation is local)."""
        probe = tessera.CompressedTensor(self.comm, f"{self.prefix}.check", 64, **self._params(64))
        probe.close()

    def _params(self, count, cuda=False):
        """The tensor's parameters (memory=cuda for a bucket on the GPU); density (the compressed algorithms' share kept) is the
        compressor's k as a ratio, SPARSE_DENSITY for top-k and random-k when neither is given
        (and for SparDL when no density is)."""
        params = dict(self.params)
        if self.family == "compressed":
            density = params.pop("density", None)
            if density is not None:
                if "k" in params:
                    raise ValueError("tessera hooks: give density or k, not both")
                if not 0 < float(density) <= 1:
                    raise ValueError(f"tessera hooks: density={density}: must be in (0, 1]")
                params["k"] = str(density) if float(density) < 1 else str(count)
            elif "k" not in params and _keeps_k(params):
                params["k"] = str(SPARSE_DENSITY)
        elif self.family == "spardl":
            params.setdefault("density", str(SPARSE_DENSITY))
        if cuda:
            params["memory"] = "cuda"
        return params

    def tensor_for(self, bucket):
        layout = _layout(bucket)
        index = bucket.index()
        if index in self.visited:  # a new iteration (the previous one did not end on its last bucket)
            self.visited = set()
        tensor = self._tensor(index, layout)
        self.visited.add(index)
        if bucket.is_last():
            self.visited = set()
            self.pieces = None  # a rebuilt iteration is over: later changes snapshot anew
        return tensor

    def _tensor(self, index, layout):
        current = self.by_index.get(index)
        if current is not None and current[1] == layout:
            return current[0]
        if current is not None and self.pieces is None:
            self._snapshot()  # the first changed bucket of a rebuild: keep every residual
        pieces, device = layout
        count = sum(n for _, n in pieces)
        self.generation += 1
        # Created on the bucket's device: its staging or device path opens on the current one.
        with current_device(device):
            tensor = tessera.CompressedTensor(self.comm, f"{self.prefix}.bucket{index}.g{self.generation}", count,
                                              **self._params(count, device is not None))
        if self.pieces is not None:
            tensor.set_residual(np.concatenate([self.pieces.get(pid, np.zeros(n, np.float32)) for pid, n in pieces])
                                if pieces else np.zeros(0, np.float32))
        if current is not None:
            current[0].close()
        self.by_index[index] = (tensor, layout)
        return tensor

    def take_residuals(self, old):
        """Every tensor of `old` (a hook's state on another communicator: before a shrink or a
        grow) read once and split by parameter: this one's tensors, made at their first step,
        start with their parameters' pieces, whatever the new buckets. Returns the total."""
        self.pieces = {}
        for tensor, layout in old.by_index.values():
            residual, at = tensor.residual(), 0
            for pid, n in layout[0]:
                self.pieces[pid] = residual[at:at + n].copy()
                at += n
        return sum(float(np.abs(p).sum()) for p in self.pieces.values())

    def _snapshot(self):
        # A bucket already stepped this iteration kept its layout (else it would have been
        # replaced, after this snapshot): its parameters stay with it, and its step may run.
        self.pieces = {}
        for index, (tensor, layout) in self.by_index.items():
            if index in self.visited:
                continue
            residual, at = tensor.residual(), 0
            for pid, n in layout[0]:
                self.pieces[pid] = residual[at:at + n].copy()
                at += n

    def allreduce(self, bucket):
        """The bucket's step, in place; a future that Tessera completes with the buffer."""
        tensor = self.tensor_for(bucket)
        return tensor.allreduce(bucket.buffer(), async_op=True).get_future()
