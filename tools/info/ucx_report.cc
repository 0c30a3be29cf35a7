#include <ucp/api/ucp.h>
#include <ucs/memory/memory_type.h>
#include <uct/api/uct.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tools/info/info.h"
#include "transport/ucx_context.h"

namespace tsr::tools::info {
namespace {

struct Transport {
  std::string name;
  std::vector<std::string> devices;
};

void add(std::vector<Transport>& found, const std::string& tl, const std::string& dev) {
  for (Transport& t : found)
    if (t.name == tl) {
      for (const std::string& d : t.devices)
        if (d == dev) return;
      t.devices.push_back(dev);
      return;
    }
  found.push_back({tl, {dev}});
}

// Every UCT transport and device, as `ucx_info -d` finds them: each component's memory
// domains, opened, asked for their transport resources. UCX_TLS narrows what UCP then uses.
Result<std::vector<Transport>> uctTransports() {
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (ucs_status_t st = uct_query_components(&components, &count); st != UCS_OK)
    return Status(Code::kTransport, std::string("uct_query_components: ") + ucs_status_string(st));
  std::vector<Transport> found;
  for (unsigned c = 0; c < count; ++c) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    for (const uct_md_resource_desc_t& mdDesc : mds) {
      uct_md_config_t* config = nullptr;
      if (uct_md_config_read(components[c], nullptr, nullptr, &config) != UCS_OK) continue;
      uct_md_h md = nullptr;
      ucs_status_t st = uct_md_open(components[c], mdDesc.md_name, config, &md);
      uct_config_release(config);
      if (st != UCS_OK) continue;  // e.g. a GPU component on a machine without the device
      uct_tl_resource_desc_t* tls = nullptr;
      unsigned tlCount = 0;
      if (uct_md_query_tl_resources(md, &tls, &tlCount) == UCS_OK) {
        for (unsigned t = 0; t < tlCount; ++t) add(found, tls[t].tl_name, tls[t].dev_name);
        uct_release_tl_resource_list(tls);
      }
      uct_md_close(md);
    }
  }
  uct_release_component_list(components);
  return found;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

}  // namespace

std::string renderUcx() {
  std::string s = row("UCX", std::string(ucp_get_version_string()) + " (built against " +
                                 std::to_string(UCP_API_MAJOR) + "." + std::to_string(UCP_API_MINOR) + ")");
  auto transports = uctTransports();
  if (!transports.isOk()) {
    s += row("UCX transports", "unknown: " + transports.status().message());
  } else {
    std::vector<std::string> names;
    for (const Transport& t : transports.value()) names.push_back(t.name + " (" + join(t.devices, ", ") + ")");
    s += row("UCX transports", names.empty() ? "none found" : join(names, ", "));
  }
  const char* tls = std::getenv("UCX_TLS");
  s += row("UCX_TLS", tls ? tls : "not set (UCX picks among all of the above)");

  // Memory types of the runtime's own context (same features and UCX defaults as a rank's).
  auto context = transport::UcxContext::instance();
  if (!context.isOk()) return s + row("UCX memory types", "unknown: " + context.status().message());
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(static_cast<ucp_context_h>(context.value()->handle()), &attr) != UCS_OK)
    return s + row("UCX memory types", "unknown: ucp_context_query failed");
  std::vector<std::string> types;
  for (int t = 0; t < UCS_MEMORY_TYPE_LAST; ++t)
    if (attr.memory_types & UCS_BIT(t)) types.push_back(ucs_memory_type_names[t]);
  s += row("UCX memory types", join(types, ", "));
  s += row("CUDA memory", context.value()->cudaMemory()
                              ? "yes: UCX moves CUDA buffers itself"
                              : "no: UCX lists no CUDA memory type (built without CUDA, or no GPU)");
  return s;
}

}  // namespace tsr::tools::info
