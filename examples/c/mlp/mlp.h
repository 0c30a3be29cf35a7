/* A two-layer perceptron (in -> hidden ReLU -> out, softmax cross-entropy) on one flat f32
 * buffer. Layer l's parameters are one contiguous block (weights then bias), so a layer's
 * gradient is one bucket that can be communicated as soon as backprop has produced it. */
#ifndef TSR_EXAMPLES_MLP_MLP_H
#define TSR_EXAMPLES_MLP_MLP_H

#include <stddef.h>

enum { kLayers = 2 };

typedef struct {
  int in, hidden, out;
  size_t off[kLayers]; /* layer l's block: weights (rows = its outputs), then bias */
  size_t len[kLayers];
  size_t total;
} mlp_shape_t;

/* Called by mlp_backward when layer `layer`'s gradient block is final (the last layer first). */
typedef void (*mlp_layer_ready_fn)(void* ctx, int layer, float* grad_block);

mlp_shape_t mlp_shape(int in, int hidden, int out);
/* He-uniform weights, zero biases, from `seed` alone (so every rank starts equal). */
void mlp_init(const mlp_shape_t* s, float* params, unsigned long long seed);
/* Forward and backward over `batch` samples (x rows, labels y): grad = d(mean loss)/d(params).
 * Returns the mean loss. scratch holds mlp_scratch_floats(s, batch) floats. */
double mlp_backward(const mlp_shape_t* s, const float* params, const float* x, const int* y, int batch, float* grad,
                    float* scratch, mlp_layer_ready_fn ready, void* ctx);
size_t mlp_scratch_floats(const mlp_shape_t* s, int batch);
/* How many of the n samples the model classifies correctly. */
int mlp_correct(const mlp_shape_t* s, const float* params, const float* x, const int* y, int n);

#endif
