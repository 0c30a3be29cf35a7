"""Single-process data-parallel training with a pluggable allreduce, for convergence checks of
Tessera's compressed algorithms without a network.

N simulated workers each draw their own batch (a DistributedSampler-like split of a shuffled
epoch), compute their gradient, flatten it to one vector (as a single DDP bucket is), and hand
the N vectors to a reducer; the reducer's result becomes every parameter's .grad and an
ordinary torch.optim.SGD (momentum as given) steps once. All workers hold the same model, as
in DDP, so one model stands for all of them.

Data: Fashion-MNIST as gzipped IDX in /usr/share/datasets/fashion-mnist (Debian package
dataset-fashion-mnist), or $FASHION_MNIST.
"""
import gzip
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA_DIR = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def _idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion_mnist(train_size=None):
    """(train_x, train_y, test_x, test_y) as float tensors normalized like torchvision's
    usual (0.2860, 0.3530); train_size keeps the first n training images (a fixed slice)."""
    def images(name):
        x = torch.from_numpy(_idx(os.path.join(DATA_DIR, name)).astype(np.float32) / 255.0)
        return ((x - 0.2860) / 0.3530).unsqueeze(1)

    def labels(name):
        return torch.from_numpy(_idx(os.path.join(DATA_DIR, name)).astype(np.int64))

    tx, ty = images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz")
    if train_size:
        tx, ty = tx[:train_size], ty[:train_size]
    return tx, ty, images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz")


class Cnn(nn.Module):
    """Two 3x3 convolutions (each ReLU and 2x2 max-pool), then an MLP head. The reference model
    (--model reference) is Cnn(32, 64, 384) (1,227,274 parameters); Cnn(16, 32, 128) (206,922) has the same
    character (over 95% of the parameters in the first fully connected layer) at a sixth of
    the cost."""

    def __init__(self, c1=32, c2=64, hidden=384):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc1 = nn.Linear(c2 * 49, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


MODELS = {"small": (16, 32, 128), "reference": (32, 64, 384)}


def flat_grad(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def set_flat_grad(model, vec):
    at = 0
    for p in model.parameters():
        n = p.numel()
        p.grad.copy_(vec[at:at + n].view_as(p))
        at += n


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum())
                      for i in range(0, len(x), 1000))
    model.train()
    return 100.0 * correct / len(x)


def cosine(a, b):
    na, nb = float(a.norm()), float(b.norm())
    return float(a @ b) / (na * nb) if na > 0 and nb > 0 else 0.0


def finite_loss(loss):
    return math.isfinite(loss) and loss <= 1e3


def run_epochs(step, model_for_test, data, *, seed=1, workers=4, batch=64, epochs=3, log=print):
    """The epoch loop of every trainer here: each epoch shuffles the training set (seeded), gives
    worker r every workers-th image of it (a DistributedSampler-like split), and calls
    step(step_index, [worker r's batch indices]) -> mean loss over the workers, which applies
    the update only when the loss is finite; a non-finite loss (or one above 1e3) ends training
    as diverged. After each epoch model_for_test() is tested. Returns the test accuracy after
    each epoch, the final training loss, the step count and whether training diverged."""
    tx, _, vx, vy = data
    per_rank = len(tx) // workers
    steps_per_epoch = per_rank // batch
    result = {"accuracy": [], "diverged": False, "steps": 0, "loss": []}
    n, t0 = 0, time.time()
    for epoch in range(epochs):
        order = torch.randperm(len(tx), generator=torch.Generator().manual_seed(seed * 1000 + epoch))
        shards = [order[r:per_rank * workers:workers] for r in range(workers)]
        running = []
        for i in range(steps_per_epoch):
            loss = step(n, [shard[i * batch:(i + 1) * batch] for shard in shards])
            running.append(loss)
            if not finite_loss(loss):
                result["diverged"] = True
                break
            n += 1
        result["loss"].append(float(np.mean(running[-50:])) if running else float("nan"))
        if result["diverged"]:
            break
        result["accuracy"].append(accuracy(model_for_test(), vx, vy))
        log(f"epoch {epoch + 1}: test accuracy {result['accuracy'][-1]:.2f}% "
            f"(train loss {result['loss'][-1]:.3f}, {time.time() - t0:.0f} s)")
    result["steps"] = n
    while len(result["accuracy"]) < epochs:
        result["accuracy"].append(10.0 if result["diverged"] else float("nan"))
    return result


