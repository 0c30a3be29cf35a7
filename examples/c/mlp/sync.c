/* Per-algorithm synchronization of the MLP's gradients through the C API (see sync.h). */
#include "sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { kDense, kMarsit, kSparDL, kSelSync, kCovap } algo_t;

struct sync_state {
  algo_t algo;
  tsr_comm_t comm;
  mlp_shape_t shape;
  int size;
  tsr_tensor_t tensor[kLayers];      /* marsit, spardl: one tensor per layer */
  tsr_request_t pending[kLayers];    /* dense, marsit, spardl: in flight since layer ready */
  tsr_status_t error;                /* first failure inside a layer-ready callback */
  tsr_selsync_t selsync;
  tsr_covap_t covap;
  char describe[128];
};

/* Records the first failure of a callback (backprop cannot return one); sync_finish reports it. */
static void keep_error(sync_t* s, tsr_status_t st, const char* what) {
  if (st != TSR_OK && s->error == TSR_OK) {
    s->error = st;
    fprintf(stderr, "train_mlp: %s failed: %s\n", what, tsr_last_error());
  }
}

sync_t* sync_create(const char* algo, tsr_comm_t comm, const mlp_shape_t* shape,
                    const sync_options_t* opt, char* err, size_t errlen) {
  static const char* names[] = {"dense", "marsit", "spardl", "selsync", "covap"};
  sync_t* s = calloc(1, sizeof *s);
  int found = -1;
  for (int i = 0; i < 5; ++i)
    if (strcmp(algo, names[i]) == 0) found = i;
  if (found < 0) {
    snprintf(err, errlen, "unknown algorithm \"%s\" (dense, marsit, spardl, selsync, covap)", algo);
    free(s);
    return NULL;
  }
  s->algo = (algo_t)found;
  s->comm = comm;
  s->shape = *shape;
  tsr_comm_size(comm, &s->size);
  snprintf(s->describe, sizeof s->describe, "%s", algo);
  tsr_status_t st = TSR_OK;
  if (s->algo == kMarsit || s->algo == kSparDL) {
    tsr_param_t marsit[] = {{"algorithm", "marsit"}, {"topology", "ring"}};
    tsr_param_t spardl[] = {{"algorithm", "spardl"}, {"density", opt->spardl_density}};
    static const char* tnames[kLayers] = {"fc1", "fc2"};
    for (int l = 0; l < kLayers && st == TSR_OK; ++l)
      st = tsr_tensor_create(comm, tnames[l], shape->len[l], TSR_FLOAT32,
                             s->algo == kMarsit ? marsit : spardl, 2, &s->tensor[l]);
    const char* served = "";
    if (st == TSR_OK) tsr_tensor_info(s->tensor[0], NULL, &served);
    snprintf(s->describe, sizeof s->describe, "%s%s%s", served,
             s->algo == kSparDL ? " density=" : "", s->algo == kSparDL ? opt->spardl_density : "");
  } else if (s->algo == kSelSync) {
    /* Parameters averaged on synchronized steps; one bucket per layer. */
    tsr_param_t p[] = {{"delta", opt->selsync_delta}, {"aggregate", "params"}};
    st = tsr_selsync_create(comm, p, 2, shape->len, kLayers, &s->selsync);
    snprintf(s->describe, sizeof s->describe, "selsync delta=%s", opt->selsync_delta);
  } else if (s->algo == kCovap) {
    /* Buckets in the order backprop produces them: the last layer first. */
    size_t counts[kLayers] = {shape->len[1], shape->len[0]};
    /* auto's interval is capped at 6: this model computes a step in microseconds, so on a busy
     * machine its CCR reaches the hundreds (seen: 145) and COVAP would sync a bucket once in
     * ~146 steps and not train; 30 epochs at I = 6 stay within 2 points of dense. */
    tsr_param_t p[] = {{"interval", opt->covap_interval}, {"max_interval", "6"}};
    st = tsr_covap_create(comm, p, 2, counts, kLayers, &s->covap);
  }
  if (st != TSR_OK) {
    snprintf(err, errlen, "%s: %s", algo, tsr_last_error());
    sync_destroy(s);
    return NULL;
  }
  return s;
}

