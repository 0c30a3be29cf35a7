// The SelSync C API (tessera_selsync.h) over tsr::selsync::SelSync.
#include "algorithms/selsync/injection.h"
#include "algorithms/selsync/selsync.h"
#include "bindings/c/c_api_internal.h"

struct tsr_selsync {
  std::unique_ptr<tsr::selsync::SelSync> impl;
  std::shared_ptr<tsr::capi::CommLife> life;  // its calls report TSR_ERR_ABORTED once destroyed
};

using namespace tsr::capi;
using tsr::runtime::Communicator;

extern "C" {

tsr_status_t tsr_selsync_create(tsr_comm_t comm, const tsr_param_t* params, size_t nparams, const size_t* bucket_counts,
                                size_t nbuckets, tsr_selsync_t* selsync) {
  return guarded("tsr_selsync_create", [&] {
    if (!comm || !selsync) return invalid("tsr_selsync_create: comm or selsync is NULL");
    *selsync = nullptr;
    if (nbuckets == 0 || !bucket_counts) return invalid("tsr_selsync_create: no buckets");
    if (tsr_status_t st = checkBucketCounts("tsr_selsync_create", bucket_counts, nbuckets); st != TSR_OK) return st;
    std::map<std::string, std::string> kv;
    if (tsr_status_t st = readParams("tsr_selsync_create", params, nparams, kv); st != TSR_OK) return st;
    return withLiveComm(*comm->life, "tsr_selsync_create", [&](Communicator& c) {
      auto made = tsr::selsync::SelSync::create(c, kv, std::vector<size_t>(bucket_counts, bucket_counts + nbuckets));
      if (!made.isOk()) return report(made.status());
      *selsync = new tsr_selsync{made.take(), comm->life};
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_selsync_inject(tsr_comm_t comm, uint64_t seed, uint64_t step, double alpha, const float* share,
                                size_t share_count, float* received, size_t capacity, size_t* received_count) {
  return guarded("tsr_selsync_inject", [&] {
    if (!comm) return invalid("tsr_selsync_inject: comm is NULL");
    if (tsr_status_t st = refuseWaitInCallback("tsr_selsync_inject"); st != TSR_OK) return st;
    return withLiveComm(*comm->life, "tsr_selsync_inject", [&](Communicator& c) {
      auto r = tsr::selsync::injectData(c, seed, step, alpha, share, share_count, received, capacity);
      if (!r.isOk()) return report(r.status());
      if (received_count) *received_count = r.value().receivedCount;
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_selsync_step(tsr_selsync_t selsync, double grad_norm_squared, float* const* buckets,
                              int* synchronized) {
  return guarded("tsr_selsync_step", [&] {
    if (!selsync || !buckets) return invalid("tsr_selsync_step: selsync or buckets is NULL");
    if (tsr_status_t st = refuseWaitInCallback("tsr_selsync_step"); st != TSR_OK) return st;
    return withLiveComm(*selsync->life, "tsr_selsync_step", [&](Communicator&) {
      size_t n = selsync->impl->bucketCount();
      auto r = selsync->impl->step(grad_norm_squared, std::vector<float*>(buckets, buckets + n));
      if (!r.isOk()) return report(r.status());
      if (synchronized) *synchronized = r.value().synchronized ? 1 : 0;
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_selsync_stats(tsr_selsync_t selsync, uint64_t* sync_steps, uint64_t* local_steps,
                               uint64_t* bytes_saved) {
  if (!selsync) return invalid("tsr_selsync_stats: selsync is NULL");
  return withLiveComm(*selsync->life, "tsr_selsync_stats", [&](Communicator&) {
    const auto& st = selsync->impl->stats();
    if (sync_steps) *sync_steps = st.syncSteps;
    if (local_steps) *local_steps = st.localSteps;
    if (bytes_saved) *bytes_saved = st.bytesSaved;
    return TSR_OK;
  });
}

tsr_status_t tsr_selsync_move(tsr_selsync_t selsync, tsr_comm_t newcomm) {
  if (!selsync || !newcomm) return invalid("tsr_selsync_move: selsync or newcomm is NULL");
  return withLiveComm(*newcomm->life, "tsr_selsync_move (the new communicator)", [&](Communicator& next) {
    selsync->impl->moveTo(next);
    selsync->life = newcomm->life;
    return TSR_OK;
  });
}

tsr_status_t tsr_selsync_destroy(tsr_selsync_t selsync) {
  delete selsync;
  return TSR_OK;
}

}  // extern "C"
