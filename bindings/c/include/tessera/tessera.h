/* Tessera C API: a stable C ABI over the C++ runtime (in the style of NCCL and UCC).
 *
 * Every function returns a tsr_status_t; no C++ exception crosses this boundary. On an error,
 * tsr_last_error() gives this thread's message naming the rank, the peer and the operation.
 * Collectives take an optional request out-parameter: NULL makes the call blocking; otherwise
 * the call returns at once and tsr_test / tsr_wait finish it, and tsr_request_free releases it.
 * All ranks must call collectives in the same order with the same count, dtype, op and root.
 */
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TSR_API __attribute__((visibility("default")))
#else
#define TSR_API
#endif

#include "tessera/tessera_version.h"

typedef enum {
  TSR_OK = 0,
  TSR_IN_PROGRESS = 1,          /* tsr_test: not finished yet (not an error) */
  TSR_ERR_NOT_SUPPORTED = 2,    /* this algorithm or memory type cannot serve the input */
  TSR_ERR_INVALID_ARGUMENT = 3, /* bad pointer, count, dtype, op, root, key or value */
  TSR_ERR_MISMATCH = 4,         /* ranks called a collective with different arguments */
  TSR_ERR_PEER_FAILED = 5,      /* a peer died or its connection broke */
  TSR_ERR_TIMEOUT = 6,          /* a collective did not finish within TSR_TIMEOUT_MS */
  TSR_ERR_BOOTSTRAP = 7,        /* peers could not be reached or authenticated at startup */
  TSR_ERR_TRANSPORT = 8,        /* UCX reported an error */
  TSR_ERR_ABORTED = 9,          /* the communicator was aborted or is unusable after an error */
  TSR_ERR_INTERNAL = 10,        /* a bug in Tessera: please report it */
  TSR_ERR_NUMERIC = 11,         /* NaN or Inf where a compressor cannot take it */
  TSR_ERR_REVOKED = 12,         /* a rank revoked the communicator (tsr_comm_revoke) */
  /* Not values: they make every int a valid tsr_status_t, so a bad one passed in is
   * reported as an error instead of being undefined behaviour in the library. */
  TSR_STATUS_RANGE_MIN_ = -0x7fffffff - 1,
  TSR_STATUS_RANGE_MAX_ = 0x7fffffff
} tsr_status_t;

typedef enum {
  TSR_FLOAT32 = 0,
  TSR_FLOAT64 = 1,
  TSR_FLOAT16 = 2,
  TSR_BFLOAT16 = 3,
  TSR_INT32 = 4,
  TSR_INT64 = 5,
  TSR_DTYPE_RANGE_MIN_ = -0x7fffffff - 1, /* not values: see tsr_status_t */
  TSR_DTYPE_RANGE_MAX_ = 0x7fffffff
} tsr_dtype_t;

typedef enum {
  TSR_SUM = 0,
  TSR_AVG = 1,
  TSR_MIN = 2,
  TSR_MAX = 3,
  TSR_PROD = 4,
  TSR_BAND = 5, /* bitwise and, or, xor: TSR_INT32 and TSR_INT64 only */
  TSR_BOR = 6,
  TSR_BXOR = 7,
  TSR_OP_RANGE_MIN_ = -0x7fffffff - 1, /* not values: see tsr_status_t */
  TSR_OP_RANGE_MAX_ = 0x7fffffff
} tsr_op_t;

/* Where a collective's buffers live. */
typedef enum {
  TSR_MEM_HOST = 0,
  TSR_MEM_CUDA = 1,                     /* dense collectives: staged through pinned host memory; tensors: memory=cuda */
  TSR_MEM_RANGE_MIN_ = -0x7fffffff - 1, /* not values: see tsr_status_t */
  TSR_MEM_RANGE_MAX_ = 0x7fffffff
} tsr_memory_t;

typedef struct tsr_comm* tsr_comm_t;
typedef struct tsr_request* tsr_request_t;

/* A key/value setting: configuration names with or without the TSR_ prefix
 * (e.g. {"timeout_ms", "5000"}), plus, for tsr_comm_init_config only, the launch keys
 * "rank", "size", "local_rank", "local_size", "peers" (host:port,...), "secret" (16 bytes or
 * more; a job of several ranks without one fails unless "insecure" is "1"). */
