"""The "tessera" torch.distributed backend: loading the compiled process group, creating it
for torch, and a rendezvous that needs no store server.

torch.distributed hands a backend (store, rank, world_size, timeout). Tessera finds its peers
itself: from its launcher's environment (tsrun, or TSR_PEERS), or, when a real store came
with the call (torchrun's, or an env:// store), by publishing each rank's bootstrap address and
a job secret in that store. Under a Tessera launch, env:// (whatever MASTER_ADDR holds) and
init_method="tessera://" give torch a TesseraStore: it serves the one thing torch asks of a
store here, the barrier that ends init_process_group, as an allreduce over the new process
group itself, and makes a real store at MASTER_ADDR only when another backend needs one."""
import atexit
import datetime
import gc
import glob
import hashlib
import hmac
import inspect
import itertools
import os
import secrets
import socket
import sys

import importlib

import torch.distributed as dist

# The module, not the function torch.distributed re-exports under the same name.
_rendezvous = importlib.import_module("torch.distributed.rendezvous")

from .. import _capi

_groups = itertools.count()  # process groups created by this process, in the same order everywhere


def _minor(version):
    """"2.11" of "2.11.0+cu130": what a compiled extension's ABI follows."""
    return ".".join(version.split(".")[:2])


def _load_extension():
    """_tessera_torch, compiled against the running torch: TESSERA_TORCH_EXTENSION, else in
    torch/<torch.__version__>/ beside libtessera.so (a build tree's lib/) or in this package
    (an installed prefix), else (an older layout) directly in either folder. A copy built for
    another torch is refused by name: its symbols would not resolve, or worse, would."""
    import importlib.machinery
    import importlib.util
    import torch
    explicit = os.environ.get("TESSERA_TORCH_EXTENSION")
    if explicit and not os.path.isfile(explicit):  # named by hand: never another copy in its place
        raise ImportError(f"tessera.torch: TESSERA_TORCH_EXTENSION={explicit} is not a file")
    places = [explicit] if explicit else []
    folders = (os.path.dirname(_capi.LIBRARY_PATH), os.path.join(os.path.dirname(_capi.LIBRARY_PATH), "torch"),
               os.path.dirname(__file__))
    for folder in folders:
        places += sorted(glob.glob(os.path.join(folder, torch.__version__, "_tessera_torch*.so")))
    for folder in folders:
        places += sorted(glob.glob(os.path.join(folder, "_tessera_torch*.so")))
    built_for = sorted({os.path.basename(os.path.dirname(p)) for f in folders
                        for p in glob.glob(os.path.join(f, "*", "_tessera_torch*.so"))})
    for path in places:
        if path and os.path.exists(path):
            loader = importlib.machinery.ExtensionFileLoader("_tessera_torch", path)
            spec = importlib.util.spec_from_loader("_tessera_torch", loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            compiled = getattr(module, "torch_version", None)
            if compiled is not None and _minor(torch.__version__) != _minor(compiled):
                raise ImportError(f"tessera.torch: {path} was built against PyTorch {compiled}, this is PyTorch "
                                  f"{torch.__version__}: build the backend against this torch "
                                  f"(scripts/build_torch_backend.sh {sys.executable}, docs/torch.md)")
            return module
    raise ImportError(f"tessera.torch: no backend built for PyTorch {torch.__version__} ({sys.executable}) "
                      f"beside {_capi.LIBRARY_PATH} nor in {os.path.dirname(__file__)}"
                      + (f" (built for: {', '.join(built_for)})" if built_for else "") +
                      f": build it against this torch with scripts/build_torch_backend.sh {sys.executable} "
                      "(docs/torch.md), or set TESSERA_TORCH_EXTENSION")


_ext = _load_extension()
# The completions still running at exit end while the interpreter can run what they let go of.
atexit.register(_ext._drain_completions, 30.0)
ProcessGroupTessera = _ext.ProcessGroupTessera
if hasattr(ProcessGroupTessera, "_timeout_ms"):  # PyTorch 2.x
    from torch._C._distributed_c10d import Backend as _Backend

    class TesseraOptions(_Backend.Options):
        """The backend's options (its name and timeout), which torch's split_group (and
        DeviceMesh through it) deep-copies before splitting; torch's own cannot be copied."""

        def __init__(self, timeout):
            super().__init__("tessera", timeout)

        def __deepcopy__(self, memo):
            return TesseraOptions(self._timeout)

    ProcessGroupTessera.options = property(
        lambda pg: TesseraOptions(datetime.timedelta(milliseconds=pg._timeout_ms())))


def tessera_backend_of(group):
    """The ProcessGroupTessera of a process group, or None: torch 1.13 hands the backend itself,
    2.x a ProcessGroup that holds it for the CPU."""
    if isinstance(group, ProcessGroupTessera):
        return group
    get_backend = getattr(group, "_get_backend", None)
    if get_backend is None:
        return None
    import torch
    try:
        backend = get_backend(torch.device("cpu"))
    except RuntimeError:  # no backend for the CPU in this group
        return None
    return backend if isinstance(backend, ProcessGroupTessera) else None


def _tessera_launch():
    """True when Tessera's own launch environment names the peers (tsrun, or TSR_PEERS)."""
    return "TSR_RANK" in os.environ or "TSR_PEERS" in os.environ


class TesseraStore(dist.Store):
    """The store of a job that Tessera's own launcher started (tsrun, TSR_PEERS), or of
    init_method="tessera://": the tessera backend finds its peers without a store. torch asks
    a store only for the barrier ending init_process_group (every rank adds 1 to a key, then
    reads it until it counts every rank, in torch 1.13; 2.x skips it by default); here each add
    to that barrier's key is an allreduce over the tessera process group, so the first read
    already counts every rank.

    Anything else (a gloo process group, new_group) goes to a real store at
    MASTER_ADDR:MASTER_PORT, as torchrun's: rank 0 hosts it, the others connect on first use.
    The tessera backend's own start never touches it, so it works whatever MASTER_ADDR holds."""

    def __init__(self, rank=0, size=1, timeout=datetime.timedelta(minutes=30)):
        super().__init__()
        self.process_group = None  # set when the tessera backend is created over this store
        self._counts = {}
        self._barrier_key = None  # the world's start barrier, answered by allreduces
        self._rank, self._size, self._timeout = rank, size, timeout
        self._real = self._server_error = None
        # Rank 0 hosts the store from the start: a subgroup without rank 0 (new_group([1, 3]))
        # needs it while rank 0 itself asks it nothing. Its server listens on every interface;
        # rank 0's own client reaches it on loopback, so a MASTER_ADDR that points nowhere costs
        # rank 0 nothing. A failure to listen is kept for the first use.
        if rank == 0 and self._address():
            try:
                self._real = dist.TCPStore("127.0.0.1", self._address()[1], size, True, timeout,
                                           wait_for_workers=False)
            except Exception as e:  # noqa: BLE001  (raised again at first use)
                self._server_error = e

    @staticmethod
    def _address():
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        return (addr, int(port)) if addr and port else None

    def _store(self):
        if self._server_error is not None:
            raise RuntimeError(f"the tessera rendezvous could not host its store on rank 0 at MASTER_PORT "
                               f"{os.environ.get('MASTER_PORT')}: {self._server_error}")
        if self._real is None:
            address = self._address()
            if address is None:
                raise RuntimeError("the tessera rendezvous has no store: it serves the tessera backend's start only; "
                                   "for a store (other backends, new_group), set MASTER_ADDR and MASTER_PORT "
                                   "(tsrun sets them)")
            self._real = dist.TCPStore(address[0], address[1], self._size, self._rank == 0, self._timeout,
                                       wait_for_workers=False)
        return self._real

    def add(self, key, amount):
        # Only the start's barrier (the first store-based barrier key, the world's) is an
        # allreduce: any other add may come from some ranks only (a new_group with
        # use_local_synchronization, a program's own counter) and so goes to the real store.
        if self.process_group is None or "store_based_barrier_key" not in key or \
                self._barrier_key not in (None, key):
            return self._store().add(key, amount)
        self._barrier_key = key
        if amount:
            import torch
            total = torch.tensor([int(amount)], dtype=torch.int64)
            self.process_group.allreduce([total]).wait()
            self._counts[key] = self._counts.get(key, 0) + int(total.item())
        return self._counts.get(key, 0)

    def set(self, key, value):
        return self._store().set(key, value)

    def get(self, key):
        return self._store().get(key)

    def wait(self, keys, timeout=None):
        return self._store().wait(keys) if timeout is None else self._store().wait(keys, timeout)

    def compare_set(self, key, expected, desired):
        return self._store().compare_set(key, expected, desired)

    def delete_key(self, key):
        return self._store().delete_key(key)

    def num_keys(self):
        return self._store().num_keys()

    def check(self, keys):
        return self._store().check(keys)

    def release(self):
        """Lets go of the real store (rank 0: its server, and so MASTER_PORT): a later
        init_process_group makes a store of its own there."""
        self._real = None
        self.process_group = None

    def clone(self):
        """torch 2.x's split_group hands each new group a clone; this store keeps no per-user
        state, so one serves them all."""
        return self


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
    if _last_store is not None:  # an init after destroy_process_group: the old store's port is free again
        _last_store.release()
        _last_store = None
        gc.collect()  # the TCPStore's server closes with its last reference
    _last_store = TesseraStore(rank, size, timeout)
    yield (_last_store, rank, size)
    raise RuntimeError("tessera:// rendezvous: cannot be reused")


_torch_env_handler = _rendezvous._rendezvous_handlers.get("env")


def _env_rendezvous(url, timeout=datetime.timedelta(minutes=30), **kwargs):
    """env:// as torch has it, except under Tessera's own launcher (tsrun, TSR_PEERS): then the
    tessera:// rendezvous, whose store is made only when something other than the tessera
    backend needs one. So init_process_group("tessera") just works under tsrun, whatever
    MASTER_ADDR holds, and init_process_group("gloo") as under torchrun."""
    if _tessera_launch():
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


def _reserve_port(loopback_only):
    """A socket holding a TCP port for this rank's bootstrap until the communicator listens
    on it (as base/port_reservation.h does for the runtime's own groups): a port below the
    kernel's ephemeral range, so no bind(0) or outgoing connection on the machine is handed
    it; bound without SO_REUSEADDR (ours alone), then flagged SO_REUSEADDR so the bootstrap's
    listener, which sets it too, can bind beside it. Close it once the group is created."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            first = int(f.read().split()[0])
        low = first if first > 21000 else low
    except (OSError, ValueError, IndexError):
        pass
    rng = secrets.SystemRandom()
    for _ in range(20000):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1" if loopback_only else "", rng.randrange(20000, low)))
        except OSError:
            s.close()  # taken, by anyone (another reservation too): draw again
            continue
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        return s
    raise RuntimeError(f"tessera: no free TCP port in 20000..{low - 1} for the bootstrap after 20000 draws")


# A key every rank of a Tessera-launched job can derive and no one else (tsrun hands the job
# secret to each rank's environment; creating the first communicator takes it out again): the
# secret of each later group is HMAC(key, a nonce in the store), so it never travels.
_launch_key = (hmac.new(os.environ["TSR_JOB_SECRET"].encode(), b"tessera.torch groups", hashlib.sha256).digest()
               if os.environ.get("TSR_JOB_SECRET") else None)


def _peers_through(store, rank, size, group):
    """Launch settings from a store every rank shares: each rank's bootstrap host:port, and the
    secret: the user's own when given (TSR_JOB_SECRET or TSR_JOB_SECRET_FILE); else derived from
    the job secret of a Tessera launch and a nonce rank 0 publishes; else (torchrun) drawn by
    rank 0 and published: torch's TCPStore is not authenticated, so such a secret is only as
    safe as its port. Local rank and size come from the published hosts (the launcher's
    LOCAL_RANK is the world's, not a subgroup's). Returns the settings and the socket that
    holds this rank's port (_reserve_port): close it once the communicator is created."""
    prefix = f"tessera/{group}/"
    host = _reachable_address()
    held = _reserve_port(host.startswith("127."))
    store.set(f"{prefix}peer/{rank}", f"{host}:{held.getsockname()[1]}")
    own_secret = "TSR_JOB_SECRET" in os.environ or "TSR_JOB_SECRET_FILE" in os.environ
    if rank == 0 and not own_secret:
        store.set(f"{prefix}secret", secrets.token_hex(32))
    peers = [store.get(f"{prefix}peer/{r}").decode() for r in range(size)]
    hosts = [p.rsplit(":", 1)[0] for p in peers]
    settings = {"rank": rank, "size": size, "local_rank": hosts[:rank].count(hosts[rank]),
                "local_size": hosts.count(hosts[rank]), "peers": ",".join(peers)}
    if not own_secret:
        published = store.get(f"{prefix}secret").decode()
        settings["secret"] = (hmac.new(_launch_key, published.encode(), hashlib.sha256).hexdigest()
                              if _launch_key else published)
    return settings, held


_launch_used = False  # whether a group of this process has bootstrapped from Tessera's launch
_handed = None  # a replacement's joined group, for init_process_group to take (hand_over)


def hand_over(backend):
    """The next tessera backend torch creates is `backend` (tessera.torch.elastic.join: the
    replacement's default group is the one it joined)."""
    global _handed
    _handed = backend


def _create(store, rank, size, timeout):
    """torch.distributed's creator of the backend (Backend.register_backend), called on the
    group's members only. The first tessera group of a job that Tessera launched (tsrun,
    TSR_PEERS) bootstraps from the launch, as does the group of a tessera:// rendezvous; any
    other (new_group, DeviceMesh's groups; every group under torchrun) finds its members
    through the store torch hands over, which torch has already prefixed with the group's
    name: the same keys on every member, whatever groups each was in before."""
    global _launch_used, _handed
    if _handed is not None:
        pg, _handed = _handed, None
        if (pg.rank(), pg.size()) != (rank, size):
            raise RuntimeError(f"tessera: the joined group is rank {pg.rank()} of {pg.size()}, not {rank} of {size}")
        return pg
    ours = _last_store is not None and _last_store.process_group is None
    launched = _tessera_launch() and not _launch_used and size == _launch_rank_size()[1]
    held = None
    if ours or store is None or launched:
        settings = {}
        _launch_used = _launch_used or _tessera_launch()
    else:
        settings, held = _peers_through(store, rank, size, "group")
    if timeout is not None:
        # torch's timeout bounds the calls and, as gloo's store waits do, the start: a rank
        # may come that much later than its peers (TSR_BOOTSTRAP_TIMEOUT_MS's 60 s was fixed).
        ms = min(max(int(timeout.total_seconds() * 1000), 1), 86400000)
        if "TSR_TIMEOUT_MS" not in os.environ:
            settings["timeout_ms"] = ms
        if "TSR_BOOTSTRAP_TIMEOUT_MS" not in os.environ:
            settings["bootstrap_timeout_ms"] = ms
    try:
        pg = ProcessGroupTessera(rank, size, {k: str(v) for k, v in settings.items()})
    finally:
        if held is not None:
            held.close()
    _capi.forget_job_secret()
    if ours:
        _last_store.process_group = pg
    return pg


def register():
    if "TESSERA" not in dist.Backend._plugins:
        # torch 2.x asks which device types a backend serves (it assumes cpu and cuda, with a
        # warning, when not told); 1.13 has no such parameter.
        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            # One instance serves both (torch registers a single backend for every device
            # when they all map to the same name).
            devices = ["cpu", "cuda"] if getattr(_ext, "cuda_tensors", False) else ["cpu"]
            dist.Backend.register_backend("tessera", _create, devices=devices)
        else:
            dist.Backend.register_backend("tessera", _create)
    if "tessera" not in _rendezvous._rendezvous_handlers:
        _rendezvous.register_rendezvous_handler("tessera", _tessera_rendezvous)
        _rendezvous._rendezvous_handlers["env"] = _env_rendezvous
