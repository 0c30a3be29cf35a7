"""DistributedDataParallel over Tessera under tsrun (N ranks):
  * DDP on the "tessera" backend against DDP on gloo, same seed and data: the same parameters
    after several steps (float tolerance);
  * each Tessera hook (tessera.torch.hooks) trains a small model: the loss falls, nothing
    diverges, and every rank ends with bit-identical parameters, through DDP's re-bucketing
    after the first step (small buckets, so parameters move between them);
  * COVAP with local steps: the due shards' parameters averaged, the others each rank's own,
    one model after synchronize();
  * a hook on a gloo process group (Tessera then runs a communicator of its own), and on gloo
    subgroups (a communicator of the subgroup's ranks), across destroy_process_group() and
    init again (each new group its own communicator, the destroyed groups' closed);
  * bad hook parameters raise, naming the key and the value, at registration."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import tessera
import tessera.torch
from checks import Checks

STEPS = 12


def data(rank, seed=3):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(20, 4, generator=g)
    x = torch.randn(64 * 8, 20, generator=g)
    y = (x @ w).argmax(1)
    return x[rank::8][:64], y[rank::8][:64]


def model():
    torch.manual_seed(7)
    return nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))


def train(ddp, optimizer, x, y, steps=STEPS):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def first_step_update(hook, params, lr=0.05):
    """The size of one SGD step's change to the parameters, with `hook` (None: DDP's own)."""
    net = model()
    before = flat(net).clone()
    ddp = ddp_of(net)
    state = tessera.torch.hooks.register(ddp, hook, **params) if hook else None
    train(ddp, torch.optim.SGD(net.parameters(), lr=lr), *data(dist.get_rank()), steps=1)
    del state
    return float((flat(net) - before).norm())


def flat(net):
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def identical_everywhere(net):
    mine = flat(net)
    everyone = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    return all(torch.equal(mine, other) for other in everyone)


def ddp_of(net, group=None):
    # 1 KiB buckets: several of them, rebuilt after the first step in gradient-ready order.
    return nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.001, process_group=group)


class FakeBucket:
    """What a hook sees of a DDP bucket: its index, parameters (in buffer order) and buffer."""

    def __init__(self, index, params, last):
        self._index, self._params, self._last = index, params, last

    def index(self):
        return self._index

    def parameters(self):
        return self._params

    def is_last(self):
        return self._last

    def buffer(self):
        return torch.zeros(sum(p.numel() for p in self._params))


def relayout_follows_parameters(c):
    """DDP moves parameters between buckets after the first step: each parameter's residual
    goes with it to its new bucket and place."""
    from tessera.torch._buckets import BucketTensors
    comm = tessera.torch.hooks.communicator_for()
    a, b, d = torch.zeros(3), torch.zeros(5), torch.zeros(2)
    tensors = BucketTensors(comm, {"algorithm": "compressed", "compressor": "topk", "k": "1", "op": "avg"}, "compressed")
    first = [FakeBucket(0, [a, b], False), FakeBucket(1, [d], True)]
    values = {id(a): [1, 2, 3], id(b): [4, 5, 6, 7, 8], id(d): [9, 10]}
    for bucket in first:
        t = tensors.tensor_for(bucket)
        t.set_residual(torch.tensor(sum((values[id(p)] for p in bucket.parameters()), []), dtype=torch.float32))
    rebuilt = [FakeBucket(0, [d, a], False), FakeBucket(1, [b], True)]
    for bucket in rebuilt:
        got = tensors.tensor_for(bucket).residual().tolist()
        want = [float(v) for p in bucket.parameters() for v in values[id(p)]]
        c.expect(got == want, f"relayout: bucket {bucket.index()} residual {got}, want {want}")


def covap_local_steps(c, x, y, lr=0.05, interval=2):
    """COVAP with local=1: each rank steps with its own gradient, and a shard on its turn has
    its parameters averaged before the step. So after the last step, on that step's due shards,
    p + lr * grad (plain SGD) is the same on every rank (the average, up to rounding), while the
    other shards differ; synchronize() then gives every rank the same model."""
    from tessera.torch._covap_hook import CovapState
    net = model()
    # DDP's first bucket after its re-layout holds up to 1 MiB, this whole model: several
    # buckets give several shards, some due at the last step and some not.
    first, dist._DEFAULT_FIRST_BUCKET_BYTES = dist._DEFAULT_FIRST_BUCKET_BYTES, 1024
    try:
        ddp = ddp_of(net)
    finally:
        dist._DEFAULT_FIRST_BUCKET_BYTES = first
    state = CovapState(tessera.torch.hooks.communicator_for(), net.parameters(), interval=str(interval), local="1")
    seen = {}

    def recording(state, bucket):
        seen[bucket.index()] = (list(bucket.parameters()), state.step)
        return CovapState.hook(state, bucket)

    ddp.register_comm_hook(state, recording)
    losses = train(ddp, torch.optim.SGD(net.parameters(), lr=lr), x, y, steps=2 * STEPS)
    c.expect(losses[-1] < losses[0], f"covap local=1: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    due, other = [], []
    for index, (params, step) in sorted(seen.items()):
        q = torch.cat([(p.detach() + lr * p.grad).reshape(-1) for p in params])
        for offset, length, gid in state.shards[index]:
            (due if (gid + step) % interval == 0 else other).append(q.narrow(0, offset, length))
    c.expect(due and other, f"covap local=1: {len(due)} shards due at the last step, {len(other)} not: "
                            f"{state.shards} {[(i, s) for i, (_, s) in seen.items()]}")
    if not (due and other):
        return
    for name, parts in (("due", due), ("other", other)):
        mine = torch.cat(parts)
        low, high = mine.clone(), mine.clone()
        dist.all_reduce(low, op=dist.ReduceOp.MIN)
        dist.all_reduce(high, op=dist.ReduceOp.MAX)
        spread = float((high - low).abs().max())
        if name == "due":
            c.expect(spread <= 1e-5, f"covap local=1: the due shards' p + lr grad differ by {spread:.3g} over the ranks")
        else:
            c.expect(spread > 1e-4, f"covap local=1: the skipped shards agree ({spread:.3g}): no local steps")
    c.expect(not identical_everywhere(net), "covap local=1: the ranks' models agree before synchronize()")
    state.synchronize()
    c.expect(identical_everywhere(net), "covap local=1: the ranks' parameters differ after synchronize()")


def sparse_defaults(c):
    """The sparse hooks keep SPARSE_DENSITY unless told (not the tensors' own 1%); a density or
    k given wins, and compressors that keep everything get no k."""
    from tessera.torch._buckets import SPARSE_DENSITY, BucketTensors
    comm = tessera.torch.hooks.communicator_for()
    cases = ((("topk", "compressed"), {}, {"k": str(SPARSE_DENSITY)}),
             (("topk-2level", "compressed"), {}, {"k": str(SPARSE_DENSITY)}),
             (("compressed", "compressed"), {"compressor": "randomk"}, {"k": str(SPARSE_DENSITY)}),
             (("topk", "compressed"), {"density": "0.01"}, {"k": "0.01"}),
             (("topk", "compressed"), {"k": "7"}, {"k": "7"}),
             (("onebit", "compressed"), {}, {"k": None}),
             (("spardl", "spardl"), {}, {"density": str(SPARSE_DENSITY)}),
             (("spardl", "spardl"), {"density": "0.2"}, {"density": "0.2"}))
    for (algorithm, family), given, want in cases:
        got = BucketTensors(comm, dict(given, algorithm=algorithm), family)._params(1000)
        for key, value in want.items():
            c.expect(got.get(key) == value, f"{algorithm} {given}: {key}={got.get(key)}, want {value}")


def gloo_subgroup_hooks(c, rank, size):
    """A hook on a gloo subgroup gets a communicator of that group's ranks (it was the whole
    launch's, waiting for ranks outside the group), and disjoint subgroups meet in the store
    under keys of their own (two pairs read each other's addresses)."""
    if size < 4:
        return
    pairs = [dist.new_group([p, p + 1]) for p in range(0, size - 1, 2)]  # every rank makes each
    if rank // 2 >= len(pairs):
        return
    lin = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        lin.weight.zero_()
    ddp = ddp_of(lin, pairs[rank // 2])
    tessera.torch.hooks.register(ddp, "dense")
    ddp(torch.full((1, 1), float(rank + 1))).sum().backward()
    want = rank // 2 * 2 + 1.5  # the pair's average of rank + 1
    c.expect(lin.weight.grad.item() == want, f"a hook on the gloo pair of rank {rank}: {lin.weight.grad.item()}, "
                                             f"not the pair's average {want}")


def store_port(comm, rank):
    """A port for gloo's store, chosen by rank 0 and told to every rank."""
    port = torch.tensor([0], dtype=torch.int64)
    if rank == 0:
        # Below the ephemeral range, so no bind(0) or outgoing connection of a test running
        # beside this one takes it before gloo's store listens on it.
        from tessera.torch import _backend
        with _backend._reserve_port(True) as s:
            port[0] = s.getsockname()[1]
    comm.broadcast(port, root=0)
    return str(int(port))


def gloo_groups_across_reinit(c, comm, rank, size):
    """destroy_process_group() then init again, over gloo, a hook on a one-rank group and on the
    whole group in turn: each group gets a communicator of its own ranks, and the destroyed
    groups' communicators are closed (one kept by the id() of a freed group was taken by a later
    group: a one-rank group's for the pair, a gradient not averaged, or a hang)."""
    made = []
    for round_ in range(4):
        os.environ["MASTER_PORT"] = store_port(comm, rank)
        dist.init_process_group("gloo", rank=rank, world_size=size)
        singles = [dist.new_group([i]) for i in range(size)]  # collective: every rank makes each
        group = singles[rank] if round_ % 2 == 0 else dist.distributed_c10d._get_default_group()
        lin = nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            lin.weight.zero_()
        ddp = ddp_of(lin, group)
        tessera.torch.hooks.register(ddp, "dense")
        ddp(torch.full((1, 1), float(rank + 1))).sum().backward()
        want = rank + 1.0 if round_ % 2 == 0 else (size + 1) / 2
        c.expect(lin.weight.grad.item() == want, f"round {round_}: a hook on a gloo group of {group.size()} "
                                                 f"rank(s): gradient {lin.weight.grad.item()}, want {want}")
        made.append(tessera.torch.hooks.communicator_for(group))
        c.expect(made[-1].size == group.size(), f"round {round_}: a communicator of {made[-1].size} ranks "
                                                f"for a group of {group.size()}")
        for earlier, old in enumerate(made[:-1]):
            c.expect(old is not made[-1], f"round {round_}: round {earlier}'s communicator again")
            try:
                old.barrier()
                c.expect(False, f"round {round_}: round {earlier}'s communicator is still open")
            except tessera.ClosedError:
                pass
        del ddp, group, singles
        dist.destroy_process_group()


def main():
    import faulthandler
    faulthandler.dump_traceback_later(90, exit=True)
    comm = tessera.Communicator()  # for the gloo store's port, and the gloo-side hook
    rank, size = comm.rank, comm.size
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=store_port(comm, rank))
    c = Checks()
    x, y = data(rank)

    # gloo first: the reference.
    dist.init_process_group("gloo", rank=rank, world_size=size)
    net = model()
    train(ddp_of(net), torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9), x, y)
    reference = flat(net)
    # A Tessera hook on the gloo process group.
    net = model()
    ddp = ddp_of(net)
    tessera.torch.hooks.register(ddp, "marsit", communicator=comm)
    losses = train(ddp, torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9), x, y)
    c.expect(losses[-1] < losses[0], f"marsit on gloo: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    c.expect(identical_everywhere(net), "marsit on gloo: the ranks' parameters differ")
    gloo_subgroup_hooks(c, rank, size)
    dist.destroy_process_group()
    gloo_groups_across_reinit(c, comm, rank, size)

    # Tessera's own rendezvous: under tsrun no MASTER_ADDR and no store server are needed.
    del os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]
    dist.init_process_group("tessera")
    net = model()
    train(ddp_of(net), torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9), x, y)
    c.expect(torch.allclose(flat(net), reference, rtol=1e-5, atol=1e-6),
             f"DDP on tessera vs gloo: largest difference {float((flat(net) - reference).abs().max()):.3g}")
    c.expect(identical_everywhere(net), "DDP on tessera: the ranks' parameters differ")

    hooks = [("dense", {}), ("marsit", {}), ("marsit", {"momentum": "0"}), ("spardl", {"density": "0.1"}),
             ("topk", {"density": "0.1"}), ("onebit", {}), ("covap", {"interval": "2"}), ("auto", {})]
    # One plain-SGD step's update, dense, as the yardstick for each hook's first step: a
    # compressor that changes the gradient's size (unscaled onebit sends +-1 everywhere) makes
    # a model diverge at any usual learning rate, even where this small one still learns.
    dense_step = first_step_update(None, {})
    for name, params in hooks:
        ratio = first_step_update(name, params) / dense_step
        c.expect(0.1 < ratio < 3, f"hook {name} {params}: its first update is {ratio:.3g}x dense's size")
        net = model()
        ddp = ddp_of(net)
        state = tessera.torch.hooks.register(ddp, name, **params)
        mu = 0.0 if params.get("momentum") == "0" else 0.9  # marsit momentum=0: plain SGD
        losses = train(ddp, torch.optim.SGD(net.parameters(), lr=0.05, momentum=mu), x, y, steps=2 * STEPS)
        what = f"hook {name} {params}"
        c.expect(all(l == l and l < 1e3 for l in losses), f"{what}: the loss diverged: {losses}")
        c.expect(losses[-1] < losses[0], f"{what}: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
        c.expect(identical_everywhere(net), f"{what}: the ranks' parameters differ")
        if getattr(state, "tensors", None) is not None and name != "auto":  # DDP re-bucketed: new tensors
            c.expect(state.tensors.generation > len(state.tensors.by_index),
                     f"{what}: no bucket was rebuilt ({state.tensors.generation} tensors made)")
        del state
    # SelSync wraps the optimizer; synchronize() ends on one model.
    net = model()
    ddp = ddp_of(net)
    opt = tessera.torch.hooks.selsync(ddp, torch.optim.SGD(net.parameters(), lr=0.05), delta="0.2")
    losses = train(ddp, opt, x, y, steps=2 * STEPS)
    opt.synchronize()
    c.expect(losses[-1] < losses[0], f"selsync: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    c.expect(identical_everywhere(net), "selsync: the ranks' parameters differ after synchronize()")
    # aggregate=grads with delta=0 averages the gradients before every step: DDP itself, so the
    # ranks stay identical without synchronize(); a closure is refused (it would recompute them).
    net = model()
    ddp = ddp_of(net)
    opt = tessera.torch.hooks.selsync(ddp, torch.optim.SGD(net.parameters(), lr=0.05), delta="0", aggregate="grads")
    losses = train(ddp, opt, x, y, steps=STEPS)
    c.expect(losses[-1] < losses[0], f"selsync grads: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    c.expect(identical_everywhere(net), "selsync aggregate=grads: the ranks' parameters differ")
    c.expect(opt.synchronized == STEPS, f"selsync aggregate=grads delta=0: {opt.synchronized} of {STEPS} synchronized")
    try:
        opt.step(lambda: 0.0)
        c.expect(False, "selsync aggregate=grads took a closure")
    except ValueError as e:
        c.expect("closure" in str(e), f"selsync aggregate=grads closure: {e}")

    relayout_follows_parameters(c)
    sparse_defaults(c)
    covap_local_steps(c, x, y)

    # Bad parameters, named at registration.
    for name, params, words in (("marsit", {"topology": "bogus"}, ("topology", "bogus")),
                                ("covap", {"interval": "0"}, ("interval", "0")),
                                ("covap", {"local": "yes"}, ("local", "yes")),
                                ("topk", {"density": "2"}, ("density", "2")),
                                ("dense", {"k": "3"}, ("k",)),
                                ("nope", {}, ("nope",))):
        try:
            tessera.torch.hooks.register(ddp_of(model()), name, **params)
            c.expect(False, f"hook {name} {params} was accepted")
        except (ValueError, tessera.TesseraError) as e:
            c.expect(all(w in str(e) for w in words), f"hook {name} {params}: {e}")
    # A float64 model: the compressing hooks take float32 buckets (said at the first backward).
    c.raises(ValueError, "takes float32 gradients, and this model has torch.float64 parameters",
             lambda: tessera.torch.hooks.register(ddp_of(model().double()), "marsit"), "marsit on a float64 model")
    dist.destroy_process_group()
    c.finish(rank, size, "torch DDP")


if __name__ == "__main__":
    sys.exit(main())