typedef struct {
  const char* key;
  const char* value;
} tsr_param_t;

/* Collective: every rank of the job calls it. Reads TSR_* (or Open MPI / Slurm / torchrun)
 * variables from the environment. */
TSR_API tsr_status_t tsr_comm_init(tsr_comm_t* comm);
/* Like tsr_comm_init, with params applied over the environment. */
TSR_API tsr_status_t tsr_comm_init_config(tsr_comm_t* comm, const tsr_param_t* params, size_t nparams);
/* Releases the communicator; pending collectives fail with TSR_ERR_ABORTED. Handles made from
 * it (requests, tensors, SelSync, COVAP) stay valid to free: every other call on them then
 * returns TSR_ERR_ABORTED saying the communicator was destroyed (a request that had finished
 * still reports how it ended). Waits for calls in progress on other threads (a blocking
 * collective: tsr_comm_abort first ends it). */
TSR_API tsr_status_t tsr_comm_destroy(tsr_comm_t comm);
/* Fails this rank's pending and later collectives and tells the peers (which fail theirs). */
TSR_API tsr_status_t tsr_comm_abort(tsr_comm_t comm);
/* As MPI_Comm_revoke (ULFM): not collective; every pending and later call on comm, on this rank
 * and on every live peer (told at once, without waiting for a timeout), fails with
 * TSR_ERR_REVOKED naming the rank that revoked it. For a rank that saw a failure and wants
 * every other rank out of its collectives now. The communicator stays revoked. */
TSR_API tsr_status_t tsr_comm_revoke(tsr_comm_t comm);
/* As MPIX_Comm_shrink (ULFM): called by every live rank of comm after a failure (blocking).
 * It revokes comm, so that every live rank leaves its calls and comes here; the live ranks
 * agree on who is lost (a rank whose endpoint failed, whose neighbours saw it die, or that says
 * nothing within the timeout; a rank once lost stays lost), then the survivors get a new
 * communicator in *newcomm, ranked in their old order, with its own secret (a lost rank cannot
 * join it) and planned afresh for its size. Only a majority goes on: when this rank and the
 * ranks it can reach are not more than half of comm's, it fails with TSR_ERR_PEER_FAILED naming
 * both sides (the two sides of a network partition never both go on). It fails with
 * TSR_ERR_TIMEOUT when the survivors do not agree within twice the timeout (a failure during
 * the shrink that some saw too late; call it again). A survivor that dies after the agreement
 * makes the survivors' bootstrap fail (within the timeout, at least 5 s): they agree again
 * without it, up to 3 times. comm stays unusable (revoked, or broken by
 * the failure): destroy it. Every live rank calls it the same number of times on comm.
 * docs/elastic.md. */
TSR_API tsr_status_t tsr_comm_shrink(tsr_comm_t comm, tsr_comm_t* newcomm);
/* Collective over comm (every member calls it, in order with its collectives, at a point of
 * its choosing: between training steps, say): the replacement processes that asked to join
 * since the last call (tsr_comm_join) are let in. *newcomm gets the grown communicator (the
 * members keep their ranks, the replacements follow) or NULL when nobody was waiting (one
 * 8-byte all-gather). The first call opens this rank's door for replacements at its first
 * bootstrap address (its TSR_PEERS entry). A replacement that vanishes makes the call fail on
 * every member within the timeout (at least 5 s); comm stays usable either way. comm's memory
 * type must be TSR_MEM_HOST. docs/elastic.md. */
TSR_API tsr_status_t tsr_comm_grow(tsr_comm_t comm, tsr_comm_t* newcomm);
/* A replacement process (tsrun --respawn starts one with TSR_JOIN=1 and the launch variables
 * of the rank it replaces) joins the running job: it asks the members at their first bootstrap
 * addresses, with the job secret (a process without it is refused), and waits until their
 * next tsr_comm_grow lets it in (at most TSR_BOOTSTRAP_TIMEOUT_MS). *comm is then its
 * communicator, its rank after the members'. */
