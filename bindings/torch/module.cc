// The Python module `_tessera_torch`: ProcessGroupTessera for torch.distributed. Loaded and
// registered as the "tessera" backend by the Python package (tessera/torch/__init__.py).
#include <torch/csrc/utils/pybind.h>

#include "bindings/torch/completion_threads.h"
#include "bindings/torch/process_group_tessera.h"

namespace py = pybind11;

PYBIND11_MODULE(_tessera_torch, m) {
  m.doc() = "Tessera's torch.distributed backend (see tessera.torch)";
  // The torch this copy was compiled against: tessera.torch refuses to use it with another.
  m.attr("torch_version") = TORCH_VERSION;
  // Whether this copy takes CUDA tensors (placement.h): registered for "cuda" too when it does.
  m.attr("cuda_tensors") = static_cast<bool>(TESSERA_TORCH_CUDA);
  // The base class is torch's own (a Backend from 2.0 on, a ProcessGroup before), so
  // torch.distributed takes this as any backend of its own.
  // Called at the interpreter's exit (tessera.torch): completion_threads.h says why.
  m.def(
      "_drain_completions",
      [](double seconds) {
        return tessera_torch::drainCompletions(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
      },
      py::arg("seconds"), py::call_guard<py::gil_scoped_release>(),
      "Waits until no completion is queued or running (at most `seconds`); False if some still are.");
  py::module_::import("torch.distributed");
  py::class_<tessera_torch::ProcessGroupTessera, tessera_torch::Baseclass,
             c10::intrusive_ptr<tessera_torch::ProcessGroupTessera>>(m, "ProcessGroupTessera")
      .def(py::init<int, int, const std::map<std::string, std::string>&>(), py::arg("rank"), py::arg("size"),
           py::arg("settings"), py::call_guard<py::gil_scoped_release>())
      .def(
          "_communicator",
          [](const tessera_torch::ProcessGroupTessera& pg) { return reinterpret_cast<uintptr_t>(pg.communicator()); },
          "The tsr_comm_t handle (an address), for Tessera's Python layer; owned by the process group.")
      .def("_shrink", &tessera_torch::ProcessGroupTessera::shrink, py::call_guard<py::gil_scoped_release>(),
           "tsr_comm_shrink of this group's communicator: the survivors' ProcessGroupTessera.")
      .def("_grow", &tessera_torch::ProcessGroupTessera::grow, py::call_guard<py::gil_scoped_release>(),
           "tsr_comm_grow of this group's communicator: the grown ProcessGroupTessera, or None.")
      .def_static("_join", &tessera_torch::ProcessGroupTessera::join, py::call_guard<py::gil_scoped_release>(),
                  "tsr_comm_join: a replacement's ProcessGroupTessera in the running job.")
#if TORCH_VERSION_MAJOR >= 2
      .def(
          "_timeout_ms", [](tessera_torch::ProcessGroupTessera& pg) { return pg.getBackendOptions()->timeout.count(); },
          "The group's timeout in ms (in the Options that torch's split_group copies).")
#endif
      ;
}
