"""DDP communication hooks over Tessera: one call puts a Tessera algorithm under a
DistributedDataParallel model's gradient averaging.

    model = DistributedDataParallel(net)            # process group "tessera" or "gloo"
    state = tessera.torch.hooks.register(model, "marsit", topology="ring")

Algorithms (register's `algorithm`; keyword parameters are the algorithm's):
    dense       Tessera's averaging allreduce of each bucket
    marsit      sign-bit allreduce ("Sign Bit is Enough"): topology=ring|torus, intra=none|fp16,
                full_precision_every, seed, ...
    spardl      sparse-block allreduce (SparDL): density=0.05, teams, sag
    compressed  any compressor of the registry with error feedback and momentum:
                compressor=topk|onebit|randomk|dithering|fp16, k or density, ef, momentum, ...
    topk        compressed with compressor=topk (density=0.05 of each bucket kept)
    onebit      compressed with compressor=onebit, one scale per 4096 elements
                (scale_block) and optimizer_momentum=0.9: pass the optimizer's momentum
                (0 for plain SGD); the result then keeps its buffer on the compressed estimate
    covap       COVAP's coarse-grained filtering: interval=auto|N, profile_steps, ef_init,
                ef_ascend_steps, ef_ascend_range, max_interval, local=0|1 (1: local steps
                and parameter averaging instead of a residual, for SGD momentum; the ranks
                then call state.synchronize() to hold one model)
    auto        per bucket, the cost model with the measured links picks dense or topk
                (density=0.05): small, latency-bound buckets stay dense

Each bucket keeps its Tessera tensor (residual, compensation) across steps. DDP re-lays-out its
buckets after the first iteration; the residual then follows each parameter into its new
bucket and place. The momentum hand-off's estimate (marsit's momentum, onebit's
optimizer_momentum) starts afresh in a re-laid-out bucket: that one step returns the estimate
itself, as the first step does, so the optimizer's buffer keeps one extra mu times the last. Communication starts as each bucket is ready, overlapping the rest of the
backward pass: the hook returns a future that completes when Tessera's progress thread says the
collective has ended.

After tessera.torch.elastic's shrink or grow, register the hook on the re-wrapped DDP with
state_from=the old state: the new tensors start with the old ones' residuals, by parameter.

SelSync decides per step whether to synchronize at all, so it wraps the optimizer instead:
    optimizer = tessera.torch.hooks.selsync(model, optimizer, delta=0.3)
"""
import itertools
import torch
import torch.distributed as dist

import tessera
from tessera._buffers import current_device

from . import _backend
from ._buckets import SPARSE_DENSITY, BucketTensors
from ._covap_hook import CovapState

# Every tensor algorithm of Tessera's registry but dense (its own hook): name -> family.
_TENSOR_ALGORITHMS = {name: family for name, family, _, _ in tessera.tensor_algorithms() if name != "dense"}


def communicator_for(process_group=None):
    """The Tessera communicator of a process group: the tessera backend's own, or (for gloo)
    one created for the same ranks, from Tessera's launch or through the group's store."""
    group = process_group if process_group is not None else dist.distributed_c10d._get_default_group()
    backend = _backend.tessera_backend_of(group)
    if backend is not None:
        return tessera.Communicator.adopt(backend._communicator(), owner=backend)
    _forget_destroyed_groups()
    cached = _gloo_side.get(group)
    if cached is not None:
        return cached
    if _backend._tessera_launch() and group.size() == _backend._launch_rank_size()[1]:
        comm = tessera.Communicator()  # the whole launch: its own addresses
    else:
        # A subgroup (or no Tessera launch): its members meet in the default store, under a key
        # of the group's own (its name, the same on every member: new_group is collective),
        # so two disjoint subgroups do not read each other's addresses.
        name = _group_name(group)
        made = _store_keys.setdefault(name, itertools.count())
        store = dist.distributed_c10d._get_default_store()
        settings, held = _backend._peers_through(store, group.rank(), group.size(), f"hooks-{name}-{next(made)}")
        with held:  # the port stays ours until the communicator listens on it
            comm = tessera.Communicator(**settings)
    _gloo_side[group] = comm
    return comm


def _forget_destroyed_groups():
    """Closes the communicators of the gloo groups destroy_process_group() has ended (at the
    next hook's registration: c10d tells nobody), so that none is open until exit."""
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    live = world.pg_map if hasattr(world, "pg_map") else getattr(c10d, "_pg_map", None)  # 2.x, 1.13
    if live is None:
        return
    for group in [g for g in list(_gloo_side.keys()) if g not in live]:
        _gloo_side.pop(group).close()


def _group_name(group):
    """The group's name in c10d (the same on every member)."""
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_get_process_group_name"):  # torch 2.x
        return c10d._get_process_group_name(group)
    return c10d._pg_names.get(group, "group")  # 1.13


# gloo group -> the communicator made for it. By the group itself (c10d holds it too until
# destroy_process_group): a key by id() was taken by a later group that got a destroyed one's
# address (a one-rank group's communicator for a pair: a gradient not averaged, or a hang).
_gloo_side = {}
_store_keys = {}  # group name -> how many communicators this process made for groups of that name


