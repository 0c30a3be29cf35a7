// Where a call's tensors live, and how Tessera reaches them. CPU tensors: as they are. CUDA
// tensors (this backend built against PyTorch 2.2 or later): the dense collectives through
// Tessera's own staging (TSR_MEM_CUDA: copied to pinned host memory on Tessera's stream once
// the caller's current stream has reached the call, tsr_comm_set_thread_buffers; reduced on the host;
// copied back); the calls Tessera takes in host memory only (all-to-all, send, recv) through
// pinned host copies made here, the calling thread waiting for its stream first.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <torch/version.h>

// Stream::native_handle (the cudaStream_t behind a c10::Stream) is what ties a call to the
// caller's stream without CUDA headers here; older torch lacks it.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
#define TESSERA_TORCH_CUDA 1
#else
#define TESSERA_TORCH_CUDA 0
#endif

namespace tessera_torch {

struct Placement {
  std::optional<c10::Device> cuda;  // the tensors' CUDA device; none: CPU tensors
  bool hostStaged = false;          // CUDA tensors reached through host copies made here
};

// The placement of a call's tensors (undefined ones skipped): all on the CPU, or all on one
// CUDA device. Raises naming the call, the tensor and its device otherwise: another device
// type, two devices, CPU and CUDA mixed, or CUDA where this build cannot take it.
Placement placementOf(const std::vector<at::Tensor>& tensors, const char* what, bool hostStaged = false);

// For the host-only calls on CUDA tensors: a pinned host copy of `t`, taken once the caller's
// current stream has produced it (this thread waits for that), and an uninitialized pinned
// host buffer shaped like `t`. CPU tensors come back as they are.
at::Tensor hostCopy(const at::Tensor& t);
at::Tensor hostBufferLike(const at::Tensor& t);

// For a host-staged call with no input to copy (recv): a mark on the caller's current stream on
// `device`, taken now; the function returned makes the stream current where it is called (the
// Work's last step, which copies the result into the caller's tensor) wait for that mark, so
// the copy lands after the caller's earlier work on the tensor, as NCCL's stream waits for the
// caller's before a collective.
std::function<void()> afterCallersStream(c10::Device device);

// The calling thread's current stream on `device`, as a cudaStream_t (for tsr_comm_set_thread_buffers).
void* currentStream(c10::Device device);

// Whether `stream` (a cudaStream_t) was made non-blocking (cudaStreamNonBlocking, as every
// stream of PyTorch's pool): false for the legacy and per-thread default streams, for a
// blocking stream (an ExternalStream of one), and where the driver cannot say. Asked of the
// driver the process has loaded (cuStreamGetFlags), so the backend needs no CUDA headers.
bool isNonBlockingStream(void* stream);

}  // namespace tessera_torch
