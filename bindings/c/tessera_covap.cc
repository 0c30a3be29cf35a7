// The COVAP C API (tessera_covap.h) over tsr::covap::Covap.
#include "algorithms/covap/covap.h"
#include "bindings/c/c_api_internal.h"

struct tsr_covap {
  std::unique_ptr<tsr::covap::Covap> impl;
};

using namespace tsr::capi;

extern "C" {

tsr_status_t tsr_covap_create(tsr_comm_t comm, const tsr_param_t* params, size_t nparams,
                              const size_t* bucket_counts, size_t nbuckets, tsr_covap_t* covap) {
  return guarded("tsr_covap_create", [&] {
    if (!comm || !covap) return invalid("tsr_covap_create: comm or covap is NULL");
    *covap = nullptr;
    if (nbuckets == 0 || !bucket_counts) return invalid("tsr_covap_create: no buckets");
    if (nparams && !params) return invalid("tsr_covap_create: params is NULL with nparams " + std::to_string(nparams));
    std::map<std::string, std::string> kv;
    for (size_t i = 0; i < nparams; ++i) {
      if (!params[i].key || !params[i].value)
        return invalid("tsr_covap_create: param " + std::to_string(i) + " has a NULL key or value");
      kv[params[i].key] = params[i].value;
    }
    auto made = tsr::covap::Covap::create(*comm->impl, kv,
                                         std::vector<size_t>(bucket_counts, bucket_counts + nbuckets));
    if (!made.isOk()) return report(made.status());
    *covap = new tsr_covap{made.take()};
    return TSR_OK;
  });
}

tsr_status_t tsr_covap_begin_step(tsr_covap_t covap) {
  if (!covap) return invalid("tsr_covap_begin_step: covap is NULL");
  covap->impl->beginStep();
  return TSR_OK;
}

tsr_status_t tsr_covap_bucket_ready(tsr_covap_t covap, size_t bucket, float* grad) {
  return guarded("tsr_covap_bucket_ready", [&] {
    if (!covap) return invalid("tsr_covap_bucket_ready: covap is NULL");
    return report(covap->impl->bucketReady(bucket, grad));
  });
}

tsr_status_t tsr_covap_finish_step(tsr_covap_t covap) {
  return guarded("tsr_covap_finish_step", [&] {
    if (!covap) return invalid("tsr_covap_finish_step: covap is NULL");
    return report(covap->impl->finishStep());
  });
}

tsr_status_t tsr_covap_info(tsr_covap_t covap, int* interval, double* ccr) {
  if (!covap) return invalid("tsr_covap_info: covap is NULL");
  if (interval) *interval = covap->impl->interval();
  if (ccr) *ccr = covap->impl->measuredCcr();
  return TSR_OK;
}

tsr_status_t tsr_covap_destroy(tsr_covap_t covap) {
  delete covap;
  return TSR_OK;
}

}  // extern "C"
