/* train_mlp: a 64-H-10 perceptron trained data-parallel on the sklearn digits set with each of
 * Tessera's algorithms, through the C API only. Every rank starts from the same
 * weights (one seed), trains on its own shard of the training split (rank r takes samples
 * r, r+N, ...), and is evaluated on the same held-out 20% of the shuffled set.
 *
 *   tsrun -np 4 build/bin/example-train-mlp --data build/data/digits.csv.gz
 *         [--algo dense,marsit,spardl,selsync,covap] [--epochs N] [--json FILE] [options]
 *
 * Prints one row per algorithm: time per step (max over ranks), bytes this rank sent per step
 * (tsr_comm_bytes_sent around the step's communication, max over ranks), test accuracy, and
 * steps that synchronized. Exit status 1 when the ranks' parameters differ at the end (all
 * five algorithms end on one model: SelSync's last step is forced to synchronize), when an
 * accuracy is below --min-acc, or (by default, when dense ran too) more than --tolerance
 * points below dense, or when the first step's synchronized gradient is no estimate of the
 * exact average (cosine <= 0 or norm ratio > 1.25; not SelSync); 2 for bad options or data. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlp/digits.h"
#include "mlp/mlp.h"
#include "mlp/sync.h"
#include "tessera/tessera.h"

#define CHECK(call)                                                                  \
  do {                                                                               \
    tsr_status_t st_ = (call);                                                       \
    if (st_ != TSR_OK) {                                                             \
      fprintf(stderr, "train_mlp: %s failed: %s\n", #call, tsr_last_error());        \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

enum { kMaxAlgos = 8 };

typedef struct {
  const char* data;
  const char* json;
  const char* algos[kMaxAlgos];
  int nalgos;
  int epochs, batch, hidden, check_accuracy, cosine;
  double lr, tolerance, min_acc;
  sync_options_t sync;
} options_t;

typedef struct {
  const char* algo;
  char detail[128];
  double step_ms, bytes_per_step, test_acc, loss;
  double first_cos, first_ratio;  /* step 0: applied vs exact average gradient (this rank) */
  long synced_steps, total_steps;
  int identical;
} result_t;

static void usage(FILE* f) {
  fprintf(f,
          "usage: example-train-mlp [--data FILE] [--algo LIST] [--epochs N] [--json FILE]\n"
          "  [--batch B] [--hidden H] [--lr X] [--constant-lr] [--density D] [--delta D]\n"
          "  [--covap-interval I|auto] [--tolerance P] [--min-acc P] [--no-check-accuracy]\n"
          "Defaults: build/data/digits.csv.gz, all of dense,marsit,spardl,selsync,covap, 30\n"
          "epochs, batch 16 per rank, hidden 64, lr 0.3 cosine-annealed, SparDL density 0.1,\n"
          "SelSync delta 0.5, COVAP interval auto, tolerance 2 points below dense, min-acc 0.\n");
}

static double parse_num(const char* opt, const char* v, double lo, double hi) {
  char* end;
  double x = v ? strtod(v, &end) : 0;
  if (!v || end == v || *end || !(x >= lo && x <= hi)) {
    fprintf(stderr, "train_mlp: %s %s: expected a number in [%g, %g]\n", opt, v ? v : "(missing)",
            lo, hi);
    exit(2);
  }
  return x;
}

