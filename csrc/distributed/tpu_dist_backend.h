// The `tpu_dist` c10d backend: torch.distributed collectives on tpu tensors.
//
// Transport: host staging. Each collective copies its tpu inputs to CPU, runs on torch's own Gloo
// backend (built by the Python creator from the same c10d store) and copies the results back
// through the caller's tensors. This is what every plugin without multi-process collectives
// (XLA:CPU: it ignores PJRT's key-value callbacks) must do; see docs/distributed.md.
//
// Collectives finish before they return (their Work is complete), so they run in program order
// on every rank and a later op on the result needs no wait. Point-to-point receives are the
// exception: they complete at wait(), as in Gloo, so that ranks may post isend/irecv in any order.
#pragma once
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <string>
#include <vector>

#include "distributed/collective_check.h"

namespace tpu::distributed {

class TpuDistBackend final : public c10d::Backend {
 public:
  // `host` is a Gloo backend over the same ranks.
  TpuDistBackend(c10::intrusive_ptr<c10d::Backend> host, int rank, int size);

  const std::string getBackendName() const override { return "tpu_dist"; }
  const c10::intrusive_ptr<c10d::Backend>& host() const { return host_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  // Checks that every rank calls the same collective on matching tensors, then runs `body` and
  // turns a failure of the host transport into an error naming the collective.
  template <class Body>
  c10::intrusive_ptr<c10d::Work> run(const CollectiveDescription& description,
                                     std::vector<at::Tensor> results, Body body);
  // all_gather and gather: the inputs travel as bytes into per-rank output lists; `host_call`
  // runs the Gloo collective on the wire tensors.
  template <class HostCall>
  c10::intrusive_ptr<c10d::Work> collect(const CollectiveDescription& description,
                                         std::vector<std::vector<at::Tensor>>& outputs,
                                         std::vector<at::Tensor>& inputs, HostCall host_call);
  CollectiveDescription describe(Collective c, const std::vector<at::Tensor>& tensors) const;

  c10::intrusive_ptr<c10d::Backend> host_;
};

}  // namespace tpu::distributed
