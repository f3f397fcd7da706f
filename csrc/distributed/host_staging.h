// Host staging for the tpu_dist backend: tpu tensors are copied to CPU tensors that torch's
// Gloo backend can send, and results are copied back through the original (possibly strided)
// tpu tensors. Downloads go through the ordinary ATen copy kernel (fused work pending on a tensor
// is materialized first); a write-back into a view goes through it too and reaches its base.
#pragma once
#include <ATen/ATen.h>

#include <vector>

namespace tpu::distributed {

// Gloo's reductions lack some integer types; these are reduced in a wider type instead, which
// gives the same bits after the narrowing copy back (two's-complement wrap-around).
at::ScalarType reduction_staging_type(at::ScalarType t);

// An uninitialised contiguous CPU tensor from a pool of staging buffers. A fresh host allocation
// of more than a few MiB is an mmap whose pages fault in (zeroed) on every collective, which on
// XLA:CPU costs more than the copy itself; the pool keeps recently used buffers (up to 256 MiB,
// least recently used dropped first) and hands one out again once nothing else holds it.
at::Tensor staging_tensor(at::IntArrayRef sizes, at::ScalarType dtype);

// A contiguous CPU copy of `t`, converted to `as`.
at::Tensor to_host(const at::Tensor& t, at::ScalarType as);
// A contiguous CPU copy of `t`, seen as bytes (data movement needs no element type).
at::Tensor to_host_bytes(const at::Tensor& t);
// An uninitialised contiguous CPU tensor shaped like `t`, of type `as`.
at::Tensor host_like(const at::Tensor& t, at::ScalarType as);
// Bytes of a CPU tensor made by host_like/to_host (a flat uint8 view of the same memory).
at::Tensor bytes(const at::Tensor& host);

std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& ts, at::ScalarType as);
// Writes each host result into its tpu tensor (converting to the tensor's dtype). A result that
// covers its tensor's storage keeps the host memory as its device buffer where the plugin can
// (aten::adopt_host_tensor): the host tensors must not be written afterwards.
void copy_back(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& host);

}  // namespace tpu::distributed