static void parse_args(int argc, char** argv, options_t* o) {
  static char algo_list[256] = "dense,marsit,spardl,selsync,covap";
  *o = (options_t){.data = "build/data/digits.csv.gz", .epochs = 30, .batch = 16, .hidden = 64,
                   .check_accuracy = 1, .cosine = 1, .lr = 0.3, .tolerance = 2.0, .min_acc = 0.0,
                   .sync = {"0.1", "0.5", "auto"}};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1;
    if (!strcmp(a, "--data") && v) o->data = v;
    else if (!strcmp(a, "--json") && v) o->json = v;
    else if (!strcmp(a, "--algo") && v) snprintf(algo_list, sizeof algo_list, "%s", v);
    else if (!strcmp(a, "--epochs")) o->epochs = (int)parse_num(a, v, 1, 100000);
    else if (!strcmp(a, "--batch")) o->batch = (int)parse_num(a, v, 1, 4096);
    else if (!strcmp(a, "--hidden")) o->hidden = (int)parse_num(a, v, 1, 256);
    else if (!strcmp(a, "--lr")) o->lr = parse_num(a, v, 0, 100);
    else if (!strcmp(a, "--tolerance")) o->tolerance = parse_num(a, v, 0, 100);
    else if (!strcmp(a, "--min-acc")) o->min_acc = parse_num(a, v, 0, 100);
    else if (!strcmp(a, "--density") && v) o->sync.spardl_density = v;   /* Tessera checks it */
    else if (!strcmp(a, "--delta") && v) o->sync.selsync_delta = v;
    else if (!strcmp(a, "--covap-interval") && v) o->sync.covap_interval = v;
    else if (!strcmp(a, "--no-check-accuracy")) o->check_accuracy = 0, takes = 0;
    else if (!strcmp(a, "--constant-lr")) o->cosine = 0, takes = 0;
    else if (!strcmp(a, "--help")) usage(stdout), exit(0);
    else {
      fprintf(stderr, "train_mlp: unknown option or missing value: %s\n", a);
      usage(stderr);
      exit(2);
    }
    i += takes;
  }
  static const char* known[] = {"dense", "marsit", "spardl", "selsync", "covap"};
  for (char* tok = strtok(algo_list, ","); tok; tok = strtok(NULL, ",")) {
    int ok = 0;
    for (int k = 0; k < 5; ++k) ok |= !strcmp(tok, known[k]);
    if (!ok) { /* checked before the job starts, not after the first algorithms ran */
      fprintf(stderr, "train_mlp: --algo: unknown algorithm \"%s\" (dense, marsit, spardl, "
              "selsync, covap)\n", tok);
      exit(2);
    }
    if (o->nalgos == kMaxAlgos) {
      fprintf(stderr, "train_mlp: --algo: more than %d algorithms\n", kMaxAlgos);
      exit(2);
    }
    o->algos[o->nalgos++] = tok;
  }
  if (o->nalgos == 0) {
    fprintf(stderr, "train_mlp: --algo: empty list\n");
    exit(2);
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t bytes_sent(tsr_comm_t comm) {
  uint64_t b = 0;
  CHECK(tsr_comm_bytes_sent(comm, &b));
  return b;
}

/* The split, identical on every rank: shard = this rank's training samples, test = the last
 * 20% of the shuffled set. */
typedef struct {
  const digits_t* d;
  int* shard;
  int shard_len, steps_per_epoch;
  int* test;
  int ntest;
} split_t;

/* Cosine and norm ratio of a (the applied gradient) against b (the exact average). */
static void compare(const float* a, const float* b, size_t n, double* cos_ab, double* ratio) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += (double)a[i] * b[i];
    aa += (double)a[i] * a[i];
    bb += (double)b[i] * b[i];
  }
  *cos_ab = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
  *ratio = bb > 0 ? sqrt(aa / bb) : 0;
}

