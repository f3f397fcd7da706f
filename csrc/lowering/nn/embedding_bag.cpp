// embedding_bag: per-bag sum/mean/max of gathered weight rows, its dense backward and the
// per_sample_weights backward.
//
// The auxiliary outputs follow the shapes PyTorch's meta kernel gives a non-CPU device (CUDA's
// layout): offset2bag [N] (the bag of each index), bag_size [K] (K = offsets.size(0); entry b
// counts bag b's non-padding indices) and max_indices [bags, D] for mode max (the weight row
// that gave each maximum, -1 for an empty bag) or [0] otherwise. Our backward lowerings read
// exactly these, so forward and backward agree.
#include <cmath>

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/index_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Type;
using ir::Value;

constexpr int64_t kModeSum = 0;
constexpr int64_t kModeMean = 1;
constexpr int64_t kModeMax = 2;

// vec[idx] for a 1-D `vec` and an index tensor of any shape (entries already in range).
Value take(ir::Builder& b, const Value& vec, const Value& idx) {
  idx::GatherDims d;
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = idx.rank();
  d.slice_sizes = {1};
  return idx::gather(b, vec, hlo::convert(b, idx, DType::I64), d);
}

// Rows weight[ind] of a [V, D] weight for 1-D `ind`: [N, D].
Value take_rows(ir::Builder& b, const Value& weight, const Value& ind) {
  idx::GatherDims d;
  d.offset_dims = {1};
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = 1;
  d.slice_sizes = {1, weight.shape()[1]};
  return idx::gather(b, weight, hlo::convert(b, ind, DType::I64), d);
}

Value clamp_index(ir::Builder& b, const Value& i, int64_t size) {
  Value lo = hlo::full(b, i.type, 0);
  Value hi = hlo::full(b, i.type, static_cast<double>(size > 0 ? size - 1 : 0));
  return hlo::min(b, hlo::max(b, i, lo), hi);
}

Value bcast_rows(ir::Builder& b, const Value& v, int64_t d) {
  return hlo::broadcast_in_dim(b, v, {v.shape()[0], d}, {0});
}

// offset2bag[i] = number of offsets[1..K-1] <= i (K = offsets.size(0)): the last bag whose
// start is at or before i (empty bags, i.e. repeated offsets, are skipped as in PyTorch). With
// include_last_offset the indices at or past the final offset land on bag K-1 == num_bags,
// which belongs to no bag (the documented meaning; CPU's slow paths let the last bag run to
// the end of `indices` instead, which only differs when offsets[-1] != indices.size(0)).
// Counted as PyTorch's make_offset2bag does, in n log n: the starts falling on each position
// (a scatter-add; starts at n, past every index, land in a slot that is dropped), then a
// running sum. (Comparing every index with every offset cost n x K: a second for 8192 bags.)
Value offset_to_bag(ir::Builder& b, const Value& offsets, int64_t n, int64_t k) {
  Type nt{DType::I64, {n}};
  if (k <= 1 || n == 0) return hlo::full(b, nt, 0);
  Value starts = clamp_index(b, hlo::slice_dim(b, hlo::convert(b, offsets, DType::I64), 0, 1, k), n + 1);
  Value per_position = idx::scatter_along(b, hlo::full(b, Type{DType::I64, {n + 1}}, 0), 0, starts,
                                          hlo::full(b, starts.type, 1), hlo::Combiner::Add);
  return reduce::running_sum(b, hlo::slice_dim(b, per_position, 0, 0, n), 0);
}

// True where index i is part of some bag and is not the padding index.
Value used_mask(ir::Builder& b, const Value& ind, const Value& bag, int64_t num_bags, int64_t padding_idx) {
  Value in_bag = hlo::compare(b, bag, hlo::full(b, bag.type, static_cast<double>(num_bags)), "LT");
  if (padding_idx < 0) return in_bag;
  Value not_pad = hlo::compare(b, ind, hlo::full(b, ind.type, static_cast<double>(padding_idx)), "NE");
  return hlo::and_(b, in_bag, not_pad);
}

// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
// include_last_offset, padding_idx) -> (output, offset2bag, bag_size, max_indices).
std::vector<Value> lower_embedding_bag(Ctx& c) {
  const Value& weight = c.tensor("weight");
  const int64_t vocab = weight.shape()[0];
  const int64_t dim = weight.shape()[1];
  const int64_t mode = c.int_arg("mode");
  const int64_t padding_idx = c.int_arg("padding_idx");
  const int64_t n = c.tensor("indices").type.numel();
  const int64_t k = c.tensor("offsets").type.numel();
  const int64_t num_bags = c.out(0).shape[0];
  const DType out_dtype = c.out(0).dtype;
  const DType acc = compute_dtype(out_dtype);
  idx::require_in_range(c, c.tensor("indices"), vocab, false, "index out of range in self");

  Value ind = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("indices"), DType::I64), {n});
  Value bag = offset_to_bag(c.b, hlo::reshape(c.b, c.tensor("offsets"), {k}), n, k);
  Value used = used_mask(c.b, ind, bag, num_bags, padding_idx);
  Value bag_c = clamp_index(c.b, bag, num_bags);
  Value rows = hlo::convert(c.b, take_rows(c.b, weight, clamp_index(c.b, ind, vocab)), acc);
  if (c.has("per_sample_weights")) {
    Value psw = hlo::convert(c.b, hlo::reshape(c.b, c.tensor("per_sample_weights"), {n}), acc);
    rows = hlo::mul(c.b, rows, bcast_rows(c.b, psw, dim));
  }
  Value used_rows = bcast_rows(c.b, used, dim);

  // Non-padding entries per bag (bag_size has K entries; those past num_bags stay 0).
  Value counts = idx::scatter_along(c.b, hlo::full(c.b, Type{DType::I64, {k}}, 0), 0, bag_c,
                                    hlo::convert(c.b, used, DType::I64), hlo::Combiner::Add);
  Value counts_b = hlo::slice_dim(c.b, counts, 0, 0, num_bags);
  Value empty = bcast_rows(c.b, hlo::compare(c.b, counts_b, hlo::full(c.b, counts_b.type, 0), "EQ"), dim);
  Type bags_acc{acc, {num_bags, dim}};

  Value out;
  Value max_indices = hlo::full(c.b, c.out(3), -1);
  if (mode == kModeMax) {
    Value lowest = hlo::full(c.b, rows.type, -INFINITY);
    Value cand = hlo::select(c.b, used_rows, rows, lowest);
    Value best =
        idx::scatter_along(c.b, hlo::full(c.b, bags_acc, -INFINITY), 0, bag_c, cand, hlo::Combiner::Max);
    // The first position reaching the maximum names the weight row (PyTorch keeps the first).
    Value best_at = take_rows(c.b, best, bag_c);
    Value hit = hlo::and_(c.b, used_rows, hlo::compare(c.b, cand, best_at, "EQ"));
    Type pos_t{DType::I64, {n, dim}};
    Value pos =
        hlo::select(c.b, hit, hlo::iota(c.b, pos_t, 0), hlo::full(c.b, pos_t, static_cast<double>(n)));
    Value first =
        idx::scatter_along(c.b, hlo::full(c.b, Type{DType::I64, {num_bags, dim}}, static_cast<double>(n)), 0,
                           bag_c, pos, hlo::Combiner::Min);
    Value found = hlo::compare(c.b, first, hlo::full(c.b, first.type, static_cast<double>(n)), "LT");
    Value row = take(c.b, ind, clamp_index(c.b, first, n));
    max_indices =
        hlo::convert(c.b, hlo::select(c.b, found, row, hlo::full(c.b, row.type, -1)), c.out(3).dtype);
    out = hlo::select(c.b, empty, hlo::full(c.b, bags_acc, 0), best);
  } else {
    Value masked = hlo::select(c.b, used_rows, rows, hlo::full(c.b, rows.type, 0));
    out = idx::scatter_along(c.b, hlo::full(c.b, bags_acc, 0), 0, bag_c, masked, hlo::Combiner::Add);
    if (mode == kModeMean) {
      Value denom = hlo::convert(c.b, hlo::max(c.b, counts_b, hlo::full(c.b, counts_b.type, 1)), acc);
      out = hlo::div(c.b, out, bcast_rows(c.b, denom, dim));
    }
  }
  return {hlo::convert(c.b, out, out_dtype), hlo::convert(c.b, bag, c.out(1).dtype),
          hlo::convert(c.b, counts, c.out(2).dtype), max_indices};
}

