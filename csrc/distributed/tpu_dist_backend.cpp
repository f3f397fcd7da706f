#include "distributed/tpu_dist_backend.h"

#include <ATen/core/ivalue.h>

#include "distributed/host_staging.h"

namespace tpu::distributed {

namespace {

void require_tpu(const at::Tensor& t, Collective c) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "tpu_dist: ", collective_name(c),
              " expects tensors on a tpu device, but got a tensor on ", t.device(),
              " (a process group created with backend=\"cpu:gloo,tpu:tpu_dist\" sends CPU tensors to Gloo)");
  TORCH_CHECK(!t.is_sparse(), "tpu_dist: ", collective_name(c), " does not support sparse tensors");
}

void require_tpu(const std::vector<at::Tensor>& ts, Collective c) {
  for (const at::Tensor& t : ts) require_tpu(t, c);
}

int64_t total_numel(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const at::Tensor& t : ts) n += t.numel();
  return n;
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

// Gloo has no PREMUL_SUM: the staged inputs are scaled by the factor, then summed.
c10d::ReduceOp host_reduce_op(const c10d::ReduceOp& op, const std::vector<at::Tensor>& staged) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return op;
  const auto* factor = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(factor != nullptr, "tpu_dist: PREMUL_SUM needs a factor");
  for (const at::Tensor& t : staged) {
    if (factor->tensor_factor.defined()) {
      t.mul_(factor->tensor_factor.to(at::kCPU));
    } else {
      t.mul_(factor->double_factor);
    }
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

std::vector<at::Tensor> hosts_like(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : ts) out.push_back(host_like(t, t.scalar_type()));
  return out;
}

std::vector<at::Tensor> bytes_of(const std::vector<at::Tensor>& host) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : host) out.push_back(bytes(t));
  return out;
}

// Dim 0 kept (all_to_all splits count rows), each row seen as its bytes.
at::Tensor rows_as_bytes(const at::Tensor& host) {
  int64_t rows = host.dim() == 0 ? 1 : host.size(0);
  int64_t row_numel = rows == 0 ? 0 : host.numel() / rows;
  return host.reshape({rows, row_numel}).view(at::kByte);
}

// A Work that is already complete; its future holds the collective's results, as DDP's comm hooks
// and the functional collectives expect.
c10::intrusive_ptr<c10d::Work> completed(const std::vector<at::Tensor>& results) {
  std::vector<c10::Device> devices;
  for (const at::Tensor& t : results) {
    if (std::find(devices.begin(), devices.end(), t.device()) == devices.end()) devices.push_back(t.device());
  }
  auto future =
      c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()), devices);
  future->markCompleted(c10::IValue(results));
  return c10d::Work::create_from_future(future);
}

// A receive completes when waited for: the host receive is posted at the call (so a peer's send
// can proceed whatever order the ranks use), the copy into the tpu tensor happens in wait().
class RecvWork final : public c10d::Work {
 public:
  RecvWork(c10::intrusive_ptr<c10d::Work> host_work, std::vector<at::Tensor> host,
           std::vector<at::Tensor> dst)
      : c10d::Work(-1, c10d::OpType::RECV),
        host_work_(std::move(host_work)),
        host_(std::move(host)),
        dst_(std::move(dst)) {}

  bool isCompleted() override { return done_; }
  bool isSuccess() const override { return done_; }
  int sourceRank() const override { return host_work_->sourceRank(); }
  bool wait(std::chrono::milliseconds timeout) override {
    if (done_) return true;
    try {
      host_work_->wait(timeout);
    } catch (const std::exception& e) {
      transport_failed(Collective::Recv, e);
    }
    copy_back(dst_, host_);
    done_ = true;
    return true;
  }

 private:
  c10::intrusive_ptr<c10d::Work> host_work_;
  std::vector<at::Tensor> host_, dst_;
  bool done_ = false;
};

}  // namespace

TpuDistBackend::TpuDistBackend(c10::intrusive_ptr<c10d::Backend> host, int rank, int size)
    : c10d::Backend(rank, size), host_(std::move(host)) {}