def train(reducer, *, seed=1, workers=4, batch=64, epochs=3, lr=0.05, momentum=0.9,
          model="small", train_size=None, log_every=0, log=print):
    """Trains with `reducer` (an object with reduce(list of N flat gradients) -> flat
    average estimate, and optionally stats() -> dict for the log); returns run_epochs's result."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    data = load_fashion_mnist(train_size)
    tx, ty = data[0], data[1]
    net = Cnn(*MODELS[model])
    for p in net.parameters():
        p.grad = torch.zeros_like(p)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)

    def step(n, batches):
        grads, loss_sum = [], 0.0
        for idx in batches:
            net.zero_grad(set_to_none=False)
            loss = F.cross_entropy(net(tx[idx]), ty[idx])
            loss.backward()
            grads.append(flat_grad(net).clone())
            loss_sum += float(loss)
        loss = loss_sum / len(batches)
        if not finite_loss(loss):
            return loss
        exact = torch.stack(grads).mean(0)
        out = reducer.reduce(grads)
        if log_every and n % log_every == 0:
            extra = reducer.stats() if hasattr(reducer, "stats") else {}
            fields = " ".join(f"{k} {v:.3g}" for k, v in extra.items())
            log(f"step {n} loss {loss:.3f} cos {cosine(out, exact):.3f} "
                f"|out|/|avg| {float(out.norm()) / max(float(exact.norm()), 1e-30):.3g} {fields}")
        set_flat_grad(net, out)
        opt.step()
        return loss

    return run_epochs(step, lambda: net, data, seed=seed, workers=workers, batch=batch, epochs=epochs, log=log)


class Dense:
    """The exact average (DDP's allreduce hook)."""

    def reduce(self, grads):
        return torch.stack(grads).mean(0)


class Delayed:
    """The exact average, applied `delay` steps late (zeros until then): the staleness that
    filtering schedules such as COVAP's add, without their filtering."""

    def __init__(self, delay=1):
        self.delay = int(delay)
        self.queue = []

    def reduce(self, grads):
        self.queue.append(torch.stack(grads).mean(0))
        return self.queue.pop(0) if len(self.queue) > self.delay else torch.zeros_like(grads[0])


class OwnMomentum:
    """Wraps a reducer so that the optimizer's heavy-ball buffer (momentum `mu`) holds the
    wrapper's own buffer B = inner_mu B + scale * estimate: it returns B' - mu B, so SGD with
    momentum mu applies lr B'. Gives stale estimates a momentum of their own without touching
    the optimizer (the identity of Marsit's momentum hand-off); scale defaults to
    (1 - inner_mu) / (1 - mu), the same step in the steady state. ramp=R: the scale rises
    linearly over the first R steps (a learning-rate warm-up)."""

    def __init__(self, inner, mu=0.9, inner_mu=0.5, scale=None, ramp=0):
        self.inner, self.mu, self.inner_mu = inner, float(mu), float(inner_mu)
        self.scale = (1 - self.inner_mu) / (1 - self.mu) if scale is None else float(scale)
        self.ramp, self.step = int(ramp), 0
        self.buf = None

    def reduce(self, grads):
        est = self.inner.reduce(grads)
        prev = self.buf if self.buf is not None else torch.zeros_like(est)
        self.step += 1
        warm = min(1.0, self.step / self.ramp) if self.ramp else 1.0
        self.buf = self.inner_mu * prev + self.scale * warm * est
        return self.buf - self.mu * prev

    def stats(self):
        return self.inner.stats() if hasattr(self.inner, "stats") else {}