/* Trains one algorithm from the common initial weights; fills r (reduced over ranks). */
static void run_algo(tsr_comm_t comm, int rank, int size, const options_t* o, const split_t* sp,
                     const char* algo, result_t* r) {
  mlp_shape_t shape = mlp_shape(kDigitsPixels, o->hidden, kDigitsClasses);
  float* params = malloc(sizeof(float) * shape.total);
  float* grad = malloc(sizeof(float) * shape.total);
  float* exact = malloc(sizeof(float) * shape.total);
  float* scratch = malloc(sizeof(float) * mlp_scratch_floats(&shape, sp->shard_len));
  float* bx = malloc(sizeof(float) * (size_t)sp->shard_len * kDigitsPixels);
  int* by = malloc(sizeof(int) * (size_t)sp->shard_len);
  int* order = malloc(sizeof(int) * (size_t)sp->shard_len);
  mlp_init(&shape, params, 20240607ULL);

  char err[512];
  sync_t* s = sync_create(algo, comm, &shape, &o->sync, err, sizeof err);
  if (!s) {
    fprintf(stderr, "train_mlp: %s\n", err);
    exit(2);
  }
  memset(r, 0, sizeof *r);
  r->algo = algo;
  uint64_t bytes = 0;
  double loss_sum = 0;
  CHECK(tsr_barrier(comm, NULL)); /* start the clocks together */
  double t0 = now_ms();
  for (int epoch = 0; epoch < o->epochs; ++epoch) {
    digits_shuffle(order, sp->shard_len, 1000003ULL * (unsigned long long)(epoch + 1) + rank);
    loss_sum = 0;
    for (int k = 0; k < sp->steps_per_epoch; ++k) {
      /* The last batch takes the rest of the shard, so every sample is seen each epoch. */
      int lo = k * o->batch, hi = k + 1 == sp->steps_per_epoch ? sp->shard_len : lo + o->batch;
      for (int i = lo; i < hi; ++i) {
        int idx = sp->shard[order[i]];
        memcpy(bx + (size_t)(i - lo) * kDigitsPixels, sp->d->x + (size_t)idx * kDigitsPixels,
               sizeof(float) * kDigitsPixels);
        by[i - lo] = sp->d->y[idx];
      }
      /* First step only, outside the counted bytes: the exact average of the local gradients,
       * to see how the algorithm's estimate compares (a scale or sign error shows here). */
      if (r->total_steps == 0) {
        mlp_backward(&shape, params, bx, by, hi - lo, exact, scratch, NULL, NULL);
        CHECK(tsr_allreduce(comm, exact, exact, shape.total, TSR_FLOAT32, TSR_AVG, NULL));
      }
      uint64_t b0 = bytes_sent(comm);
      CHECK(sync_begin(s));
      loss_sum += mlp_backward(&shape, params, bx, by, hi - lo, grad, scratch, sync_layer_ready, s);
      CHECK(sync_finish(s, grad));
      uint64_t b1 = bytes_sent(comm);
      if (r->total_steps == 0) compare(grad, exact, shape.total, &r->first_cos, &r->first_ratio);
      /* Cosine annealing to 0 over the run (--constant-lr: none): sign-compressed steps
       * (Marsit) keep their size until the rate shrinks, so they need it to settle. */
      long total = (long)o->epochs * sp->steps_per_epoch;
      double lr = o->cosine ? 0.5 * o->lr * (1 + cos(3.14159265358979323846 * (double)r->total_steps / total)) : o->lr;
      double norm2 = 0;
      for (size_t i = 0; i < shape.total; ++i) {
        norm2 += (double)grad[i] * grad[i];
        params[i] -= (float)lr * grad[i];
      }
      int last = epoch + 1 == o->epochs && k + 1 == sp->steps_per_epoch, synced = 0;
      CHECK(sync_after_update(s, params, norm2, last, b1 - b0, &synced));
      bytes += bytes_sent(comm) - b0;
      r->synced_steps += synced;
      r->total_steps++;
    }
  }
  double ms = (now_ms() - t0) / (double)r->total_steps;
  snprintf(r->detail, sizeof r->detail, "%s", sync_describe(s));

  /* Reduced over ranks outside the timed loop: the slowest rank's time and bytes. */
  double mine[3] = {ms, (double)bytes / (double)r->total_steps, 0}, worst[3];
  CHECK(tsr_allreduce(comm, mine, worst, 2, TSR_FLOAT64, TSR_MAX, NULL));
  r->step_ms = worst[0];
  r->bytes_per_step = worst[1];
  double loss = loss_sum / sp->steps_per_epoch;
  CHECK(tsr_allreduce(comm, &loss, &r->loss, 1, TSR_FLOAT64, TSR_AVG, NULL));
  /* The model every rank ends with must be the same one, bit for bit. */
  float* all = malloc(sizeof(float) * shape.total * (size_t)size);
  CHECK(tsr_allgather(comm, params, all, shape.total, TSR_FLOAT32, NULL));
  r->identical = 1;
  for (int q = 0; q < size; ++q)
    r->identical &= memcmp(all + shape.total * (size_t)q, params, sizeof(float) * shape.total) == 0;
  free(all);
  /* Accuracy on the common test split; the minimum over ranks (equal when identical). */
  float* tx = malloc(sizeof(float) * (size_t)sp->ntest * kDigitsPixels);
  int* ty = malloc(sizeof(int) * (size_t)sp->ntest);
  for (int i = 0; i < sp->ntest; ++i) {
    memcpy(tx + (size_t)i * kDigitsPixels, sp->d->x + (size_t)sp->test[i] * kDigitsPixels,
           sizeof(float) * kDigitsPixels);
    ty[i] = sp->d->y[sp->test[i]];
  }
  double acc = 100.0 * mlp_correct(&shape, params, tx, ty, sp->ntest) / sp->ntest;
  CHECK(tsr_allreduce(comm, &acc, &r->test_acc, 1, TSR_FLOAT64, TSR_MIN, NULL));
  sync_destroy(s);
  free(tx), free(ty), free(params), free(grad), free(exact), free(scratch), free(bx), free(by), free(order);
}

