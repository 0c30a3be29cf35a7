"""Builds the "tessera" torch backend on the GPU machine against that machine's own PyTorch
(tools/gpu/device_check.sh; the machine has a compiler, ninja and torch, but no package
registry): torch.utils.cpp_extension compiles bindings/torch/*.cc from the working tree with
torch's flags (its include order, C++ ABI and pybind11) and links the kit's libtessera.

    python3 tools/gpu/build_torch_ext.py KIT OUT_DIR    prints the extension's path
"""
import glob
import os
import sys

import torch.utils.cpp_extension as ce

kit, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
library = sorted(glob.glob(os.path.join(kit, "lib", "libtessera.so.*")))[0]
os.makedirs(out, exist_ok=True)
module = ce.load(
    name="_tessera_torch",
    sources=sorted(glob.glob(os.path.join(root, "bindings", "torch", "*.cc"))),
    extra_include_paths=[root, os.path.join(root, "bindings", "c", "include"), os.path.join(kit, "include")],
    extra_cflags=["-O2", "-fvisibility=hidden"],
    extra_ldflags=[f"-L{os.path.dirname(library)}", f"-l:{os.path.basename(library)}",
                   f"-Wl,-rpath,{os.path.dirname(library)}"],
    build_directory=out, with_cuda=False, verbose=False)
print(module.__file__)
