"""Where the Python package loads libtessera.so from: TESSERA_LIBRARY, the install prefix it
sits in, or the build of the checkout it sits in; never a libtessera.so that merely lies in
some folder above it (loading a library runs its code).

    python3 loader_check.py LIBTESSERA SOURCE_DIR

Copies the package into temporary layouts and imports it there, without TESSERA_LIBRARY."""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from checks import Checks


def loaded_from(package_parent, env_extra=None, then=""):
    """What `import tessera` in package_parent loads: the library path, or the ImportError
    (of `then` too, a statement run after it)."""
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_LIBRARY"}
    env["PYTHONPATH"] = str(package_parent)
    env.update(env_extra or {})
    probe = ("import tessera._capi as c, sys\n"
             f"{then}\n"
             "print(c.LIBRARY_PATH)\n")
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         cwd=str(package_parent))
    return run.stdout.strip() if run.returncode == 0 else run.stderr.strip().splitlines()[-1]


def main():
    library, source = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2])
    package = source / "bindings" / "python" / "tessera"
    c = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp).resolve()
        ignore = shutil.ignore_patterns("__pycache__")
        # A checkout: bindings/python/tessera, bindings/c/include/tessera/tessera.h, build/lib.
        checkout = tmp / "checkout"
        shutil.copytree(package, checkout / "bindings" / "python" / "tessera", ignore=ignore)
        header = checkout / "bindings" / "c" / "include" / "tessera"
        header.mkdir(parents=True)
        (header / "tessera.h").write_text("/* stand-in */\n")
        (checkout / "build" / "lib").mkdir(parents=True)
        (checkout / "build" / "lib" / "libtessera.so").symlink_to(library)
        got = loaded_from(checkout / "bindings" / "python")
        c.expect(got == str(checkout / "build" / "lib" / "libtessera.so"), f"checkout: loaded {got!r}")

        # An install prefix: lib/tessera/python/tessera and lib/libtessera.so.
        prefix = tmp / "prefix" / "lib"
        shutil.copytree(package, prefix / "tessera" / "python" / "tessera", ignore=ignore)
        (prefix / "libtessera.so").symlink_to(library)
        got = loaded_from(prefix / "tessera" / "python")
        c.expect(got == str(prefix / "libtessera.so"), f"install prefix: loaded {got!r}")

        # The package copied somewhere else, under a folder whose build/lib holds a library
        # that is not its own: it must not be loaded.
        planted = tmp / "shared"
        shutil.copytree(package, planted / "site" / "deep" / "tessera", ignore=ignore)
        (planted / "build" / "lib").mkdir(parents=True)
        (planted / "build" / "lib" / "libtessera.so").symlink_to(library)
        got = loaded_from(planted / "site" / "deep")
        c.expect(got.startswith("ImportError: tessera: libtessera.so not found beside this package"),
                 f"a library in a parent folder's build/lib was used: {got!r}")
        got = loaded_from(planted / "site" / "deep", {"TESSERA_LIBRARY": str(library)})
        c.expect(got == str(library), f"TESSERA_LIBRARY: loaded {got!r}")

        # The torch extension named by hand but absent: refused naming it, not another copy.
        if importlib.util.find_spec("torch") is not None:
            missing = str(tmp / "nowhere" / "_tessera_torch.so")
            got = loaded_from(checkout / "bindings" / "python", {"TESSERA_TORCH_EXTENSION": missing},
                              "import tessera.torch")
            c.expect(got == f"ImportError: tessera.torch: TESSERA_TORCH_EXTENSION={missing} is not a file",
                     f"a missing TESSERA_TORCH_EXTENSION: {got!r}")
    c.finish(0, 1, "loader_check")


if __name__ == "__main__":
    main()