TSR_API tsr_status_t tsr_comm_join(tsr_comm_t* comm);
/* For a communicator made by tsr_comm_shrink, tsr_comm_grow or tsr_comm_join: the milliseconds
 * its ranks took to agree (on who is lost; on who joins, and to tell them; a replacement: until
 * it was let in) and to bootstrap it (endpoints, schedules planned afresh); zeros for others. */
TSR_API tsr_status_t tsr_comm_recovery_ms(tsr_comm_t comm, double* agreement_ms, double* bootstrap_ms);
/* A planned end, as ncclCommFinalize: waits until every collective and message this rank has
 * posted on comm has ended, then ends the communicator (telling the peers, as
 * tsr_comm_destroy does). The handle stays valid until tsr_comm_destroy: calls on it, and on
 * handles made from it, return TSR_ERR_ABORTED. Returns TSR_OK, or the error that broke the
 * communicator before it ended (it is ended all the same). */
TSR_API tsr_status_t tsr_comm_finalize(tsr_comm_t comm);
/* Collectives and messages posted on comm from now on fail with TSR_ERR_TIMEOUT, on every
 * rank, when not done within timeout_ms (> 0) of starting (TSR_TIMEOUT_MS until then). */
TSR_API tsr_status_t tsr_comm_set_timeout(tsr_comm_t comm, int timeout_ms);
/* The timeout, in ms, of the calls posted on comm from now on. */
TSR_API tsr_status_t tsr_comm_timeout(tsr_comm_t comm, int* timeout_ms);

/* The color of a rank that takes part in tsr_comm_split without joining any new communicator. */
#define TSR_COMM_SPLIT_NOCOLOR (-1)
/* Collective over comm (every rank calls it, in order with its collectives; blocking), as
 * MPI_Comm_split and ncclCommSplit: the ranks that pass the same color >= 0 get a new
 * communicator of their own in *newcomm, ranked by key (ties: by rank in comm);
 * TSR_COMM_SPLIT_NOCOLOR gives *newcomm = NULL. Nothing outside the job is asked (no launcher,
 * no store): the members' bootstrap addresses travel through comm and the new communicator's
 * secret derives from comm's, so only comm's members can join it. The new communicator is
 * independent: destroy it with tsr_comm_destroy, before or after comm. comm's memory type must
 * be TSR_MEM_HOST. */
TSR_API tsr_status_t tsr_comm_split(tsr_comm_t comm, int color, int key, tsr_comm_t* newcomm);

TSR_API tsr_status_t tsr_comm_rank(tsr_comm_t comm, int* rank);
TSR_API tsr_status_t tsr_comm_size(tsr_comm_t comm, int* size);
TSR_API tsr_status_t tsr_comm_local_rank(tsr_comm_t comm, int* local_rank);
/* Bytes this rank has sent its peers so far (payload and headers; on one host, also what it
 * wrote into the shared-memory segment for them). */
TSR_API tsr_status_t tsr_comm_bytes_sent(tsr_comm_t comm, uint64_t* bytes);

/* The cost model's estimate, in seconds, of the fastest dense algorithm for `collective`
 * ("allreduce" of `bytes`, or "allgather" of `bytes` from each rank) on this job, with the
 * links it measured (or TSR_LINK_BW / TSR_LINK_LAT gave) at creation: for choosing between
 * dense and compressed communication per buffer. Local; the same on every rank. */
TSR_API tsr_status_t tsr_comm_estimate(tsr_comm_t comm, const char* collective, size_t bytes, double* seconds);

/* The memory type of the buffers of this communicator's later dense collectives (TSR_MEM_HOST
 * by default). TSR_MEM_CUDA: each dense collective copies its device input to pinned host
 * memory, runs on the host and copies the result back to the device (there is no GPU
 * reduction for dense collectives). The copy waits for the work queued before the call on the
 * default stream (and every blocking stream): a cudaMemcpy or a kernel there needs no
 * synchronization first; for work on a non-blocking stream of the caller's own, name it
 * (tsr_comm_set_stream). Without a
 * usable CUDA device it returns TSR_ERR_NOT_SUPPORTED with the reason and leaves the setting
 * unchanged. Device gradients can also go through tensors declared with memory=cuda
 * (tessera_tensor.h): Marsit and compressed tensors directly on the device when UCX moves CUDA
 * memory. Status on a GPU: docs/gpu.md. */