tsr_status_t sync_begin(sync_t* s) {
  s->error = TSR_OK;
  return s->algo == kCovap ? tsr_covap_begin_step(s->covap) : TSR_OK;
}

void sync_layer_ready(void* opaque, int layer, float* grad) {
  sync_t* s = opaque;
  if (s->error != TSR_OK) return;
  switch (s->algo) {
    case kDense: /* every gradient averaged, overlapping the rest of backprop */
      keep_error(s, tsr_allreduce(s->comm, grad, grad, s->shape.len[layer], TSR_FLOAT32, TSR_AVG,
                                  &s->pending[layer]), "tsr_allreduce");
      break;
    case kMarsit:
    case kSparDL:
      keep_error(s, tsr_tensor_allreduce(s->tensor[layer], grad, &s->pending[layer]),
                 "tsr_tensor_allreduce");
      break;
    case kCovap: /* bucket 0 is the last layer */
      keep_error(s, tsr_covap_bucket_ready(s->covap, (size_t)(kLayers - 1 - layer), grad),
                 "tsr_covap_bucket_ready");
      break;
    case kSelSync: /* local step: nothing leaves during backprop */
      break;
  }
}

tsr_status_t sync_finish(sync_t* s, float* grad) {
  tsr_status_t first = s->error;
  for (int l = 0; l < kLayers; ++l) {
    if (!s->pending[l]) continue;
    tsr_status_t st = tsr_wait(s->pending[l]);
    if (st != TSR_OK && first == TSR_OK) {
      fprintf(stderr, "train_mlp: %s step failed: %s\n", s->describe, tsr_last_error());
      first = st;
    }
    tsr_request_free(s->pending[l]);
    s->pending[l] = NULL;
  }
  if (first != TSR_OK) return first;
  if (s->algo == kSparDL) { /* SparDL returns the sum over ranks: average it */
    float inv = 1.0f / (float)s->size;
    for (size_t i = 0; i < s->shape.total; ++i) grad[i] *= inv;
  }
  if (s->algo == kCovap) {
    tsr_status_t st = tsr_covap_finish_step(s->covap);
    if (st != TSR_OK) {
      fprintf(stderr, "train_mlp: tsr_covap_finish_step failed: %s\n", tsr_last_error());
      return st;
    }
    int interval = 0;
    double ccr = 0;
    tsr_covap_info(s->covap, &interval, &ccr);
    snprintf(s->describe, sizeof s->describe, "covap interval=%d ccr=%.2f", interval, ccr);
  }
  return TSR_OK;
}

tsr_status_t sync_after_update(sync_t* s, float* params, double grad_norm2, int force_sync,
                               uint64_t grad_bytes, int* synced) {
  /* COVAP skips whole steps when no bucket's turn comes up; the others always send. */
  *synced = s->algo == kCovap ? grad_bytes > 0 : 1;
  if (s->algo != kSelSync) return TSR_OK;
  float* buckets[kLayers] = {params + s->shape.off[0], params + s->shape.off[1]};
  /* A jump in the reported norm makes every rank's flag fire: the final averaging. */
  double reported = force_sync ? grad_norm2 * 1e6 + 1.0 : grad_norm2;
  tsr_status_t st = tsr_selsync_step(s->selsync, reported, buckets, synced);
  if (st != TSR_OK) fprintf(stderr, "train_mlp: tsr_selsync_step failed: %s\n", tsr_last_error());
  return st;
}

const char* sync_describe(sync_t* s) { return s->describe; }

void sync_destroy(sync_t* s) {
  if (!s) return;
  for (int l = 0; l < kLayers; ++l) {
    if (s->pending[l]) tsr_request_free(s->pending[l]);
    if (s->tensor[l]) tsr_tensor_destroy(s->tensor[l]);
  }
  if (s->selsync) tsr_selsync_destroy(s->selsync);
  if (s->covap) tsr_covap_destroy(s->covap);
  free(s);
}