def _tensor_params(algorithm, params):
    """tsr_tensor_create's parameters for a hook algorithm name (the registry's presets, such
    as topk and onebit, carry their own defaults there)."""
    params = dict(params)
    params["algorithm"] = algorithm
    params.setdefault("op", "avg")
    return params


class _State:
    def __init__(self, comm, algorithm, params):
        self.comm = comm
        self.algorithm = algorithm
        self.tensors = (BucketTensors(comm, _tensor_params(algorithm, params), _TENSOR_ALGORITHMS[algorithm])
                        if algorithm in _TENSOR_ALGORITHMS else None)
        self.choices = {}  # auto: bucket index -> "dense" | "topk"

    def dense(self, bucket):
        return self.comm.allreduce(bucket.buffer(), op="avg", async_op=True).get_future()


def _dense_hook(state, bucket):
    return state.dense(bucket)


def _tensor_hook(state, bucket):
    return state.tensors.allreduce(bucket)


def _auto_hook(state, bucket):
    choice = state.choices.get(bucket.index())
    buf = bucket.buffer()
    if choice is None or state.choices.get(("size", bucket.index())) != buf.numel():
        choice = state.auto.choose(buf.numel() * buf.element_size())
        state.choices[bucket.index()] = choice
        state.choices[("size", bucket.index())] = buf.numel()
    if choice == "dense":
        return state.dense(bucket)
    return state.tensors.allreduce(bucket)


class _AutoChoice:
    """Dense or top-k for a bucket of `nbytes`, from the communicator's cost model (its links
    measured at creation): top-k is taken when its all-gather of the kept entries (8 bytes each:
    index and value) beats the dense allreduce by a clear margin."""

    def __init__(self, comm, density, margin=2.0):
        self.comm = comm
        self.density = density
        self.margin = margin

    def choose(self, nbytes):
        dense = self.comm.estimate("allreduce", nbytes)
        kept = max(1, int(self.density * nbytes / 4))
        sparse = self.comm.estimate("allgather", kept * 8)
        return "topk" if sparse * self.margin < dense else "dense"


def register(model, algorithm="dense", communicator=None, state_from=None, **params):
    """Registers a Tessera hook on a DistributedDataParallel model; returns its state. Bad
    parameters raise ValueError (or a TesseraError) naming the key and the value, here, before
    any step. state_from: the state register returned for the same model's earlier DDP (before
    tessera.torch.elastic's shrink or grow re-wrapped it): the compressing algorithms' tensors
    and covap start with its residuals, by parameter, so nothing they held back is lost (covap
    also goes on with its step and interval); a replacement's covap takes a member's
    state.schedule() instead (its residuals start at zero)."""
    if not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        raise TypeError(f"tessera hooks: a DistributedDataParallel model, not {type(model).__name__}")
    if algorithm in _TENSOR_ALGORITHMS or algorithm == "auto":
        # The compressing tensors take float32 buckets (DDP's buckets have the parameters'
        # dtype): said here, not at the first backward.
        other = sorted({str(p.dtype) for p in model.parameters() if p.requires_grad and p.dtype != torch.float32})
        if other:
            raise ValueError(f"tessera hooks: algorithm={algorithm!r} takes float32 gradients, and this model has "
                             f"{', '.join(other)} parameters (dense and covap take any floating type)")
    comm = communicator if communicator is not None else communicator_for(model.process_group)
    if algorithm == "dense":
        if params:
            raise ValueError(f"tessera hooks: dense takes no parameters, got {', '.join(params)}")
        state, hook = _State(comm, algorithm, {}), _dense_hook
    elif algorithm in _TENSOR_ALGORITHMS:
        state, hook = _State(comm, algorithm, params), _tensor_hook
        state.tensors.check()
    elif algorithm == "covap":
        state, hook = CovapState(comm, model.parameters(), **params), CovapState.hook
    elif algorithm == "auto":
        density = float(params.pop("density", SPARSE_DENSITY))
        if not 0 < density <= 1:
            raise ValueError(f"tessera hooks: auto density={density}: must be in (0, 1]")
        if params:
            raise ValueError(f"tessera hooks: auto takes density only, got {', '.join(params)}")
        state = _State(comm, "topk", {"density": density})
        state.auto = _AutoChoice(comm, density)
        state.tensors.check()
        hook = _auto_hook
    else:
        raise ValueError(f"tessera hooks: algorithm={algorithm!r}: accepted values are dense, "
                         f"{', '.join(_TENSOR_ALGORITHMS)}, covap, auto (selsync wraps the optimizer: hooks.selsync)")
    if state_from is not None and algorithm == "covap":
        state.carried = state.carry_from(state_from)
    elif state_from is not None:
        if not isinstance(state_from, _State):
            raise ValueError(f"tessera hooks: state_from: only the compressing algorithms' residuals move, "
                             f"not a {type(state_from).__name__}'s")
        if state_from.tensors is not None and getattr(state, "tensors", None) is None:
            raise ValueError(f"tessera hooks: state_from holds residuals, which algorithm={algorithm!r} does not keep")
        if state_from.tensors is not None:
            state.carried = state.tensors.take_residuals(state_from.tensors)
    model.register_comm_hook(state, _erring_as_ddp_reads(hook))
    return state


