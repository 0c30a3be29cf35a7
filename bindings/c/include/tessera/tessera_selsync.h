/* SelSync through the C API: selective synchronization (the SelSync paper). Included by tessera.h.
 *
 *   tsr_selsync_t s;
 *   size_t counts[] = {n_weights, n_bias};
 *   tsr_param_t p[] = {{"delta", "0.3"}, {"aggregate", "params"}};
 *   tsr_selsync_create(comm, p, 2, counts, 2, &s);
 *   ... every step, after the local update:
 *   float* buckets[] = {weights, bias};
 *   int synced;
 *   tsr_selsync_step(s, grad_norm_squared, buckets, &synced);   collective
 *   tsr_selsync_destroy(s);
 *
 * Parameters: delta (>= 0; 0 = synchronize every step), ewma_window, ewma_alpha (default
 * N/100), aggregate=params|grads (which buffers the trainer passes), memory=host|cuda (where
 * the buckets live). Bad keys or values fail with TSR_ERR_INVALID_ARGUMENT naming the key and
 * the value.
 *
 * memory=cuda: the buckets are CUDA device memory of the current device (create fails with
 * TSR_ERR_NOT_SUPPORTED, saying why, without one). A local step does not touch them; a
 * synchronized one copies them to pinned host memory after the work queued on the
 * communicator's stream (tsr_comm_set_stream; without one, the default stream's), averages
 * them there and copies the average back before it returns (there is no GPU reduction for
 * dense data). The communicator's own memory type (tsr_comm_set_memory_type) does not matter.
 *
 * The first step has no previous norm to compare with: unless delta is 0 it is local, so start
 * every rank from the same parameters. A step whose reported norm jumps (e.g. norm * 1e6 + 1)
 * makes every rank synchronize, which trainers use to end on one model. */
#ifndef TESSERA_TESSERA_SELSYNC_H
#define TESSERA_TESSERA_SELSYNC_H

#include "tessera/tessera.h" /* TSR_API and the core types: this header may come first */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_selsync* tsr_selsync_t;

TSR_API tsr_status_t tsr_selsync_create(tsr_comm_t comm, const tsr_param_t* params, size_t nparams,
                                        const size_t* bucket_counts, size_t nbuckets, tsr_selsync_t* selsync);
/* Collective. buckets[i] holds bucket_counts[i] floats (host or, memory=cuda, device memory); when the
 * ranks synchronize they are replaced by their average over all ranks. A rank that cannot take
 * part (a NULL bucket or one not of the declared memory, a norm that is not a finite
 * non-negative number) fails the step on every rank, before any bucket is sent: with its own
 * error, naming the bucket or the value, and the others with the same code, naming that rank.
 * *synchronized (may be NULL) is 1 or 0, the same on every rank. */
TSR_API tsr_status_t tsr_selsync_step(tsr_selsync_t selsync, double grad_norm_squared, float* const* buckets,
                                      int* synchronized);
/* Steps synchronized and local so far, and payload bytes this rank did not send: an estimate,
 * the ring allreduce's payload 2 (N-1)/N x 4 x (sum of bucket_counts) bytes, rounded down, per
 * local step (headers excluded). */
TSR_API tsr_status_t tsr_selsync_stats(tsr_selsync_t selsync, uint64_t* sync_steps, uint64_t* local_steps,
                                       uint64_t* bytes_saved);
/* Moves the handle to newcomm (tsr_comm_shrink's or tsr_comm_grow's, or any other), keeping its
 * smoothed gradient norms and counts; ewma_alpha, when left to its default, becomes N/100 of
 * newcomm's size. Local (not collective): a replacement makes its handle anew on newcomm, and
 * its first step there is local for it (no history), the others' flags deciding. A step that
 * failed left the handle and the buckets as before it: redo it after the move. A dead rank's
 * local updates since the last synchronized step are lost with it. newcomm must be live. */
TSR_API tsr_status_t tsr_selsync_move(tsr_selsync_t selsync, tsr_comm_t newcomm);
TSR_API tsr_status_t tsr_selsync_destroy(tsr_selsync_t selsync);

/* Data injection for non-IID data (SelSync). Collective, same seed/step/alpha/share_count on
 * every rank: the ceil(alpha*N) ranks chosen from (seed, step) send share_count floats (beta
 * of their local batch) to every other rank point to point; received gets the chosen ranks' shares,
 * own excluded, in ascending rank order (*received_count floats; capacity is received's size
 * in floats, at most N * share_count needed). Shrink the local batch to b / (1 + alpha*beta*N).
 * The settings, and whether each rank's buffers fit the draw, are compared first: ranks that
 * differ fail with TSR_ERR_MISMATCH naming the setting and the ranks (a rank whose buffers do
 * not fit with TSR_ERR_INVALID_ARGUMENT naming them). */
TSR_API tsr_status_t tsr_selsync_inject(tsr_comm_t comm, uint64_t seed, uint64_t step, double alpha, const float* share,
                                        size_t share_count, float* received, size_t capacity, size_t* received_count);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESSERA_SELSYNC_H */
