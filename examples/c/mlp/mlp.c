/* The MLP's math in plain loops: the model is small (64-64-10), the point is the
 * communication pattern, not the FLOPs. */
#include "mlp.h"

#include <math.h>
#include <string.h>

mlp_shape_t mlp_shape(int in, int hidden, int out) {
  mlp_shape_t s = {in, hidden, out, {0, 0}, {0, 0}, 0};
  s.len[0] = (size_t)hidden * in + hidden;
  s.len[1] = (size_t)out * hidden + out;
  s.off[0] = 0;
  s.off[1] = s.len[0];
  s.total = s.len[0] + s.len[1];
  return s;
}

static double next_uniform(unsigned long long* state) { /* in [-1, 1) */
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

void mlp_init(const mlp_shape_t* s, float* params, unsigned long long seed) {
  int fan_in[kLayers] = {s->in, s->hidden}, rows[kLayers] = {s->hidden, s->out};
  for (int l = 0; l < kLayers; ++l) {
    float* w = params + s->off[l];
    double bound = sqrt(6.0 / fan_in[l]);
    size_t nw = (size_t)rows[l] * fan_in[l];
    for (size_t i = 0; i < nw; ++i) w[i] = (float)(bound * next_uniform(&seed));
    memset(w + nw, 0, sizeof(float) * (size_t)rows[l]);
  }
}

size_t mlp_scratch_floats(const mlp_shape_t* s, int batch) {
  return (size_t)batch * (2 * (size_t)s->hidden + (size_t)s->out);
}

/* out[n][rows] = x[n][cols] * W^T + b, W row-major rows x cols followed by b. */
static void dense_forward(const float* block, int rows, int cols, const float* x, int n, float* out) {
  const float* b = block + (size_t)rows * cols;
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < rows; ++r) {
      const float* w = block + (size_t)r * cols;
      const float* xi = x + (size_t)i * cols;
      float acc = b[r];
      for (int c = 0; c < cols; ++c) acc += w[c] * xi[c];
      out[(size_t)i * rows + r] = acc;
    }
}

/* Gradient block of a dense layer from its input x and the output gradient d. */
static void dense_grad(int rows, int cols, const float* x, const float* d, int n, float* gblock) {
  float* gb = gblock + (size_t)rows * cols;
  memset(gblock, 0, sizeof(float) * ((size_t)rows * cols + rows));
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < rows; ++r) {
      float dr = d[(size_t)i * rows + r];
      if (dr == 0.0f) continue;
      float* g = gblock + (size_t)r * cols;
      const float* xi = x + (size_t)i * cols;
      for (int c = 0; c < cols; ++c) g[c] += dr * xi[c];
      gb[r] += dr;
    }
}

double mlp_backward(const mlp_shape_t* s, const float* params, const float* x, const int* y,
                    int batch, float* grad, float* scratch, mlp_layer_ready_fn ready, void* ctx) {
  int H = s->hidden, O = s->out;
  float* h = scratch;                          /* batch x H: ReLU activations */
  float* dh = h + (size_t)batch * H;           /* batch x H */
  float* z = dh + (size_t)batch * H;           /* batch x O: logits, then their gradient */
  const float* w2 = params + s->off[1];
  dense_forward(params + s->off[0], H, s->in, x, batch, h);
  for (size_t i = 0; i < (size_t)batch * H; ++i) h[i] = h[i] > 0 ? h[i] : 0;
  dense_forward(w2, O, H, h, batch, z);

  double loss = 0;
  for (int i = 0; i < batch; ++i) { /* softmax cross-entropy; z becomes dLoss/dz */
    float* zi = z + (size_t)i * O;
    float m = zi[0];
    for (int k = 1; k < O; ++k) m = zi[k] > m ? zi[k] : m;
    double sum = 0;
    for (int k = 0; k < O; ++k) sum += exp((double)(zi[k] - m));
    loss += log(sum) - (double)(zi[y[i]] - m);
    for (int k = 0; k < O; ++k)
      zi[k] = (float)((exp((double)(zi[k] - m)) / sum - (k == y[i])) / batch);
  }

  /* Backprop goes last layer first: its block is handed over before layer 0 is computed. */
  dense_grad(O, H, h, z, batch, grad + s->off[1]);
  if (ready) ready(ctx, 1, grad + s->off[1]);
  for (int i = 0; i < batch; ++i)
    for (int j = 0; j < H; ++j) {
      float acc = 0;
      if (h[(size_t)i * H + j] > 0)
        for (int k = 0; k < O; ++k) acc += z[(size_t)i * O + k] * w2[(size_t)k * H + j];
      dh[(size_t)i * H + j] = acc;
    }
  dense_grad(H, s->in, x, dh, batch, grad + s->off[0]);
  if (ready) ready(ctx, 0, grad + s->off[0]);
  return loss / batch;
}

int mlp_correct(const mlp_shape_t* s, const float* params, const float* x, const int* y, int n) {
  float h[256], z[64]; /* hidden <= 256 and out <= 64 (checked by the trainer's options) */
  int correct = 0;
  for (int i = 0; i < n; ++i) {
    const float* xi = x + (size_t)i * s->in;
    dense_forward(params + s->off[0], s->hidden, s->in, xi, 1, h);
    for (int j = 0; j < s->hidden; ++j) h[j] = h[j] > 0 ? h[j] : 0;
    dense_forward(params + s->off[1], s->out, s->hidden, h, 1, z);
    int best = 0;
    for (int k = 1; k < s->out; ++k) best = z[k] > z[best] ? k : best;
    correct += best == y[i];
  }
  return correct;
}