def _erring_as_ddp_reads(hook):
    """The hook, its future chained through then(): DDP reads a hook's future in C++, where a
    failed collective's exception (torch's Future.set_exception keeps it as the future's value)
    came out as "Unable to cast ... to Tensor". A then() callback that re-raises it fails the
    chained future as an error, which DDP raises from backward() with its type and message."""
    def ddp_hook(state, bucket):
        return hook(state, bucket).then(_value_or_raise)
    return ddp_hook


def _value_or_raise(future):
    return future.value()


def _local_hook(state, bucket):
    """No averaging: each rank keeps its own gradient (SelSync synchronizes parameters instead)."""
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


class SelSyncOptimizer:
    """An optimizer whose step() is the inner optimizer's step, then SelSync's (Selective
    synchronization): every rank all-gathers one flag saying whether its gradient norm changed
    by delta or more; if any did, all ranks average their parameters, else each keeps its local
    update. With aggregate="grads" the flags are exchanged before the inner step and a
    synchronized step averages the gradients instead (every rank then takes the same step;
    no closure then: it would compute new gradients after the average). DDP's gradient
    averaging is switched off (a local hook). A model on a CUDA device keeps its parameters
    there: only synchronized steps copy them to the host (SelSync's memory=cuda)."""

    def __init__(self, model, optimizer, communicator=None, state_from=None, **params):
        self.model = model
        self.optimizer = optimizer
        comm = communicator if communicator is not None else communicator_for(model.process_group)
        self.comm = comm
        self.params = [p for p in model.parameters() if p.requires_grad]
        for p in self.params:
            if p.dtype != torch.float32 or not p.is_contiguous():
                raise ValueError("tessera selsync: float32 contiguous parameters only")
        devices = {p.device for p in self.params}
        if len(devices) > 1:
            raise ValueError(f"tessera selsync: the parameters are on {len(devices)} devices "
                             f"({', '.join(sorted(map(str, devices)))}): one device per model")
        self.synchronized = 0
        self.steps = 0
        self.aggregate = str(params.get("aggregate", "params"))
        if state_from is not None:  # the same model's SelSync before a shrink or grow: its history goes on
            if not isinstance(state_from, SelSyncOptimizer) or params:
                raise ValueError("tessera selsync: state_from is the SelSyncOptimizer of the same model's earlier "
                                 "DDP (and takes its parameters from it)")
            self.selsync = state_from.selsync
            self.selsync.move_to(comm)
            self.synchronized, self.steps = state_from.synchronized, state_from.steps
            self.aggregate = state_from.aggregate
        else:
            cuda = bool(self.params) and self.params[0].is_cuda
            if cuda:
                params.setdefault("memory", "cuda")
            # Its staging opens on the current device: the parameters' (set_device or not).
            with current_device(self.params[0].device if cuda else None):
                self.selsync = tessera.SelSync(comm, [p.numel() for p in self.params], **params)
        model.register_comm_hook(None, _local_hook)

    def _grad_norm_squared(self):
        # One read of the device's result (it waits for the work queued on this stream).
        squares = [p.grad.pow(2).sum() for p in self.params if p.grad is not None]
        return float(torch.stack(squares).double().sum()) if squares else 0.0

    def step(self, closure=None):
        if self.aggregate == "grads":
            if closure is not None:
                raise ValueError("tessera selsync: aggregate=grads averages the gradients before the optimizer's "
                                 "step, which a closure would compute anew: use aggregate=params with a closure")
            with torch.no_grad():
                for p in self.params:  # a parameter without a gradient takes part with zeros
                    if p.grad is None:
                        p.grad = torch.zeros_like(p)
                synced = self.selsync.step(self._grad_norm_squared(), [p.grad for p in self.params])
            loss = self.optimizer.step()
        else:
            loss = self.optimizer.step(closure)
            with torch.no_grad():
                synced = self.selsync.step(self._grad_norm_squared(), [p.data for p in self.params])
        self.steps += 1
        self.synchronized += int(synced)
        return loss

    def synchronize(self):
        """Averages the parameters now, on every rank (collective): to end an epoch, or training,
        on one model. SelSync's own state (its smoothed gradient norm) is left as it was."""
        with torch.no_grad():
            for p in self.params:
                self.comm.allreduce(p.data, op="avg")

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def __getattr__(self, name):
        return getattr(self.optimizer, name)


def selsync(model, optimizer, communicator=None, state_from=None, **params):
    """SelSync for a DDP model: returns the optimizer to use (see SelSyncOptimizer). Parameters:
    delta (>= 0; 0 synchronizes every step), ewma_window, ewma_alpha, aggregate ("params", the
    default: average the parameters after the step; "grads": the gradients before it). state_from: the
    SelSyncOptimizer of the same model's earlier DDP (before tessera.torch.elastic's shrink or
    grow re-wrapped it): its smoothed gradient norms and counts go on over the new group."""
    return SelSyncOptimizer(model, optimizer, communicator, state_from, **params)
