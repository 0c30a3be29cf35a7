"""The "tessera" torch.distributed backend: loading the compiled process group, creating it
for torch, and a rendezvous that needs no store server.

torch.distributed hands a backend (store, rank, world_size, timeout). Tessera finds its peers
itself: from its launcher's environment (tsrun, or TSR_PEERS), or, when a real store came
with the call (torchrun's, or an env:// store), by publishing each rank's bootstrap address and
a job secret in that store. Without a store server anywhere, init_method="tessera://" (or plain
env:// with no MASTER_ADDR under a Tessera launch) gives torch a TesseraStore: it serves the
one thing torch asks of a store here, the barrier that ends init_process_group, as an
allreduce over the new process group itself."""
import datetime
import glob
import itertools
import os
import secrets
import socket

import importlib

import torch.distributed as dist

# The module, not the function torch.distributed re-exports under the same name.
_rendezvous = importlib.import_module("torch.distributed.rendezvous")

from .. import _capi

_groups = itertools.count()  # process groups created by this process, in the same order everywhere


def _load_extension():
    """_tessera_torch: TESSERA_TORCH_EXTENSION, else beside libtessera.so (a build tree's lib/),
    else in this package (an installed prefix)."""
    import importlib.machinery
    import importlib.util
    explicit = os.environ.get("TESSERA_TORCH_EXTENSION")
    places = [explicit] if explicit else []
    for folder in (os.path.dirname(_capi.LIBRARY_PATH), os.path.dirname(__file__)):
        places += sorted(glob.glob(os.path.join(folder, "_tessera_torch*.so")))
    for path in places:
        if path and os.path.exists(path):
            loader = importlib.machinery.ExtensionFileLoader("_tessera_torch", path)
            spec = importlib.util.spec_from_loader("_tessera_torch", loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            return module
    raise ImportError("tessera.torch: the compiled backend (_tessera_torch*.so) was not found beside "
                      f"{_capi.LIBRARY_PATH} nor in {os.path.dirname(__file__)}: build Tessera with "
                      "libtorch-dev, pybind11-dev and python3-dev installed, or set TESSERA_TORCH_EXTENSION")


_ext = _load_extension()
ProcessGroupTessera = _ext.ProcessGroupTessera


def _tessera_launch():
    """True when Tessera's own launch environment names the peers (tsrun, or TSR_PEERS)."""
    return "TSR_RANK" in os.environ or "TSR_PEERS" in os.environ


class TesseraStore(dist.Store):
    """What init_method="tessera://" gives torch: no server, no keys. torch asks a store only
    for the barrier ending init_process_group (every rank adds 1 to a key, then reads it until
    it counts every rank); here each add of a non-zero amount is an allreduce over the process
    group, so the first read already counts every rank. Anything else raises, naming the way
    out (a real store: MASTER_ADDR and MASTER_PORT with env://)."""

    def __init__(self):
        super().__init__()
        self.process_group = None  # set when the backend is created over this store
        self._counts = {}

    def add(self, key, amount):
        if amount:
            if self.process_group is None:
                raise RuntimeError("tessera rendezvous store: add() before the tessera process group exists "
                                   "(this store serves the tessera backend only)")
            import torch
            total = torch.tensor([int(amount)], dtype=torch.int64)
            self.process_group.allreduce([total]).wait()
            self._counts[key] = self._counts.get(key, 0) + int(total.item())
        return self._counts.get(key, 0)

    def _refuse(self, *args, **kwargs):
        raise RuntimeError("the tessera:// rendezvous has no store: it serves the tessera backend's start only; "
                           "for a store (other backends, new_group with other ranks), set MASTER_ADDR and "
                           "MASTER_PORT and use init_method=\"env://\"")

    set = get = wait = compare_set = delete_key = num_keys = check = _refuse


_last_store = None  # the TesseraStore of the latest tessera:// rendezvous, to hand the group


def _launch_rank_size():
    """This process's rank and world size as its launcher says (tsrun, Open MPI, Slurm, torchrun)."""
    for rank, size in (("TSR_RANK", "TSR_WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                       ("SLURM_PROCID", "SLURM_NTASKS"), ("RANK", "WORLD_SIZE")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    raise ValueError("tessera:// rendezvous: no rank and world size in the environment (start the job with "
                     "tsrun, mpirun, srun or torchrun)")


def _tessera_rendezvous(url, timeout=datetime.timedelta(minutes=30), **kwargs):
    global _last_store
    rank, size = _launch_rank_size()
    _last_store = TesseraStore()
    yield (_last_store, rank, size)
    raise RuntimeError("tessera:// rendezvous: cannot be reused")


_torch_env_handler = _rendezvous._rendezvous_handlers.get("env")


def _env_rendezvous(url, timeout=datetime.timedelta(minutes=30), **kwargs):
    """env:// as torch has it, unless MASTER_ADDR is unset under Tessera's own launcher (tsrun):
    then the store-less tessera:// rendezvous, so that init_process_group("tessera") just works."""
    if "MASTER_ADDR" not in os.environ and _tessera_launch():
        return _tessera_rendezvous(url, timeout, **kwargs)
    return _torch_env_handler(url, timeout=timeout, **kwargs)


def _reachable_address():
    """An address of this host that the store's host reaches us by (the interface toward
    MASTER_ADDR), else the host name's."""
    master = os.environ.get("MASTER_ADDR")
    if master:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((master, int(os.environ.get("MASTER_PORT", "1"))))
                return s.getsockname()[0]
        except OSError:
            pass
    return socket.gethostbyname(socket.gethostname())


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _peers_through(store, rank, size, group):
    """Launch settings from a store every rank shares: each rank's bootstrap host:port, and a
    secret drawn by rank 0, unless the user gave one (TSR_JOB_SECRET or TSR_JOB_SECRET_FILE):
    torch's TCPStore is not authenticated, so a secret in it is only as safe as its port."""
    prefix = f"tessera/{group}/"
    host = _reachable_address()
    store.set(f"{prefix}peer/{rank}", f"{host}:{_free_port()}")
    own_secret = "TSR_JOB_SECRET" in os.environ or "TSR_JOB_SECRET_FILE" in os.environ
    if rank == 0 and not own_secret:
        store.set(f"{prefix}secret", secrets.token_hex(32))
    peers = [store.get(f"{prefix}peer/{r}").decode() for r in range(size)]
    hosts = [p.rsplit(":", 1)[0] for p in peers]
    local_rank = int(os.environ.get("LOCAL_RANK", hosts[:rank].count(hosts[rank])))
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", hosts.count(hosts[rank])))
    settings = {"rank": rank, "size": size, "local_rank": local_rank, "local_size": local_size,
                "peers": ",".join(peers)}
    if not own_secret:
        settings["secret"] = store.get(f"{prefix}secret").decode()
    return settings


def _create(store, rank, size, timeout):
    """torch.distributed's creator of the backend (Backend.register_backend). torch wraps the
    rendezvous store in a PrefixStore; the latest tessera:// rendezvous not yet used is ours."""
    group = next(_groups)
    ours = _last_store is not None and _last_store.process_group is None
    if ours or store is None or _tessera_launch():
        settings = {}
    else:
        settings = _peers_through(store, rank, size, group)
    if "TSR_TIMEOUT_MS" not in os.environ and timeout is not None:
        settings["timeout_ms"] = int(timeout.total_seconds() * 1000)
    pg = ProcessGroupTessera(rank, size, {k: str(v) for k, v in settings.items()})
    _capi.forget_job_secret()
    if ours:
        _last_store.process_group = pg
    return pg


def register():
    if "TESSERA" not in dist.Backend._plugins:
        dist.Backend.register_backend("tessera", _create)
    if "tessera" not in _rendezvous._rendezvous_handlers:
        _rendezvous.register_rendezvous_handler("tessera", _tessera_rendezvous)
        _rendezvous._rendezvous_handlers["env"] = _env_rendezvous
