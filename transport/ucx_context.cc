#include "transport/ucx_context.h"

#include <mutex>
#include <string>

#include <ucp/api/ucp.h>

namespace tsr::transport {

Result<std::shared_ptr<UcxContext>> UcxContext::instance() {
  // Weak: the context lives while some transport uses it, and a later job in the same
  // process (tests) gets a fresh one.
  static std::mutex mutex;
  static std::weak_ptr<UcxContext> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = current.lock()) return existing;

  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    return Status(Code::kTransport, std::string("ucp_config_read: ") + ucs_status_string(st));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 1;
  ucp_context_h handle = nullptr;
  st = ucp_init(&params, config, &handle);
  ucp_config_release(config);
  if (st != UCS_OK)
    return Status(Code::kTransport, std::string("ucp_init: ") + ucs_status_string(st) +
                                        " (check UCX_TLS / UCX_NET_DEVICES)");
  auto context = std::shared_ptr<UcxContext>(new UcxContext());
  context->context_ = handle;
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(handle, &attr) == UCS_OK)
    context->cudaMemory_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  current = context;
  return context;
}

UcxContext::~UcxContext() {
  if (context_) ucp_cleanup(static_cast<ucp_context_h>(context_));
}

}  // namespace tsr::transport
