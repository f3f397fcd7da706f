// embedding (a row gather), embedding_dense_backward (a row scatter-add) and
// embedding_renorm (max_norm rescaling of the referenced rows).
#include <cmath>

#include "lowering/core/index_util.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): out = weight[indices].
// padding_idx only affects the backward.
std::vector<Value> lower_embedding(Ctx& c) {
  const Value& weight = c.tensor("weight");
  const Value& indices = c.tensor("indices");
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
  const Value& grad_out = c.tensor("grad_output");
  const int64_t num_weights = c.int_arg("num_weights");
  const int64_t padding_idx = c.int_arg("padding_idx");
  const bool scale = c.bool_arg("scale_grad_by_freq");
  const int64_t n = c.tensor("indices").type.numel();
  const int64_t dim = out.shape.size() > 1 ? out.shape[1] : 1;
  Value ind = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("indices"), DType::I64), {n});
  Value grad = hlo::reshape(c.b, hlo::convert(c.b, grad_out, out.dtype), {n, dim});
  ir::Type rows{out.dtype, {n, dim}};

  DType opmath = compute_dtype(out.dtype);
  if (scale) {
    // counts[k] = occurrences of k; each row is scaled by 1 / counts[indices[i]] (the CPU
    // kernel's `add_(grad[i], 1.0 / count)`, computed in opmath).
    Value ones = hlo::full(c.b, ir::Type{DType::I64, {n}}, 1);
    Value counts = idx::scatter_along(c.b, hlo::full(c.b, ir::Type{DType::I64, {num_weights}}, 0), 0, ind,
                                      ones, hlo::Combiner::Add);
    idx::GatherDims d;
    d.collapsed_slice_dims = {0};
    d.start_index_map = {0};
    d.index_vector_dim = 1;
    d.slice_sizes = {1};
    Value per_row = idx::gather(c.b, counts, hlo::reshape(c.b, ind, {n, 1}), d);
    Value recip = hlo::div(c.b, hlo::full(c.b, ir::Type{opmath, {n}}, 1), hlo::convert(c.b, per_row, opmath));
    Value g =
        hlo::mul(c.b, hlo::convert(c.b, grad, opmath), hlo::broadcast_in_dim(c.b, recip, {n, dim}, {0}));
    grad = hlo::convert(c.b, g, out.dtype);
  }
  // Rows of the padding index contribute nothing.
  Value is_pad = hlo::compare(c.b, ind, hlo::full(c.b, ind.type, static_cast<double>(padding_idx)), "EQ");
  grad = hlo::select(c.b, hlo::broadcast_in_dim(c.b, is_pad, {n, dim}, {0}), hlo::full(c.b, rows, 0), grad);
  Value zeros = hlo::full(c.b, ir::Type{out.dtype, {num_weights, dim}}, 0);
  Value r = idx::scatter_along(c.b, zeros, 0, ind, grad, idx::add_op(out.dtype));
  return {hlo::reshape(c.b, r, out.shape)};
}

// embedding_renorm(self, indices, max_norm, norm_type): every row referenced by `indices` whose
// p-norm exceeds max_norm is scaled by max_norm / (norm + 1e-7), as the CPU kernel does (the
// norm and scale computed in opmath). The in-place embedding_renorm_ reuses this lowering.
std::vector<Value> lower_embedding_renorm(Ctx& c) {
  const Value& self = c.tensor("self");
  const double max_norm = c.arg("max_norm").d;
  const double p = c.arg("norm_type").d;
  const int64_t rows = self.shape()[0];
  const int64_t dim = self.type.numel() / (rows > 0 ? rows : 1);
  const int64_t n = c.tensor("indices").type.numel();
  idx::require_in_range(c, c.tensor("indices"), rows, false, "index out of range in self");
  DType opmath = compute_dtype(self.dtype());
  Value x = hlo::convert(c.b, hlo::reshape(c.b, self, {rows, dim}), opmath);
  Value a = hlo::abs(c.b, x);
  Value zero = hlo::constant(c.b, opmath, 0);
  Value norm;
  if (std::isinf(p)) {
    norm = hlo::reduce(c.b, a, zero, {1}, hlo::Combiner::Max);
  } else if (p == 1) {
    norm = hlo::reduce(c.b, a, zero, {1}, hlo::Combiner::Add);
  } else if (p == 2) {
    norm = hlo::sqrt(c.b, hlo::reduce(c.b, hlo::mul(c.b, a, a), zero, {1}, hlo::Combiner::Add));
  } else {
    Value pw = hlo::power(c.b, a, hlo::full(c.b, a.type, p));
    Value s = hlo::reduce(c.b, pw, zero, {1}, hlo::Combiner::Add);
    norm = hlo::power(c.b, s, hlo::full(c.b, s.type, 1.0 / p));
  }
  // Which rows are referenced at all.
  Value ind = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("indices"), DType::I64), {n});
  Value hit = idx::scatter_along(c.b, hlo::full(c.b, ir::Type{DType::I64, {rows}}, 0), 0, ind,
                                 hlo::full(c.b, ir::Type{DType::I64, {n}}, 1), hlo::Combiner::Max);
  Value over = hlo::and_(c.b, hlo::compare(c.b, hit, hlo::full(c.b, hit.type, 0), "GT"),
                         hlo::compare(c.b, norm, hlo::full(c.b, norm.type, max_norm), "GT"));
  Value factor = hlo::div(c.b, hlo::full(c.b, norm.type, max_norm),
                          hlo::add(c.b, norm, hlo::full(c.b, norm.type, 1e-7)));
  factor = hlo::select(c.b, over, factor, hlo::full(c.b, norm.type, 1));
  Value y = hlo::mul(c.b, x, hlo::broadcast_in_dim(c.b, factor, {rows, dim}, {0}));
  return {hlo::reshape(c.b, hlo::convert(c.b, y, self.dtype()), self.shape())};
}

}  // namespace

TPU_LOWERING("aten::embedding", lower_embedding, reads({"weight", "indices"}));
TPU_LOWERING("aten::embedding_dense_backward", lower_embedding_dense_backward,
             reads({"grad_output", "indices", "num_weights", "padding_idx", "scale_grad_by_freq"}));
TPU_LOWERING("aten::embedding_renorm", lower_embedding_renorm,
             reads({"self", "indices"}, {"max_norm", "norm_type"}));

// Padded execution: padded index positions look up row 0, and add nothing to it backward.
TPU_PADDED("aten::embedding", masked({{"indices", Neutral::Zero}}));
TPU_PADDED("aten::embedding_dense_backward",
           masked({{"grad_output", Neutral::Zero}, {"indices", Neutral::Zero}}));

}  // namespace tpu::lowering
