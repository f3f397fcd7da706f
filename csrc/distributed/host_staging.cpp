#include "distributed/host_staging.h"

namespace tpu::distributed {

at::ScalarType reduction_staging_type(at::ScalarType t) {
  switch (t) {
    case at::kShort:
    case at::kUInt16:
      return at::kInt;
    case at::kUInt32:
      return at::kLong;
    default:
      return t;
  }
}

at::Tensor to_host(const at::Tensor& t, at::ScalarType as) {
  return t.to(at::TensorOptions().device(at::kCPU).dtype(as), /*non_blocking=*/false, /*copy=*/false,
              at::MemoryFormat::Contiguous);
}

at::Tensor bytes(const at::Tensor& host) { return host.reshape({-1}).view(at::kByte); }

at::Tensor to_host_bytes(const at::Tensor& t) { return bytes(to_host(t, t.scalar_type())); }

at::Tensor host_like(const at::Tensor& t, at::ScalarType as) {
  return at::empty(t.sizes(), at::TensorOptions().device(at::kCPU).dtype(as));
}

std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& ts, at::ScalarType as) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(to_host(t, as));
  return out;
}

void copy_back(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& host) {
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(host[i]);
}

}  // namespace tpu::distributed
