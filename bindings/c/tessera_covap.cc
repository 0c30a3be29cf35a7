// The COVAP C API (tessera_covap.h) over tsr::covap::Covap.
#include <algorithm>

#include "algorithms/covap/covap.h"
#include "bindings/c/c_api_internal.h"

struct tsr_covap {
  std::unique_ptr<tsr::covap::Covap> impl;
  std::shared_ptr<tsr::capi::CommLife> life;  // its calls report TSR_ERR_ABORTED once destroyed
};

using namespace tsr::capi;
using tsr::runtime::Communicator;

namespace {

// Runs body(covap) for the COVAP call `fn` while its communicator lives.
template <typename F>
tsr_status_t onCovap(tsr_covap_t covap, const char* fn, F&& body) {
  if (!covap) return invalid(std::string(fn) + ": covap is NULL");
  return withLiveComm(*covap->life, fn, [&](Communicator&) { return body(*covap->impl); });
}

}  // namespace

extern "C" {

tsr_status_t tsr_covap_create(tsr_comm_t comm, const tsr_param_t* params, size_t nparams, const size_t* bucket_counts,
                              size_t nbuckets, tsr_covap_t* covap) {
  return guarded("tsr_covap_create", [&] {
    if (!comm || !covap) return invalid("tsr_covap_create: comm or covap is NULL");
    *covap = nullptr;
    if (nbuckets == 0 || !bucket_counts) return invalid("tsr_covap_create: no buckets");
    if (tsr_status_t st = checkBucketCounts("tsr_covap_create", bucket_counts, nbuckets); st != TSR_OK) return st;
    std::map<std::string, std::string> kv;
    if (tsr_status_t st = readParams("tsr_covap_create", params, nparams, kv); st != TSR_OK) return st;
    return withLiveComm(*comm->life, "tsr_covap_create", [&](Communicator& c) {
      auto made = tsr::covap::Covap::create(c, kv, std::vector<size_t>(bucket_counts, bucket_counts + nbuckets));
      if (!made.isOk()) return report(made.status());
      *covap = new tsr_covap{made.take(), comm->life};
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_covap_begin_step(tsr_covap_t covap) {
  return onCovap(covap, "tsr_covap_begin_step", [&](tsr::covap::Covap& c) {
    c.beginStep();
    return TSR_OK;
  });
}

tsr_status_t tsr_covap_bucket_ready(tsr_covap_t covap, size_t bucket, float* grad) {
  return guarded("tsr_covap_bucket_ready", [&] {
    return onCovap(covap, "tsr_covap_bucket_ready",
                   [&](tsr::covap::Covap& c) { return report(c.bucketReady(bucket, grad)); });
  });
}

tsr_status_t tsr_covap_finish_step(tsr_covap_t covap) {
  return guarded("tsr_covap_finish_step", [&] {
    if (covap)
      if (tsr_status_t st = refuseWaitInCallback("tsr_covap_finish_step"); st != TSR_OK) return st;
    return onCovap(covap, "tsr_covap_finish_step", [&](tsr::covap::Covap& c) { return report(c.finishStep()); });
  });
}

tsr_status_t tsr_covap_info(tsr_covap_t covap, int* interval, double* ccr) {
  return onCovap(covap, "tsr_covap_info", [&](tsr::covap::Covap& c) {
    if (interval) *interval = c.interval();
    if (ccr) *ccr = c.measuredCcr();
    return TSR_OK;
  });
}

tsr_status_t tsr_covap_steps(tsr_covap_t covap, uint64_t* steps) {
  if (!steps) return invalid("tsr_covap_steps: steps is NULL");
  return onCovap(covap, "tsr_covap_steps", [&](tsr::covap::Covap& c) {
    *steps = c.step();
    return TSR_OK;
  });
}

tsr_status_t tsr_covap_residual(tsr_covap_t covap, size_t bucket, float* residual) {
  return onCovap(covap, "tsr_covap_residual", [&](tsr::covap::Covap& c) {
    if (bucket >= c.bucketCount())
      return invalid("tsr_covap_residual: bucket " + std::to_string(bucket) + " of " + std::to_string(c.bucketCount()));
    const std::vector<float>& r = c.residual(bucket);
    if (!residual && !r.empty()) return invalid("tsr_covap_residual: residual is NULL");
    std::copy(r.begin(), r.end(), residual);
    return TSR_OK;
  });
}

tsr_status_t tsr_covap_move(tsr_covap_t covap, tsr_comm_t newcomm) {
  return guarded("tsr_covap_move", [&] {
    if (!covap || !newcomm) return invalid("tsr_covap_move: covap or newcomm is NULL");
    if (tsr_status_t st = refuseWaitInCallback("tsr_covap_move"); st != TSR_OK) return st;  // collective
    // Only the new communicator need be live: with no step open, the handle holds nothing of
    // the old one's (the old one may be gone after a failure).
    return withLiveComm(*newcomm->life, "tsr_covap_move (the new communicator)", [&](Communicator& next) {
      tsr::Status st = covap->impl->moveTo(next);
      if (!st.isOk()) return report(st);
      covap->life = newcomm->life;
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_covap_destroy(tsr_covap_t covap) {
  delete covap;
  return TSR_OK;
}

}  // extern "C"
