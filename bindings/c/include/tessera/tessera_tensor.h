/* Per-tensor (compressed) allreduce through the C API. Included by tessera.h.
 *
 * A trainer declares each gradient tensor once, with the algorithm that reduces it, and then
 * allreduces it every step; the tensor keeps the algorithm's state (Marsit: compensation
 * vector and step counter) between steps.
 *
 *   tsr_tensor_t t;
 *   tsr_param_t p[] = {{"algorithm", "marsit"}, {"topology", "ring"}};
 *   tsr_tensor_create(comm, "fc1.weight", n, TSR_FLOAT32, p, 2, &t);
 *   ... every step, after backprop:
 *   tsr_tensor_allreduce(t, grad, NULL);          blocking, in place
 *   tsr_tensor_allreduce(t, grad, &request);      non-blocking; tsr_wait(request) later
 *   tsr_tensor_destroy(t);
 *
 * The result is the same on every rank: the step's estimate of the average over ranks (spardl:
 * of the sum) unless op= says otherwise; tsr_tensor_result_kind tells which. A communicator
 * holds one live tensor per name (a second is TSR_ERR_INVALID_ARGUMENT naming it). Every rank
 * creates the tensor alike (count, algorithm, its parameters as resolved, op=; names and
 * memory= may differ) and steps its tensors in the same order: a Marsit, compressed or spardl
 * tensor's first step compares the ranks' settings and, where they differ, fails on every rank
 * with TSR_ERR_MISMATCH naming each key, its values and the ranks.
 * Parameters:
 *   op=avg|sum        (any algorithm) the result's kind; the algorithm's other kind is scaled
 *                     by the ranks inside the step (spardl op=avg: the sum / N; the others
 *                     op=sum: the average x N). Not with a memory=cuda tensor on the direct
 *                     device path.
 *   algorithm=dense   plain averaging allreduce (any floating dtype; no other keys)
 *   algorithm=marsit  sign-bit allreduce (Marsit, Sign Bit is Enough; TSR_FLOAT32): topology=ring|torus,
 *                     seed=<uint64>, full_precision_every=<K> (0 = never), intra=none|fp16
 *                     (two-level: average inside each host in f32 or f16, Marsit across hosts;
 *                     not with topology=; needs equal hosts)
 *   algorithm=compressed  any compressor of the registry (BytePS compression; TSR_FLOAT32): compressor=
 *                     onebit|topk|randomk|dithering|fp16|bf16|none, k, scaling, scale_block
 *                     (onebit: one scale per that many elements), ef=vanilla|none
 *                     (default vanilla: what the compressor drops comes back next step),
 *                     momentum=nesterov|none, momentum_mu, seed; TSR_COMPRESS_<KEY> variables
 *                     give defaults. Payloads are all-gathered, decoded and averaged.
 *                     optimizer_momentum=mu (flat only): compress g + mu M and return
 *                     M' - mu M (M: the last average), so an optimizer with momentum mu holds
 *                     the compressed estimate M' in its buffer (default 0: off).
 *                     intra=none|fp16: two-level (average inside each host in f32 or f16,
 *                     the compressor across hosts on each rank's shard, then all-gather
 *                     inside the host; a topk/randomk k count is split among the shards;
 *                     needs equal hosts of 2+ ranks).
 *   algorithm=spardl  sparse-block allreduce (SparDL; TSR_FLOAT32): density (0, 1] (default
 *                     0.01), teams=T (divides N; a power of two: R-SAG), sag=auto|r. The result
 *                     is the SUM over ranks of the kept entries (divide by N to average); what
 *                     any selection drops stays in the residual of the rank that dropped it.
 *   presets           algorithm=NAME of a family with defaults; the caller's keys override
 *                     them: marsit-torus (topology=torus), marsit-2level (intra=none),
 *                     marsit-2level-fp16 (intra=fp16), topk (compressed, compressor=topk
 *                     k=0.01), topk-2level, topk-2level-fp16 (and intra=none|fp16), onebit
 *                     (compressed, compressor=onebit scaling=true scale_block=4096
 *                     optimizer_momentum=0.9; optimizer_momentum=0 for an optimizer without
 *                     momentum). tsr_tensor_algorithm lists
 *                     every name.
 *   memory=host|cuda  (any algorithm but dense; default host) where the data pointers given to
 *                     tsr_tensor_allreduce live. cuda: device pointers; the step reads them
 *                     after the work queued before the call on the communicator's stream
 *                     (tsr_comm_set_stream: an event recorded in the call, as for dense
 *                     collectives), without one on the default stream (and every blocking
 *                     stream); the progress thread polls that event, never waits on it.
 *                     Marsit ring/torus, when UCX
 *                     reports CUDA memory support: the step runs on the device (CUDA kernels,
 *                     compensation on the device, device buffers to UCX; tsr_tensor_residual
 *                     reads it back). Otherwise each step copies the gradient to pinned host
 *                     memory, runs the host step and copies the result back, all on the
 *                     progress thread; state stays in host memory. The log (info) says which
 *                     path and why. Fails
 *                     with TSR_ERR_NOT_SUPPORTED naming the tensor when Tessera was built without
 *                     CUDA or no CUDA device is usable. Status on a GPU: docs/gpu.md.
 * Every rank declares the same tensors with the same parameters. Bad keys or values fail with
 * TSR_ERR_INVALID_ARGUMENT naming the tensor, the key and the value; NaN or Inf in a Marsit
 * tensor fails that step on every rank with TSR_ERR_NUMERIC (tensor and residual unchanged);
 * so does a compressed one (two-level intra=fp16: also a value or host sum beyond f16). */
