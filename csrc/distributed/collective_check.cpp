#include "distributed/collective_check.h"

#include <c10/util/Exception.h>

#include <sstream>

namespace tpu::distributed {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::Broadcast:
      return "broadcast";
    case Collective::AllReduce:
      return "all_reduce";
    case Collective::Reduce:
      return "reduce";
    case Collective::AllGather:
      return "all_gather";
    case Collective::Gather:
      return "gather";
    case Collective::Scatter:
      return "scatter";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::AllToAll:
      return "all_to_all";
    case Collective::Barrier:
      return "barrier";
    case Collective::Send:
      return "send";
    case Collective::Recv:
      return "recv";
  }
  return "an unknown collective";
}

namespace {

enum Field : int64_t { kCollective, kDtype, kNumel, kRoot, kReduceOp, kFixedFields };

std::string dtype_name(int64_t dtype) {
  return dtype < 0 ? "no tensor" : c10::toString(static_cast<at::ScalarType>(dtype));
}

[[noreturn]] void fail(const std::string& what) {
  throw TpuDistError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, "tpu_dist: " + what);
}

}  // namespace

void transport_failed(Collective c, const std::exception& e) {
  const auto* error = dynamic_cast<const c10::Error*>(&e);
  fail(std::string(collective_name(c)) + " failed: " + (error ? error->what_without_backtrace() : e.what()));
}

PendingCheck start_check(c10d::Backend& host, const CollectiveDescription& mine) {
  const int64_t world = host.getSize();
  const int64_t width = kFixedFields + 2 * world;
  at::Tensor row = at::zeros({width}, at::kLong);
  int64_t* r = row.data_ptr<int64_t>();
  r[kCollective] = static_cast<int64_t>(mine.collective);
  r[kDtype] = mine.dtype;
  r[kNumel] = mine.numel;
  r[kRoot] = mine.root;
  r[kReduceOp] = mine.reduce_op;
  for (size_t i = 0; i < mine.send_counts.size(); ++i) r[kFixedFields + i] = mine.send_counts[i];
  for (size_t i = 0; i < mine.recv_counts.size(); ++i) r[kFixedFields + world + i] = mine.recv_counts[i];
  PendingCheck check{mine, host.getRank(), world, row, at::empty({world * width}, at::kLong), nullptr};
  try {
    check.work = host._allgather_base(check.all, check.row);
  } catch (const std::exception& e) {
    transport_failed(mine.collective, e);
  }
  return check;
}

void finish_check(PendingCheck& check) {
  const CollectiveDescription& mine = check.mine;
  const int64_t world = check.world;
  const int64_t width = kFixedFields + 2 * world;
  try {
    check.work->wait();
  } catch (const std::exception& e) {
    transport_failed(mine.collective, e);
  }
  const int64_t* a = check.all.data_ptr<int64_t>();
  auto at_rank = [&](int64_t rank, int64_t field) { return a[rank * width + field]; };

  const char* name = collective_name(mine.collective);
  for (int64_t rank = 0; rank < world; ++rank) {
    auto other = static_cast<Collective>(at_rank(rank, kCollective));
    if (other != mine.collective) {
      std::ostringstream msg;
      msg << "ranks called different collectives: rank " << check.rank << " called " << name << ", rank "
          << rank << " called " << collective_name(other);
      fail(msg.str());
    }
  }
  for (int64_t rank = 0; rank < world; ++rank) {
    std::ostringstream msg;
    msg << name << ": rank " << rank << " ";
    // all_to_all's counts may differ by rank; its splits are compared below.
    bool same_numel = mine.collective == Collective::AllToAll || at_rank(rank, kNumel) == at_rank(0, kNumel);
    if (at_rank(rank, kDtype) != at_rank(0, kDtype) || !same_numel) {
      msg << "passed " << at_rank(rank, kNumel) << " elements of " << dtype_name(at_rank(rank, kDtype))
          << ", but rank 0 passed " << at_rank(0, kNumel) << " elements of "
          << dtype_name(at_rank(0, kDtype));
      fail(msg.str());
    }
    if (at_rank(rank, kRoot) != at_rank(0, kRoot)) {
      msg << "used root " << at_rank(rank, kRoot) << ", but rank 0 used root " << at_rank(0, kRoot);
      fail(msg.str());
    }
    if (at_rank(rank, kReduceOp) != at_rank(0, kReduceOp)) {
      msg << "used another reduce op than rank 0";
      fail(msg.str());
    }
  }
  if (mine.collective != Collective::AllToAll) return;
  for (int64_t src = 0; src < world; ++src) {
    for (int64_t dst = 0; dst < world; ++dst) {
      int64_t sent = at_rank(src, kFixedFields + dst);
      int64_t expected = at_rank(dst, kFixedFields + world + src);
      if (sent != expected) {
        std::ostringstream msg;
        msg << name << ": rank " << src << " sends " << sent << " elements to rank " << dst
            << ", which expects " << expected << " from it (input and output split sizes disagree)";
        fail(msg.str());
      }
    }
  }
}

}  // namespace tpu::distributed