// Both backward ops: _embedding_bag_backward's `offsets` and `sparse` are not needed here.
std::vector<Value> lower_embedding_bag_backward(Ctx& c) {
  const ir::Type& out = c.out();
  const int64_t num_weights = c.int_arg("num_weights");
  const int64_t mode = c.int_arg("mode");
  const int64_t padding_idx = c.int_arg("padding_idx");
  const bool scale = c.bool_arg("scale_grad_by_freq");
  const Value& grad_v = c.tensor("grad");
  const int64_t num_bags = grad_v.shape()[0];
  const int64_t dim = grad_v.shape()[1];
  const int64_t n = c.tensor("indices").type.numel();
  const DType acc = compute_dtype(out.dtype);
  Value grad = hlo::convert(c.b, grad_v, acc);
  Type table{acc, {num_weights, dim}};

  if (mode == kModeMax) {
    // grad_weight[max_indices[b, d], d] += grad[b, d] for every non-empty bag.
    Value mi = hlo::convert(c.b, c.tensor("maximum_indices"), DType::I64);
    Value found = hlo::compare(c.b, mi, hlo::full(c.b, mi.type, 0), "GE");
    Value g = hlo::select(c.b, found, grad, hlo::full(c.b, grad.type, 0));
    Value r = idx::scatter_elements(c.b, hlo::full(c.b, table, 0), clamp_index(c.b, mi, num_weights), 0, g,
                                    hlo::Combiner::Add);
    return {hlo::convert(c.b, r, out.dtype)};
  }

  Value ind = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("indices"), DType::I64), {n});
  Value bag = hlo::convert(c.b, hlo::reshape(c.b, c.tensor("offset2bag"), {n}), DType::I64);
  Value used = used_mask(c.b, ind, bag, num_bags, padding_idx);
  Value bag_c = clamp_index(c.b, bag, num_bags);
  Value rows = take_rows(c.b, grad, bag_c);
  // Per-index scale: per_sample_weights, 1 / bag size (mean), 1 / frequency of the index.
  Value factor = hlo::full(c.b, Type{acc, {n}}, 1);
  if (c.has("per_sample_weights"))
    factor = hlo::convert(c.b, hlo::reshape(c.b, c.tensor("per_sample_weights"), {n}), acc);
  if (mode == kModeMean) {
    Value size = take(c.b, hlo::convert(c.b, c.tensor("bag_size"), DType::I64), bag_c);
    size = hlo::max(c.b, size, hlo::full(c.b, size.type, 1));
    factor = hlo::div(c.b, factor, hlo::convert(c.b, size, acc));
  }
  Value ind_c = clamp_index(c.b, ind, num_weights);
  if (scale) {
    Value freq = idx::scatter_along(c.b, hlo::full(c.b, Type{DType::I64, {num_weights}}, 0), 0, ind_c,
                                    hlo::full(c.b, Type{DType::I64, {n}}, 1), hlo::Combiner::Add);
    factor = hlo::div(c.b, factor, hlo::convert(c.b, take(c.b, freq, ind_c), acc));
  }
  factor = hlo::select(c.b, used, factor, hlo::full(c.b, factor.type, 0));
  rows = hlo::mul(c.b, rows, bcast_rows(c.b, factor, dim));
  Value r = idx::scatter_along(c.b, hlo::full(c.b, table, 0), 0, ind_c, rows, hlo::Combiner::Add);
  return {hlo::convert(c.b, r, out.dtype)};
}

// _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode,
// padding_idx): d out / d psw[i] = <grad[bag(i)], weight[indices[i]]> (0 for padding).
std::vector<Value> lower_embedding_bag_psw_backward(Ctx& c) {
  const Value& grad_v = c.tensor("grad");
  const Value& weight = c.tensor("weight");
  const int64_t num_bags = grad_v.shape()[0];
  const int64_t n = c.tensor("indices").type.numel();
  const int64_t padding_idx = c.int_arg("padding_idx");
  const DType acc = compute_dtype(c.out().dtype);
  Value ind = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("indices"), DType::I64), {n});
  Value bag = hlo::convert(c.b, hlo::reshape(c.b, c.tensor("offset2bag"), {n}), DType::I64);
  Value used = used_mask(c.b, ind, bag, num_bags, padding_idx);
  Value g = take_rows(c.b, hlo::convert(c.b, grad_v, acc), clamp_index(c.b, bag, num_bags));
  Value w = hlo::convert(c.b, take_rows(c.b, weight, clamp_index(c.b, ind, weight.shape()[0])), acc);
  Value dot = hlo::reduce(c.b, hlo::mul(c.b, g, w), hlo::constant(c.b, acc, 0), {1}, hlo::Combiner::Add);
  dot = hlo::select(c.b, used, dot, hlo::full(c.b, dot.type, 0));
  return {hlo::convert(c.b, dot, c.out().dtype)};
}

}  // namespace

const Signature kEmbeddingBagReads =
    reads({"weight", "indices", "offsets", "mode", "per_sample_weights", "padding_idx"});
const Signature kEmbeddingBagBackwardReads =
    reads({"grad", "indices", "offset2bag", "bag_size", "maximum_indices", "num_weights",
           "scale_grad_by_freq", "mode", "per_sample_weights", "padding_idx"});

TPU_LOWERING("aten::_embedding_bag", lower_embedding_bag, kEmbeddingBagReads);
TPU_LOWERING("aten::_embedding_bag_forward_only", lower_embedding_bag, kEmbeddingBagReads);
TPU_LOWERING("aten::_embedding_bag_backward", lower_embedding_bag_backward, kEmbeddingBagBackwardReads);
TPU_LOWERING("aten::_embedding_bag_dense_backward", lower_embedding_bag_backward, kEmbeddingBagBackwardReads);
TPU_LOWERING("aten::_embedding_bag_per_sample_weights_backward", lower_embedding_bag_psw_backward,
             reads({"grad", "weight", "indices", "offset2bag", "padding_idx"}));

}  // namespace tpu::lowering
