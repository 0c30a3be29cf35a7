/* How one training step's gradients (or parameters) are synchronized, per algorithm, through
 * the C API only. A step is:
 *   sync_begin; backprop calls sync_layer_ready per layer (last first); sync_finish (grad now
 *   holds what the optimizer applies); the local SGD update; sync_after_update (SelSync). */
#ifndef TSR_EXAMPLES_MLP_SYNC_H
#define TSR_EXAMPLES_MLP_SYNC_H

#include "mlp.h"
#include "tessera/tessera.h"

typedef struct {
  const char* spardl_density; /* e.g. "0.1" */
  const char* selsync_delta;  /* e.g. "0.1" */
  const char* covap_interval; /* "auto" or an integer */
} sync_options_t;

typedef struct sync_state sync_t;

/* NULL with a message in err for an unknown algorithm or a failed create (the C API's error). */
sync_t* sync_create(const char* algo, tsr_comm_t comm, const mlp_shape_t* shape, const sync_options_t* opt, char* err,
                    size_t errlen);
/* Before the forward pass: COVAP's step clock starts here, so the computation its CCR
 * profile measures is forward plus backward. */
tsr_status_t sync_begin(sync_t* s);
/* mlp_layer_ready_fn: starts this layer's communication at once where the algorithm can. */
void sync_layer_ready(void* s, int layer, float* grad_block);
tsr_status_t sync_finish(sync_t* s, float* grad);
/* After the optimizer step. SelSync may average params; *synced says whether this step
 * synchronized (COVAP: whether this rank sent anything, grad_bytes, since sync_begin).
 * force_sync makes SelSync synchronize (the final step, so the ranks end on one model). */
tsr_status_t sync_after_update(sync_t* s, float* params, double grad_norm2, int force_sync, uint64_t grad_bytes,
                               int* synced);
/* Which algorithm served it, for the log line (e.g. "spardl", "covap interval=3 ccr=2.4"). */
const char* sync_describe(sync_t* s);
void sync_destroy(sync_t* s);

#endif
