#include "transport/ucx_context.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include <ucp/api/ucp.h>

#include "base/logging.h"

namespace tsr::transport {

namespace {

// Tessera's own defaults for UCX settings the user did not set (a user's UCX_* variable
// always wins; UCX_TCP_SNDBUF=auto gives the kernel's autotuning back).
//
// TCP segments of 2 MiB: a ring chunk (TSR_CHUNK_BYTES, 512 KiB) then travels as one eager
// message, sent from the caller's buffer and copied out once, where UCX's 8 KiB default made
// it a rendezvous of 64 fragments, each its own send and copy (4 hosts at 10 Gbit/s: busbw
// 0.43 -> 0.53 GB/s, docs/performance.md). The buffers are taken from UCX's pools as traffic
// needs them. The two sizes go together (UCX refuses a receive segment smaller than the send
// segment): a user who set either keeps UCX's own defaults for the other.
//
// A TCP send buffer of 256 KiB (the kernel doubles it) instead of autotuning's up to 4 MiB: a
// ring forwards each chunk as soon as it has it, so data queued beyond about one chunk per
// link only adds queueing delay in front of every hop (and, with BBR's pacing, reordering).
// 4 emulated hosts at 10 Gbit/s: 1.24-1.52x the bus bandwidth at 16-64 MiB under cubic,
// reno and bbr alike (docs/performance.md, "TCP send buffer"). It still lets a connection keep
// up to 512 KiB in flight: about 40 Gbit/s at a 100 us round trip. Less on a slower link the
// user named or the link probe measured (tcpSendBufferFor; runtime/communicator_links.cc).
struct Default {
  const char* env;  // what the user would set
  const char* key;  // the name UCX's transports match (ucp_config_modify: without the prefix)
  const char* value;
};
constexpr Default kSegmentDefaults[] = {
    {"UCX_TCP_TX_SEG_SIZE", "TX_SEG_SIZE", "2M"},
    {"UCX_TCP_RX_SEG_SIZE", "RX_SEG_SIZE", "2M"},
};
constexpr const char* kSendBufferEnv = "UCX_TCP_SNDBUF";
constexpr size_t kMinSendBuffer = 16 * 1024, kMaxSendBuffer = 256 * 1024;
constexpr double kSendBufferSeconds = 256e-6;

void apply(ucp_config_t* config, const Default& d) {
  ucs_status_t st = ucp_config_modify(config, d.key, d.value);
  if (st != UCS_OK)
    log::get("transport")->debug("UCX default {}={} not applied: {}", d.env, d.value, ucs_status_string(st));
}

void applyDefaults(ucp_config_t* config, size_t tcpSendBuffer) {
  bool segmentsSet = false;
  for (const Default& d : kSegmentDefaults) segmentsSet = segmentsSet || std::getenv(d.env);
  // Without TCP in UCX_TLS no transport takes them, and UCX warns of them on every rank.
  if (!segmentsSet && ucxTlsHasTcp(std::getenv("UCX_TLS")))
    for (const Default& d : kSegmentDefaults) apply(config, d);
  if (std::getenv(kSendBufferEnv)) return;
  const std::string bytes = std::to_string(tcpSendBuffer);
  apply(config, {kSendBufferEnv, "SNDBUF", bytes.c_str()});
  log::get("transport")->debug("UCX TCP send buffer {} bytes", bytes);
}

}  // namespace

size_t tcpSendBufferFor(double bytesPerSec) {
  if (!(bytesPerSec > 0) || !std::isfinite(bytesPerSec)) return kMaxSendBuffer;
  // A power of two: sizes just above one are slow (33k and 34k, doubled by the kernel to a
  // little over 64 KiB, ran 4 emulated 1 Gbit/s hosts at 1.08-1.11x the floor where 29-32k
  // and 35-64k ran at 1.04-1.05x; docs/performance.md, "TCP send buffer"), and the probe's
  // figure wanders by +-15%, so it must not land there.
  const double kib = std::max(1.0, bytesPerSec * kSendBufferSeconds / 1024);
  const double wanted = std::exp2(std::round(std::log2(kib))) * 1024;
  return static_cast<size_t>(std::clamp(wanted, double(kMinSendBuffer), double(kMaxSendBuffer)));
}

size_t tcpSendBufferForProbed(double bytesPerSec) {
  const size_t wanted = tcpSendBufferFor(bytesPerSec);
  return wanted <= kMaxSendBuffer / 4 ? wanted : 0;
}

namespace {

// UCX_TLS's names, lower case, without ":aux" and the like; `excluding` for a "^" list.
std::set<std::string> tlsNames(const char* tls, bool* excluding) {
  std::string list(tls ? tls : "");
  *excluding = !list.empty() && list[0] == '^';
  if (*excluding) list.erase(0, 1);
  std::set<std::string> names;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    item = item.substr(0, item.find(':'));  // "posix:aux" names posix
    item.erase(std::remove_if(item.begin(), item.end(), [](unsigned char c) { return std::isspace(c); }), item.end());
    std::transform(item.begin(), item.end(), item.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!item.empty()) names.insert(item);
  }
  return names;
}

bool namesAny(const std::set<std::string>& names, std::initializer_list<const char*> any) {
  return std::any_of(any.begin(), any.end(), [&](const char* n) { return names.count(n) > 0; });
}

}  // namespace

bool ucxTlsHasSharedMemory(const char* tls) {
  bool excluding = false;
  const std::set<std::string> names = tlsNames(tls, &excluding);
  if (names.empty()) return true;  // UCX's default, "all"
  if (excluding) return !namesAny(names, {"sm", "shm", "mm", "all"}) && !(names.count("posix") && names.count("sysv"));
  return namesAny(names, {"all", "sm", "shm", "mm", "posix", "sysv", "xpmem"});
}

bool ucxTlsHasTcp(const char* tls) {
  bool excluding = false;
  const std::set<std::string> names = tlsNames(tls, &excluding);
  if (names.empty()) return true;
  return excluding ? !namesAny(names, {"tcp", "all"}) : namesAny(names, {"tcp", "all"});
}

Result<std::shared_ptr<UcxContext>> UcxContext::instance(size_t tcpSendBuffer) {
  // Weak: a context lives while some transport uses it, and a later job in the same
  // process (tests) gets a fresh one. One per size: UCX fixes the size per context.
  static std::mutex mutex;
  static std::map<size_t, std::weak_ptr<UcxContext>> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tcpSendBuffer) tcpSendBuffer = tcpSendBufferFor(0);
  std::weak_ptr<UcxContext>& current = contexts[tcpSendBuffer];
  if (auto existing = current.lock()) return existing;

  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return Status(Code::kTransport, std::string("ucp_config_read: ") + ucs_status_string(st));
  applyDefaults(config, tcpSendBuffer);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;  // AM: the consumer path
  params.mt_workers_shared = 1;
  ucp_context_h handle = nullptr;
  st = ucp_init(&params, config, &handle);
  ucp_config_release(config);
  if (st != UCS_OK)
    return Status(Code::kTransport,
                  std::string("ucp_init: ") + ucs_status_string(st) + " (check UCX_TLS / UCX_NET_DEVICES)");
  auto context = std::shared_ptr<UcxContext>(new UcxContext());
  context->context_ = handle;
  context->tcpSendBuffer_ = tcpSendBuffer;
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