#ifndef TESSERA_TESSERA_TENSOR_H
#define TESSERA_TESSERA_TENSOR_H

#include "tessera/tessera.h" /* TSR_API and the core types: this header may come first */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_tensor* tsr_tensor_t;

TSR_API tsr_status_t tsr_tensor_create(tsr_comm_t comm, const char* name, size_t count, tsr_dtype_t dtype,
                                       const tsr_param_t* params, size_t nparams, tsr_tensor_t* tensor);
/* Collective. data holds the tensor's count elements and receives the result. With request
 * non-NULL the call returns at once: data must stay untouched until tsr_wait/tsr_test says
 * done, and one step at a time per tensor. */
TSR_API tsr_status_t tsr_tensor_allreduce(tsr_tensor_t tensor, void* data, tsr_request_t* request);
/* Steps completed so far and the algorithm ("dense", "marsit-ring", "marsit-torus",
 * "marsit-2level", "compressed:ef(topk(k=10))", "compressed-2level-fp16:ef(topk(k=5))",
 * "spardl", "spardl-rsag T=2"); either
 * pointer may be NULL. The string lives as long as the tensor. */
TSR_API tsr_status_t tsr_tensor_info(tsr_tensor_t tensor, uint64_t* steps, const char** algorithm);
/* Copies what compression has kept back so far (Marsit: the compensation, count floats;
 * two-level: the f16 cast residual plus, on this rank's row block, the compensation times the
 * ranks per host; compressed: the error-feedback error, two-level: the f16 cast residual plus
 * the shard's error-feedback error times the ranks per host; spardl: its residual; dense:
 * zeros). Summed over ranks with N times the result it gives the sum of the inputs.
 * Not while a step is
 * pending. */
TSR_API tsr_status_t tsr_tensor_residual(tsr_tensor_t tensor, float* residual);
/* Replaces what the tensor keeps back (count floats, in tsr_tensor_residual's units), e.g. the
 * residual read with tsr_tensor_residual and permuted after the caller re-laid-out its buffer
 * (PyTorch DDP re-orders a bucket's parameters after the first step), or carried over to a
 * re-created tensor. Local; not while a step is pending. Two-level tensors put it all into the
 * cast residual and restart the row block's compensation (the next step adds the same sum).
 * dense and ef=none keep nothing: only zeros. Always from host memory; on the direct device
 * path it is written to the device, where the step keeps it. */
TSR_API tsr_status_t tsr_tensor_set_residual(tsr_tensor_t tensor, const float* residual);
/* The tensor algorithms by index from 0 (the four families, dense first, then the presets):
 * the name algorithm= takes, the family it runs (dense, marsit, compressed or spardl; a
 * family's own name for itself), one line for people, and the keys it takes besides
 * algorithm=, memory= and op=. TSR_ERR_INVALID_ARGUMENT past the last. The strings are static;
 * any pointer may be NULL. tsr-info prints the list. */
TSR_API tsr_status_t tsr_tensor_algorithm(size_t index, const char** name, const char** family,
                                          const char** description, const char** parameters);
/* What a step leaves in data: TSR_AVG (the average over ranks) or TSR_SUM. */
TSR_API tsr_status_t tsr_tensor_result_kind(tsr_tensor_t tensor, tsr_op_t* op);
/* Moves the tensor to newcomm (a communicator tsr_comm_shrink or tsr_comm_grow made from its
 * own, or any other), keeping what it holds back: the residual (tsr_tensor_residual's units)
 * goes over, so nothing compression kept back is lost; the algorithm's other state (steps,
 * Marsit's last estimate, a compressor's momentum) starts afresh, as on a new tensor, on every
 * rank alike. Local: each rank of newcomm moves (or, a replacement, creates) the same tensors
 * before the next step. A dead rank's residual is lost with it, as its last gradient is.
 * Call it before destroying the old communicator; not while a step is pending. */
TSR_API tsr_status_t tsr_tensor_move(tsr_tensor_t tensor, tsr_comm_t newcomm);
/* A pending step still finishes. Also valid (and the only call that is) after the
 * communicator's tsr_comm_destroy. */
TSR_API tsr_status_t tsr_tensor_destroy(tsr_tensor_t tensor);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESSERA_TENSOR_H */