TSR_API tsr_status_t tsr_comm_set_memory_type(tsr_comm_t comm, tsr_memory_t memory);
/* The caller's CUDA stream (a cudaStream_t; NULL, the default: none) for this communicator's
 * later dense collectives on TSR_MEM_CUDA buffers and steps of memory=cuda tensors
 * (tessera_tensor.h), as ncclAllReduce's stream argument: each such call records an event on
 * `stream`, on the calling thread, and reads its input only after the work queued there
 * before the call, whatever the stream's flags (a non-blocking stream of the caller's own
 * included). The result is in place when the request has ended (tsr_wait / tsr_test / the
 * callback), for any stream's later work. Without a stream, the event is recorded on the
 * legacy default stream, whose order every blocking stream keeps (tsr_comm_set_memory_type).
 * A handle that is not a stream of the communicator's device makes that call fail with
 * TSR_ERR_INVALID_ARGUMENT, naming it. Not used for host buffers. */
TSR_API tsr_status_t tsr_comm_set_stream(tsr_comm_t comm, void* stream);
/* For the calling thread only, until tsr_comm_clear_thread_buffers(comm) on that thread: the
 * memory type and the stream of its later calls on comm, in place of the communicator's own
 * (tsr_comm_set_memory_type, tsr_comm_set_stream; same meanings and checks: TSR_MEM_CUDA
 * without a usable CUDA device fails with TSR_ERR_NOT_SUPPORTED, nothing set). For libraries
 * that post on a communicator other threads use too (the PyTorch backend and a DDP hook, a
 * metrics thread): a communicator-wide setting changed around one thread's call would reach
 * another thread's call in between. The calls themselves still go in the same order on every
 * rank. */
TSR_API tsr_status_t tsr_comm_set_thread_buffers(tsr_comm_t comm, tsr_memory_t memory, void* stream);
TSR_API tsr_status_t tsr_comm_clear_thread_buffers(tsr_comm_t comm);

/* recv may equal send (in place). */
TSR_API tsr_status_t tsr_allreduce(tsr_comm_t comm, const void* send, void* recv, size_t count, tsr_dtype_t dtype,
                                   tsr_op_t op, tsr_request_t* request);
/* recv holds size * count elements in rank order; send may point at this rank's block. */
TSR_API tsr_status_t tsr_allgather(tsr_comm_t comm, const void* send, void* recv, size_t count, tsr_dtype_t dtype,
                                   tsr_request_t* request);
/* send is read on the root only; recv may equal send. */
TSR_API tsr_status_t tsr_broadcast(tsr_comm_t comm, const void* send, void* recv, size_t count, tsr_dtype_t dtype,
                                   int root, tsr_request_t* request);
/* send holds size * recv_count elements; this rank gets block `rank`. */
TSR_API tsr_status_t tsr_reduce_scatter(tsr_comm_t comm, const void* send, void* recv, size_t recv_count,
                                        tsr_dtype_t dtype, tsr_op_t op, tsr_request_t* request);
TSR_API tsr_status_t tsr_barrier(tsr_comm_t comm, tsr_request_t* request);
/* All-to-all with a count per pair, as MPI_Alltoallv (counts and displacements in elements,
 * arrays of comm's size): this rank sends send_counts[p] elements from send + send_displs[p]
 * to rank p and receives recv_counts[p] elements from rank p at recv + recv_displs[p]. The
 * ranks first agree on every count and on the dtype (a small allgather this call waits for):
 * a pair whose counts differ is a TSR_ERR_MISMATCH naming both ranks and both counts, on every
 * rank, before any data moves; then the data goes peer to peer (non-blocking with a request).
 * Host memory only. */
TSR_API tsr_status_t tsr_alltoallv(tsr_comm_t comm, const void* send, const size_t* send_counts,
                                   const size_t* send_displs, void* recv, const size_t* recv_counts,
                                   const size_t* recv_displs, tsr_dtype_t dtype, tsr_request_t* request);

/* Point-to-point, as MPI_Isend / MPI_Irecv (blocking with request NULL): only this rank and
 * `peer` call them, beside the collectives and in no fixed order with them. A receive takes
 * the messages `peer` sent this rank with the same tag (0 .. TSR_MAX_TAG) in the order they
 * were sent. count and dtype must give the bytes the sender sent: otherwise the receive fails
 * with TSR_ERR_MISMATCH naming both sizes, and the communicator breaks, on every rank, as after
 * a mismatched collective. A peer that dies or stalls fails them within the timeout.
 * Host memory only. */