CollectiveDescription TpuDistBackend::describe(Collective c, const std::vector<at::Tensor>& tensors) const {
  require_tpu(tensors, c);
  CollectiveDescription d;
  d.collective = c;
  if (!tensors.empty()) d.dtype = static_cast<int64_t>(tensors[0].scalar_type());
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "tpu_dist: ", collective_name(c),
                " expects tensors of one dtype, but got ", tensors[0].scalar_type(), " and ",
                t.scalar_type());
  }
  d.numel = total_numel(tensors);
  return d;
}

template <class Body>
c10::intrusive_ptr<c10d::Work> TpuDistBackend::run(const CollectiveDescription& description,
                                                   std::vector<at::Tensor> results, Body body) {
  // The description exchange runs while the inputs are staged: `ready` waits for it and checks.
  PendingCheck check = start_check(*host_, description);
  try {
    body([&] { finish_check(check); });
  } catch (const TpuDistError&) {
    throw;  // a mismatch found by the check, or a failure it already named
  } catch (const std::exception& e) {
    transport_failed(description.collective, e);
  }
  return completed(results);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                         const c10d::BroadcastOptions& opts) {
  auto d = describe(Collective::Broadcast, tensors);
  d.root = opts.rootRank;
  bool root = getRank() == opts.rootRank;
  return run(d, tensors, [&](const auto& ready) {
    auto host = root ? to_host(tensors, tensors[0].scalar_type()) : hosts_like(tensors);
    auto wire = bytes_of(host);
    ready();
    host_->broadcast(wire, opts)->wait();
    if (!root) copy_back(tensors, host);
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::AllreduceOptions& opts) {
  auto d = describe(Collective::AllReduce, tensors);
  d.reduce_op = opts.reduceOp.op_;
  return run(d, tensors, [&](const auto& ready) {
    auto host = to_host(tensors, reduction_staging_type(tensors[0].scalar_type()));
    c10d::AllreduceOptions host_opts = opts;
    host_opts.reduceOp = host_reduce_op(opts.reduceOp, host);
    ready();
    host_->allreduce(host, host_opts)->wait();
    copy_back(tensors, host);
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  for (at::Tensor& t : tensors) {
    std::vector<at::Tensor> one{t};
    allreduce(one, opts);
  }
  return completed(tensors);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::reduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::ReduceOptions& opts) {
  auto d = describe(Collective::Reduce, tensors);
  d.reduce_op = opts.reduceOp.op_;
  d.root = opts.rootRank;
  return run(d, tensors, [&](const auto& ready) {
    auto host = to_host(tensors, reduction_staging_type(tensors[0].scalar_type()));
    c10d::ReduceOptions host_opts = opts;
    host_opts.reduceOp = host_reduce_op(opts.reduceOp, host);
    ready();
    host_->reduce(host, host_opts)->wait();
    // Gloo may use a non-root rank's buffer as scratch; copying back everywhere keeps the tpu
    // tensors identical to what Gloo leaves in CPU tensors.
    copy_back(tensors, host);
  });
}

template <class HostCall>
c10::intrusive_ptr<c10d::Work> TpuDistBackend::collect(const CollectiveDescription& description,
                                                       std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs, HostCall host_call) {
  auto results = flatten(outputs);
  require_tpu(results, description.collective);
  return run(description, results, [&](const auto& ready) {
    auto wire_in = bytes_of(to_host(inputs, inputs[0].scalar_type()));
    std::vector<std::vector<at::Tensor>> host_out, wire_out;
    for (const auto& list : outputs) {
      host_out.push_back(hosts_like(list));
      wire_out.push_back(bytes_of(host_out.back()));
    }
    ready();
    host_call(wire_out, wire_in)->wait();
    copy_back(results, flatten(host_out));
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::AllgatherOptions& opts) {
  return collect(describe(Collective::AllGather, inputs), outputs, inputs,
                 [&](auto& out, auto& in) { return host_->allgather(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                               const c10d::AllgatherOptions& opts) {
  auto d = describe(Collective::AllGather, {input});
  require_tpu(output, Collective::AllGather);
  TORCH_CHECK(output.numel() == input.numel() * getSize(),
              "tpu_dist: all_gather_into_tensor: the output has ", output.numel(), " elements, but ",
              getSize(), " ranks x ", input.numel(), " were expected");
  return run(d, {output}, [&](const auto& ready) {
    at::Tensor host_out = host_like(output, output.scalar_type());
    at::Tensor wire_out = bytes(host_out), wire_in = to_host_bytes(input);
    ready();
    host_->_allgather_base(wire_out, wire_in, opts)->wait();
    copy_back({output}, {host_out});
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(),
              "tpu_dist: all_gather_coalesced expects one output list per input");
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<std::vector<at::Tensor>> out{outputs[i]};
    std::vector<at::Tensor> in{inputs[i]};
    allgather(out, in, opts);
  }
  return completed(flatten(outputs));
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(),
              "tpu_dist: all_gather_into_tensor_coalesced expects one output per input");
  for (size_t i = 0; i < inputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
  return completed(outputs);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::GatherOptions& opts) {
  auto d = describe(Collective::Gather, inputs);
  d.root = opts.rootRank;
  return collect(d, outputs, inputs, [&](auto& out, auto& in) { return host_->gather(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::scatter(std::vector<at::Tensor>& outputs,
                                                       std::vector<std::vector<at::Tensor>>& inputs,
                                                       const c10d::ScatterOptions& opts) {
  auto d = describe(Collective::Scatter, outputs);
  d.root = opts.rootRank;
  require_tpu(flatten(inputs), Collective::Scatter);
  return run(d, outputs, [&](const auto& ready) {
    auto host_out = hosts_like(outputs);
    auto wire_out = bytes_of(host_out);
    std::vector<std::vector<at::Tensor>> wire_in;
    for (const auto& list : inputs) wire_in.push_back(bytes_of(to_host(list, outputs[0].scalar_type())));
    ready();
    host_->scatter(wire_out, wire_in, opts)->wait();
    copy_back(outputs, host_out);
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                              std::vector<std::vector<at::Tensor>>& inputs,
                                                              const c10d::ReduceScatterOptions& opts) {
  auto d = describe(Collective::ReduceScatter, outputs);
  d.reduce_op = opts.reduceOp.op_;
  require_tpu(flatten(inputs), Collective::ReduceScatter);
  return run(d, outputs, [&](const auto& ready) {
    at::ScalarType staged = reduction_staging_type(outputs[0].scalar_type());
    std::vector<at::Tensor> host_out;
    for (const at::Tensor& t : outputs) host_out.push_back(host_like(t, staged));
    std::vector<std::vector<at::Tensor>> host_in;
    c10d::ReduceScatterOptions host_opts = opts;
    for (const auto& list : inputs) {
      host_in.push_back(to_host(list, staged));
      host_opts.reduceOp = host_reduce_op(opts.reduceOp, host_in.back());
    }
    ready();
    host_->reduce_scatter(host_out, host_in, host_opts)->wait();
    copy_back(outputs, host_out);
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                    const c10d::ReduceScatterOptions& opts) {
  auto d = describe(Collective::ReduceScatter, {output});
  d.reduce_op = opts.reduceOp.op_;
  require_tpu(input, Collective::ReduceScatter);
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "tpu_dist: reduce_scatter_tensor: the input has ",
              input.numel(), " elements, but ", getSize(), " ranks x ", output.numel(), " were expected");
  return run(d, {output}, [&](const auto& ready) {
    at::ScalarType staged = reduction_staging_type(output.scalar_type());
    at::Tensor host_out = host_like(output, staged);
    at::Tensor host_in = to_host(input, staged);
    c10d::ReduceScatterOptions host_opts = opts;
    host_opts.reduceOp = host_reduce_op(opts.reduceOp, {host_in});
    ready();
    host_->_reduce_scatter_base(host_out, host_in, host_opts)->wait();
    copy_back({output}, {host_out});
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(),
              "tpu_dist: reduce_scatter_tensor_coalesced expects one output per input");
  for (size_t i = 0; i < inputs.size(); ++i) _reduce_scatter_base(outputs[i], inputs[i], opts);
  return completed(outputs);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                             std::vector<int64_t>& output_split_sizes,
                                                             std::vector<int64_t>& input_split_sizes,
                                                             const c10d::AllToAllOptions& opts) {
  auto d = describe(Collective::AllToAll, {input});
  require_tpu(output, Collective::AllToAll);
  auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits) {
    if (!splits.empty()) return splits;
    int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    TORCH_CHECK(rows % getSize() == 0, "tpu_dist: all_to_all_single: dimension 0 (", rows,
                ") is not divisible by the group size ", getSize(), " and no split sizes were given");
    return std::vector<int64_t>(getSize(), rows / getSize());
  };
  d.send_counts = counts(input, input_split_sizes);
  d.recv_counts = counts(output, output_split_sizes);
  return run(d, {output}, [&](const auto& ready) {
    at::Tensor host_out = host_like(output, output.scalar_type());
    at::Tensor wire_out = rows_as_bytes(host_out),
               wire_in = rows_as_bytes(to_host(input, input.scalar_type()));
    ready();
    host_->alltoall_base(wire_out, wire_in, output_split_sizes, input_split_sizes, opts)->wait();
    copy_back({output}, {host_out});
  });
}

// Gloo's list all_to_all wants equal sizes; as one byte-wise all_to_all_single with split sizes it
// takes any sizes, as NCCL does.
c10::intrusive_ptr<c10d::Work> TpuDistBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::AllToAllOptions& opts) {
  auto d = describe(Collective::AllToAll, inputs);
  require_tpu(outputs, Collective::AllToAll);
  TORCH_CHECK(outputs.size() == static_cast<size_t>(getSize()) && inputs.size() == outputs.size(),
              "tpu_dist: all_to_all expects one input and one output tensor per rank");
  std::vector<int64_t> send_bytes, recv_bytes;
  for (const at::Tensor& t : inputs) {
    d.send_counts.push_back(t.numel());
    send_bytes.push_back(t.numel() * t.element_size());
  }
  for (const at::Tensor& t : outputs) {
    d.recv_counts.push_back(t.numel());
    recv_bytes.push_back(t.numel() * t.element_size());
  }
  return run(d, outputs, [&](const auto& ready) {
    auto host_out = hosts_like(outputs);
    at::Tensor wire_in = at::cat(bytes_of(to_host(inputs, inputs[0].scalar_type())));
    at::Tensor wire_out = at::cat(bytes_of(host_out));
    // Gloo takes the split sizes by reference and moves them away: give it copies.
    std::vector<int64_t> recv_splits = recv_bytes, send_splits = send_bytes;
    ready();
    host_->alltoall_base(wire_out, wire_in, recv_splits, send_splits, opts)->wait();
    int64_t offset = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      bytes(host_out[i]).copy_(wire_out.narrow(0, offset, recv_bytes[i]));
      offset += recv_bytes[i];
    }
    copy_back(outputs, host_out);
  });
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  require_tpu(tensors, Collective::Send);
  auto wire = bytes_of(to_host(tensors, tensors[0].scalar_type()));
  return host_->send(wire, dst_rank, tag);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  require_tpu(tensors, Collective::Recv);
  auto host = hosts_like(tensors);
  auto wire = bytes_of(host);
  return c10::make_intrusive<RecvWork>(host_->recv(wire, src_rank, tag), host, tensors);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  require_tpu(tensors, Collective::Recv);
  auto host = hosts_like(tensors);
  auto wire = bytes_of(host);
  return c10::make_intrusive<RecvWork>(host_->recvAnysource(wire, tag), host, tensors);
}

c10::intrusive_ptr<c10d::Work> TpuDistBackend::barrier(const c10d::BarrierOptions& opts) {
  CollectiveDescription d;
  d.collective = Collective::Barrier;
  return run(d, {}, [&](const auto& ready) {
    c10d::BarrierOptions host_opts = opts;
    host_opts.device.reset();  // Gloo's barrier moves no tensor
    ready();
    host_->barrier(host_opts)->wait();
  });
}

}  // namespace tpu::distributed