static void write_json(FILE* f, const char* path, const result_t* res, int n, int epochs) {
  for (int i = 0; i < n; ++i)
    fprintf(f,
            "{\"algo\": \"%s\", \"epochs\": %d, \"step_ms\": %.4f, \"bytes_per_step\": %.1f, "
            "\"test_acc\": %.2f, \"synced_steps\": %ld, \"total_steps\": %ld}\n",
            res[i].algo, epochs, res[i].step_ms, res[i].bytes_per_step, res[i].test_acc,
            res[i].synced_steps, res[i].total_steps);
  if (fclose(f) != 0) {
    perror(path);
    exit(2);
  }
}

int main(int argc, char** argv) {
  options_t o;
  parse_args(argc, argv, &o);
  digits_t d;
  char err[512];
  /* Before joining the job, so a missing file fails at once with its name. */
  if (digits_load(o.data, &d, err, sizeof err)) {
    fprintf(stderr, "train_mlp: %s\n", err);
    return 2;
  }
  tsr_comm_t comm;
  CHECK(tsr_comm_init(&comm));
  int rank, size;
  CHECK(tsr_comm_rank(comm, &rank));
  CHECK(tsr_comm_size(comm, &size));
  /* Rank 0 writes --json: opened before training, so an unwritable path ends every rank now
   * rather than after every algorithm has trained. */
  FILE* json = NULL;
  int json_ok = 1;
  if (rank == 0 && o.json && !(json = fopen(o.json, "w"))) perror(o.json), json_ok = 0;
  if (o.json) CHECK(tsr_broadcast(comm, &json_ok, &json_ok, 1, TSR_INT32, 0, NULL));
  if (!json_ok) {
    CHECK(tsr_comm_destroy(comm));
    digits_free(&d);
    return 2;
  }

  split_t sp = {.d = &d};
  int* order = malloc(sizeof(int) * (size_t)d.n);
  digits_shuffle(order, d.n, 42); /* same seed, same split on every rank */
  sp.ntest = d.n / 5;
  int ntrain = d.n - sp.ntest;
  sp.test = order + ntrain;
  sp.shard = malloc(sizeof(int) * (size_t)(ntrain / size + 1));
  for (int i = rank; i < ntrain; i += size) sp.shard[sp.shard_len++] = order[i];
  /* The same number of steps on every rank: the smallest shard decides it. */
  int min_shard = ntrain / size;
  sp.steps_per_epoch = min_shard / o.batch > 0 ? min_shard / o.batch : 1;
  if (rank == 0)
    printf("train_mlp: %d ranks, digits %s: %d train (%d-%d per rank), %d test; MLP %d-%d-%d "
           "(%zu parameters), batch %d per rank, %d steps per epoch, lr %g%s\n",
           size, o.data, ntrain, min_shard, sp.shard_len, sp.ntest, kDigitsPixels, o.hidden,
           kDigitsClasses, mlp_shape(kDigitsPixels, o.hidden, kDigitsClasses).total, o.batch,
           sp.steps_per_epoch, o.lr, o.cosine ? " cosine-annealed" : "");

  result_t res[kMaxAlgos];
  for (int a = 0; a < o.nalgos; ++a) {
    run_algo(comm, rank, size, &o, &sp, o.algos[a], &res[a]);
    if (rank == 0)
      printf("  %-8s done: loss %.4f, test %.2f%%, first step vs exact average: cos %.3f, "
             "norm ratio %.3f; %s\n", res[a].algo, res[a].loss, res[a].test_acc,
             res[a].first_cos, res[a].first_ratio, res[a].detail);
  }

  const result_t* dense = NULL;
  for (int a = 0; a < o.nalgos; ++a)
    if (!strcmp(res[a].algo, "dense")) dense = &res[a];
  int failed = 0;
  if (rank == 0) {
    printf("%-8s %6s %9s %14s %9s %9s %13s  %s\n", "algo", "epochs", "step_ms", "bytes/step",
           "test_acc", "vs_dense", "synced/total", "parameters");
    for (int a = 0; a < o.nalgos; ++a) {
      const result_t* r = &res[a];
      char vs[16] = "-";
      if (dense) snprintf(vs, sizeof vs, "%+.2f", r->test_acc - dense->test_acc);
      printf("%-8s %6d %9.3f %14.0f %8.2f%% %9s %6ld/%-6ld  %s\n", r->algo, o.epochs, r->step_ms,
             r->bytes_per_step, r->test_acc, vs, r->synced_steps, r->total_steps,
             r->identical ? "identical" : "DIFFER");
    }
  }
  for (int a = 0; a < o.nalgos; ++a) {
    const result_t* r = &res[a];
    const char* why = NULL;
    /* An estimate of the average must point its way and not be larger: Marsit's eta * sign
     * has norm mean|g| sqrt(D) <= |g|, SparDL keeps a subset, COVAP profiles its first step
     * with full averages. SelSync's first step is a local one: not compared. */
    int estimates = strcmp(r->algo, "selsync") != 0;
    if (!r->identical) why = "parameters differ between ranks";
    else if (estimates && (r->first_cos <= 0 || r->first_ratio > 1.25))
      why = "first synchronized gradient is not an estimate of the average (cos <= 0 or norm "
            "ratio > 1.25)";
    else if (r->test_acc < o.min_acc) why = "accuracy below --min-acc";
    else if (o.check_accuracy && dense && r->test_acc < dense->test_acc - o.tolerance)
      why = "accuracy more than --tolerance below dense";
    if (why && rank == 0)
      printf("FAILED: %s: %s (test %.2f%%, dense %.2f%%, min %.2f%%, tolerance %.2f; first "
             "step cos %.3f, ratio %.3f)\n", r->algo, why, r->test_acc,
             dense ? dense->test_acc : NAN, o.min_acc, o.tolerance, r->first_cos, r->first_ratio);
    failed |= why != NULL;
  }
  if (json) {
    write_json(json, o.json, res, o.nalgos, o.epochs);
    printf("wrote %s\n", o.json);
  }
  if (rank == 0 && !failed) printf("PASSED: %d algorithms\n", o.nalgos);
  CHECK(tsr_comm_destroy(comm));
  free(order), free(sp.shard);
  digits_free(&d);
  return failed ? 1 : 0;
}
