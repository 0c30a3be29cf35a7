// Bootstrap: every rank learns every other rank's blob (UCX worker address, host name, host id)
// with no central server.
//
// Vocabulary. The ranks form a ring: rank r *connects* to its right neighbour (r+1) % N and
// *accepts* from its left neighbour (r-1+N) % N, on the bootstrap address peers[r]. Each link is
// mutually authenticated with the job secret (handshake.h, wire.h). A ring all-gather then takes
// N-1 steps: at step s rank r forwards blob (r-s) mod N to the right and receives blob
// (r-s-1) mod N from the left, so after N-1 steps every rank has all N blobs and every rank did
// the same work: no rank is special. Links stay open, so later all-gathers reuse them.
//
// Not thread-safe: one thread at a time calls a Bootstrap. No exceptions escape.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "runtime/bootstrap/launch_env.h"

namespace tsr::runtime {

struct BootstrapOptions {
  // Joining the ring (peers that are not up yet are retried with backoff until then), and
  // each allGather, must finish within this.
  int timeoutMs = 60000;
  // A connection must finish authenticating within this, so a silent stranger cannot hold a
  // rank up.
  int handshakeTimeoutMs = 2000;
  // Largest blob accepted from a neighbour; larger frames are rejected.
  size_t maxBlobBytes = size_t{64} << 20;
};

class Bootstrap {
 public:
  // Listens on peers[rank] (that address when it is this machine's, else every interface:
  // listen_address.h) and joins the ring: returns once both
  // neighbours' links are authenticated. Size 1 opens no socket. Errors (Code::kBootstrap) name
  // the ranks and addresses that never answered; a job of several ranks without a secret of 16
  // bytes or more is refused (kInvalidArgument) unless info.insecure (job_secret.h).
  static Result<std::unique_ptr<Bootstrap>> create(const LaunchInfo& info, BootstrapOptions options = {});
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  // Every rank passes one blob (any size up to maxBlobBytes, may be empty); every rank gets all
  // N blobs in rank order. Callable many times. After a failure the object stays failed.
  Result<std::vector<std::string>> allGather(const std::string& myBlob);

  // Returns once every rank has entered barrier().
  Status barrier();

  int rank() const;
  int size() const;

  // The ring links' sockets, as (neighbour rank, file descriptor): left first, then right;
  // empty for size 1. They stay open for the bootstrap's life, so a neighbour that dies
  // shows up as end-of-file at once: the communicator watches them (progress_engine.h).
  std::vector<std::pair<int, int>> neighbourSockets() const;

  class Impl;

 private:
  explicit Bootstrap(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tsr::runtime
