/* COVAP through the C API: coarse-grained, overlap-aware filtering (the COVAP paper). Included by
 * tessera.h.
 *
 *   tsr_covap_t c;
 *   size_t counts[] = {n_fc2, n_fc1};            buckets in the order backprop produces them
 *   tsr_param_t p[] = {{"interval", "auto"}};
 *   tsr_covap_create(comm, p, 1, counts, 2, &c);
 *   every step:
 *     tsr_covap_begin_step(c);
 *     ... backward pass; as each bucket's gradient is ready:
 *     tsr_covap_bucket_ready(c, 0, grad_fc2);      communication starts, overlapping the rest
 *     tsr_covap_bucket_ready(c, 1, grad_fc1);
 *     tsr_covap_finish_step(c);                    selected shards averaged, others zeroed
 *     ... optimizer step
 *   tsr_covap_destroy(c);
 *
 * Parameters: interval=auto|<int>, max_interval (caps auto; default none), profile_steps (default 3), ef_init,
 * ef_ascend_steps, ef_ascend_range. Bad keys or values: TSR_ERR_INVALID_ARGUMENT naming the key and value.
 * Every rank makes its handle alike (parameters, bucket counts): the first tsr_covap_bucket_ready
 * compares them over the ranks (one small all-gather) and, where they differ, fails on every
 * rank with TSR_ERR_MISMATCH naming the key, its values and the ranks. */
#ifndef TESSERA_TESSERA_COVAP_H
#define TESSERA_TESSERA_COVAP_H

#include "tessera/tessera.h" /* TSR_API and the core types: this header may come first */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_covap* tsr_covap_t;

TSR_API tsr_status_t tsr_covap_create(tsr_comm_t comm, const tsr_param_t* params, size_t nparams,
                                      const size_t* bucket_counts, size_t nbuckets, tsr_covap_t* covap);
TSR_API tsr_status_t tsr_covap_begin_step(tsr_covap_t covap);
/* grad holds bucket_counts[bucket] floats and must stay valid until tsr_covap_finish_step.
 * Every bucket once a step (tsr_covap_finish_step fails naming one that was not handed over).
 * A bucket's shards go out once every bucket before it (in the order of bucket_counts) has
 * come: ranks that hand them over in different orders still pair the right buckets, and in the
 * declared order each goes out at once. */
TSR_API tsr_status_t tsr_covap_bucket_ready(tsr_covap_t covap, size_t bucket, float* grad);
TSR_API tsr_status_t tsr_covap_finish_step(tsr_covap_t covap);
/* The interval in use (1 while profiling) and the measured CCR (0 until measured). Both are
 * also logged at info level when profiling ends (TSR_LOG_LEVEL=info, logger "covap"). */
TSR_API tsr_status_t tsr_covap_info(tsr_covap_t covap, int* interval, double* ccr);
/* Steps finished on the handle (or taken over by tsr_covap_move), and bucket `bucket`'s
 * residual: what skipped steps held back (bucket_counts[bucket] floats into residual). */
TSR_API tsr_status_t tsr_covap_steps(tsr_covap_t covap, uint64_t* steps);
TSR_API tsr_status_t tsr_covap_residual(tsr_covap_t covap, size_t bucket, float* residual);
/* Moves the handle to newcomm (tsr_comm_shrink's or tsr_comm_grow's, or any other), keeping
 * its residuals, step, interval and CCR. Collective over newcomm: every rank of it calls it, a
 * replacement with a handle it just made on newcomm (same parameters and buckets), which takes
 * the step, interval and CCR of the ranks that have stepped. A profile not yet ended starts
 * again on newcomm. A step that failed (tsr_covap_finish_step's error) left the residuals as
 * before it and is not counted: redo it after the move. A dead rank's residual (the gradients it
 * held back) is lost with it, as its gradient of the failed step is. Errors: a step open; the
 * ranks' handles made with other parameters or bucket counts; stepped ranks at different steps.
 * newcomm must be live; the old communicator need not be. */
TSR_API tsr_status_t tsr_covap_move(tsr_covap_t covap, tsr_comm_t newcomm);
TSR_API tsr_status_t tsr_covap_destroy(tsr_covap_t covap);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESSERA_COVAP_H */
