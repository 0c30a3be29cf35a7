#include "transport/registered_memory.h"

#include <ucp/api/ucp.h>

#include "transport/ucx_context.h"

namespace tsr::transport {

Result<std::shared_ptr<RegisteredMemory>> RegisteredMemory::create() {
  TSR_ASSIGN_OR_RETURN(auto context, UcxContext::instance());
  return std::shared_ptr<RegisteredMemory>(new RegisteredMemory(std::move(context)));
}

RegisteredMemory::~RegisteredMemory() {
  for (auto& [pointer, memh] : registrations_)
    ucp_mem_unmap(static_cast<ucp_context_h>(context_->handle()), static_cast<ucp_mem_h>(memh));
}

Result<void*> RegisteredMemory::allocate(size_t bytes) {
  if (bytes == 0) bytes = 1;
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS | UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
  mp.address = nullptr;
  mp.length = bytes;
  mp.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(static_cast<ucp_context_h>(context_->handle()), &mp, &memh);
  if (st != UCS_OK)
    return Status(Code::kTransport, "ucp_mem_map of " + std::to_string(bytes) + " bytes: " + ucs_status_string(st));
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
  st = ucp_mem_query(memh, &attr);
  if (st != UCS_OK) {
    ucp_mem_unmap(static_cast<ucp_context_h>(context_->handle()), memh);
    return Status(Code::kTransport, std::string("ucp_mem_query: ") + ucs_status_string(st));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  registrations_[attr.address] = memh;
  return attr.address;
}

void RegisteredMemory::release(void* pointer) {
  void* memh = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = registrations_.find(pointer);
    if (it == registrations_.end()) return;
    memh = it->second;
    registrations_.erase(it);
  }
  ucp_mem_unmap(static_cast<ucp_context_h>(context_->handle()), static_cast<ucp_mem_h>(memh));
}

bool RegisteredMemory::contains(const void* pointer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return registrations_.count(pointer) > 0;
}

size_t RegisteredMemory::blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return registrations_.size();
}

}  // namespace tsr::transport