#define TSR_MAX_TAG 1048575
TSR_API tsr_status_t tsr_send(tsr_comm_t comm, const void* send, size_t count, tsr_dtype_t dtype, int peer, int tag,
                              tsr_request_t* request);
TSR_API tsr_status_t tsr_recv(tsr_comm_t comm, void* recv, size_t count, tsr_dtype_t dtype, int peer, int tag,
                              tsr_request_t* request);

/* TSR_OK when finished, TSR_IN_PROGRESS while running, or the collective's error. */
TSR_API tsr_status_t tsr_test(tsr_request_t request);
TSR_API tsr_status_t tsr_wait(tsr_request_t request);
/* Calls fn(user, status) once when the collective ends, with its final status (inside fn,
 * tsr_last_error() gives the message of a failure); at once, on this thread, if it has ended.
 * It runs on Tessera's progress thread (or a thread driving it in tsr_wait/tsr_test): it must
 * return quickly and must not call tsr_wait or a blocking collective (tsr_wait there on a
 * request still running, and every call that would block, a collective or message without a
 * request, tsr_comm_split, tsr_comm_destroy, tsr_comm_finalize, tsr_comm_shrink,
 * tsr_comm_grow, a tensor step without a request, tsr_selsync_step, tsr_covap_finish_step,
 * tsr_covap_move, tsr_selsync_inject, return TSR_ERR_INVALID_ARGUMENT saying so, having done nothing). The
 * request handle stays owned by the caller, who may free it before fn runs. For futures and
 * completion queues that need no thread of their own polling. Several may be registered. */
TSR_API tsr_status_t tsr_request_on_complete(tsr_request_t request, void (*fn)(void* user, tsr_status_t status),
                                             void* user);

/* Holds on a CUDA stream that the host releases: tsr_stream_hold queues on `stream` (a
 * cudaStream_t) a wait that the stream's later work cannot pass, and returns at once;
 * tsr_stream_release (once per hold, from any thread) lets the stream go on. What the host
 * wrote before the release is there for the work after the hold. With a request, the stream
 * waits for a collective without blocking the calling thread, as ProcessGroupNCCL's
 * Work::wait does: hold the caller's stream, and release the hold in the request's
 * completion callback (tsr_request_on_complete), whatever its status: a hold never released
 * stalls the stream for good. Post such a collective with that stream named
 * (tsr_comm_set_stream), or on the legacy default stream without one: its input is ordered by
 * an event taken in the call, before the hold. Tessera's progress thread, which gives the
 * release, never waits for a caller's stream (it polls events; its own streams are
 * non-blocking). Through the driver's
 * stream memory operations (cuStreamWaitValue32 on a flag in mapped pinned memory; the driver
 * is looked up at first use). TSR_ERR_NOT_SUPPORTED, saying why, without CUDA in this build,
 * without a device or driver, or where the device does not take the wait; nothing is then
 * queued. Status on a GPU: docs/gpu.md. */
typedef struct tsr_stream_hold_handle* tsr_stream_hold_t;
TSR_API tsr_status_t tsr_stream_hold(void* stream, tsr_stream_hold_t* hold);
TSR_API tsr_status_t tsr_stream_release(tsr_stream_hold_t hold);
/* Frees a request (a running collective still finishes). */
TSR_API tsr_status_t tsr_request_free(tsr_request_t request);

TSR_API const char* tsr_status_string(tsr_status_t status);
/* The version of the library loaded at run time (TSR_VERSION_CODE of the one built), which may
 * differ from the header's compiled in, as ncclGetVersion. */
TSR_API tsr_status_t tsr_get_version(int* version);
/* This thread's last error message ("" if none). Valid until this thread's next call. */
TSR_API const char* tsr_last_error(void);

#ifdef __cplusplus
}
#endif

#include "tessera/tessera_covap.h"
#include "tessera/tessera_selsync.h"
#include "tessera/tessera_tensor.h"

#endif /* TESSERA_TESSERA_H */
