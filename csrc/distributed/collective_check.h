// Before each collective the ranks exchange a short description of it (which collective, dtype,
// element counts, root, split sizes) and compare. Gloo does not check: a size mismatch makes it
// abort the process ("Received data size doesn't match expected size") or wait for the timeout,
// and a different collective on another rank corrupts the next ones. With the check every rank
// raises the same clear error instead, before anything is sent or written.
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <string>
#include <vector>

namespace tpu::distributed {

enum class Collective : int64_t {
  Broadcast = 1,
  AllReduce,
  Reduce,
  AllGather,
  Gather,
  Scatter,
  ReduceScatter,
  AllToAll,
  Barrier,
  Send,
  Recv,
};
const char* collective_name(Collective c);

struct CollectiveDescription {
  Collective collective;
  int64_t dtype = -1;  // at::ScalarType, -1 when there is no tensor
  int64_t numel = 0;   // elements this rank contributes (or receives, for gather-like outputs)
  int64_t root = -1;
  int64_t reduce_op = -1;
  // all_to_all: elements sent to / received from each rank (empty otherwise)
  std::vector<int64_t> send_counts, recv_counts;
};

// An error already worded for the user ("tpu_dist: ..."); Python sees torch's DistBackendError.
struct TpuDistError : c10::DistBackendError {
  using c10::DistBackendError::DistBackendError;
};

// The exchange of descriptions in flight (started before the inputs are staged).
struct PendingCheck {
  CollectiveDescription mine;
  int64_t rank, world;
  at::Tensor row, all;
  c10::intrusive_ptr<c10d::Work> work;
};
// Starts exchanging `mine` with every rank of `host` (a Gloo backend).
PendingCheck start_check(c10d::Backend& host, const CollectiveDescription& mine);
// Waits for the exchange and raises TpuDistError, naming the ranks and what differs, when the
// collectives cannot match.
void finish_check(PendingCheck& check);

// Raises TpuDistError for a failure of the host transport (a peer that died, a timeout),
// naming the collective that was running.
[[noreturn]] void transport_failed(Collective c, const std::exception& e);

}  // namespace tpu::distributed
