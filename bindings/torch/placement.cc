#include "bindings/torch/placement.h"

#include <dlfcn.h>

#include <algorithm>
#include <memory>

#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

namespace tessera_torch {

Placement placementOf(const std::vector<at::Tensor>& tensors, const char* what, bool hostStaged) {
  Placement place;
  std::optional<c10::Device> first;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) continue;
    const c10::Device d = tensors[i].device();
    TORCH_CHECK(d.is_cpu() || d.is_cuda(), "tessera: ", what, ": tensor ", i, " is on ", d.str(),
                ": the tessera backend takes CPU and CUDA tensors");
    TORCH_CHECK(tensors[i].layout() == c10::kStrided, "tessera: ", what, ": tensor ", i, " is of layout ",
                tensors[i].layout(),
                ": the tessera backend takes dense (strided) tensors; sparse ones are not supported (.to_dense())");
    if (!first) {
      first = d;
      continue;
    }
    TORCH_CHECK(d == *first, "tessera: ", what, ": tensor ", i, " is on ", d.str(), " and an earlier one on ",
                first->str(), ": one call's tensors are on one device");
  }
  if (first && first->is_cuda()) {
    TORCH_CHECK(TESSERA_TORCH_CUDA, "tessera: ", what, ": a tensor on ", first->str(),
                ": CUDA tensors need the backend built against PyTorch 2.2 or later (this one: ", TORCH_VERSION,
                "); move the tensor to the CPU or rebuild against a newer torch");
    // A device this process cannot use (no driver, an index past the count) is named here,
    // before Tessera touches CUDA, rather than by the CUDA runtime's first failing call (the
    // copy of a 1-byte or non-contiguous tensor, tensor_copies.h, is made before, by torch).
    const int usable = c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)
                           ? c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).deviceCount()
                           : 0;
    TORCH_CHECK(std::max<int>(first->index(), 0) < usable, "tessera: ", what, ": a tensor on ", first->str(),
                ", but this process has ", usable, " usable CUDA device", usable == 1 ? "" : "s",
                " (torch.cuda.device_count())");
    place.cuda = first;
    place.hostStaged = hostStaged;
  }
  return place;
}

at::Tensor hostBufferLike(const at::Tensor& t) {
  if (!t.is_cuda()) return t;
  return at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true));
}

at::Tensor hostCopy(const at::Tensor& t) {
  if (!t.is_cuda()) return t;
  at::Tensor host = hostBufferLike(t);
  host.copy_(t, /*non_blocking=*/false);  // on the current stream; returns once it is done
  return host;
}

std::function<void()> afterCallersStream(c10::Device device) {
#if TESSERA_TORCH_CUDA
  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  auto mark = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
  mark->record(impl.getStream(device));
  return [mark, device] { mark->block(c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(device)); };
#else
  TORCH_CHECK(false, "tessera: CUDA streams need the backend built against PyTorch 2.2 or later");
#endif
}

void* currentStream(c10::Device device) {
#if TESSERA_TORCH_CUDA
  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return impl.getStream(device).native_handle();
#else
  TORCH_CHECK(false, "tessera: CUDA streams need the backend built against PyTorch 2.2 or later");
#endif
}

bool isNonBlockingStream(void* stream) {
  // cudaStreamLegacy (1) and cudaStreamPerThread (2) are the runtime's names, not streams.
  if (stream == nullptr || stream == reinterpret_cast<void*>(1) || stream == reinterpret_cast<void*>(2)) return false;
  using GetFlags = int (*)(void* stream, unsigned int* flags);  // CUresult cuStreamGetFlags(CUstream, unsigned*)
  static const GetFlags getFlags = []() -> GetFlags {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // loaded by whoever made the stream
    return driver ? reinterpret_cast<GetFlags>(dlsym(driver, "cuStreamGetFlags")) : nullptr;
  }();
  constexpr unsigned int kNonBlocking = 0x1;  // CU_STREAM_NON_BLOCKING
  unsigned int flags = 0;
  return getFlags && getFlags(stream, &flags) == 0 && (flags & kNonBlocking);
}

}  // namespace tessera_torch
