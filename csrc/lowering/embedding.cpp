// embedding (a row gather) and embedding_dense_backward (a row scatter-add).
#include "lowering/index_util.h"
#include "lowering/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): out = weight[indices].
// padding_idx only affects the backward.
std::vector<Value> lower_embedding(Ctx& c) {
  const Value& weight = c.tensor(0);
  const Value& indices = c.tensor(1);
  idx::require_in_range(c, indices, weight.shape()[0], false, "index out of range in self");
  Value ind = hlo::convert(c.b, indices, DType::I64);
  idx::GatherDims d;
  for (int i = 1; i < weight.rank(); ++i) d.offset_dims.push_back(indices.rank() + i - 1);
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = indices.rank();  // the index vector is implicit (one index per entry)
  d.slice_sizes = weight.shape();
  d.slice_sizes[0] = 1;
  return {hlo::reshape(c.b, idx::gather(c.b, weight, ind, d), c.out().shape)};
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
// grad_weight[k] = sum over i with indices[i] == k != padding_idx of grad[i] (divided by the
// number of occurrences of k when scale_grad_by_freq). The CPU kernel adds rows in the grad
// dtype, so the scatter combines in that dtype too.
std::vector<Value> lower_embedding_dense_backward(Ctx& c) {
  const ir::Type& out = c.out();
  const Value& grad_out = c.tensor(0);
  const int64_t num_weights = c.int_arg(2);
  const int64_t padding_idx = c.int_arg(3);
  const bool scale = c.bool_arg(4);
  const int64_t n = c.tensor(1).type.numel();
  const int64_t dim = out.shape.size() > 1 ? out.shape[1] : 1;
  Value ind = hlo::reshape(c.b, hlo::convert(c.b, c.tensor(1), DType::I64), {n});
  Value grad = hlo::reshape(c.b, hlo::convert(c.b, grad_out, out.dtype), {n, dim});
  ir::Type rows{out.dtype, {n, dim}};

  DType opmath = out.dtype == DType::F16 || out.dtype == DType::BF16 ? DType::F32 : out.dtype;
  if (scale) {
    // counts[k] = occurrences of k; each row is scaled by 1 / counts[indices[i]] (the CPU
    // kernel's `add_(grad[i], 1.0 / count)`, computed in opmath).
    Value ones = hlo::full(c.b, ir::Type{DType::I64, {n}}, 1);
    Value counts = idx::scatter_along(c.b, hlo::full(c.b, ir::Type{DType::I64, {num_weights}}, 0),
                                      0, ind, ones, "stablehlo.add");
    idx::GatherDims d;
    d.collapsed_slice_dims = {0};
    d.start_index_map = {0};
    d.index_vector_dim = 1;
    d.slice_sizes = {1};
    Value per_row = idx::gather(c.b, counts, hlo::reshape(c.b, ind, {n, 1}), d);
    Value recip = hlo::div(c.b, hlo::full(c.b, ir::Type{opmath, {n}}, 1),
                           hlo::convert(c.b, per_row, opmath));
    Value g = hlo::mul(c.b, hlo::convert(c.b, grad, opmath),
                       hlo::broadcast_in_dim(c.b, recip, {n, dim}, {0}));
    grad = hlo::convert(c.b, g, out.dtype);
  }
  // Rows of the padding index contribute nothing.
  Value is_pad = hlo::compare(c.b, ind, hlo::full(c.b, ind.type, static_cast<double>(padding_idx)), "EQ");
  grad = hlo::select(c.b, hlo::broadcast_in_dim(c.b, is_pad, {n, dim}, {0}), hlo::full(c.b, rows, 0), grad);
  Value zeros = hlo::full(c.b, ir::Type{out.dtype, {num_weights, dim}}, 0);
  Value r = idx::scatter_along(c.b, zeros, 0, ind, grad, idx::add_op(out.dtype));
  return {hlo::reshape(c.b, r, out.shape)};
}

}  // namespace

TPU_LOWERING("aten::embedding", lower_embedding);
TPU_LOWERING("aten::embedding_dense_backward", lower_embedding_dense_backward);

}  // namespace tpu::lowering
