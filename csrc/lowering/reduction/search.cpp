// Searching and counting against a set of values: searchsorted, bucketize, isin, histc, and
// repeat_interleave's positions (a search of the running totals).
//
// searchsorted runs PyTorch's own binary search (the same comparisons, so NaN and ties land where
// CPU puts them), unrolled: the sequence length is static, so ceil(log2(n + 1)) halving steps of
// one gather each find every position at once.
#include <cmath>

#include "lowering/core/elementwise_util.h"
#include "lowering/core/index_util.h"
#include "lowering/core/promotion.h"
#include "lowering/core/reduce_util.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// For each value, the first position p in its row of `seq` with seq[p] >= value (right: > value),
// as CPU's cus_lower_bound / cus_upper_bound. seq is [rows, n], values [rows, m]; i64 [rows, m].
Value binary_search(ir::Builder& b, const Value& seq, const Value& values, bool right) {
  const int64_t n = seq.shape()[1];
  Type index_type{DType::I64, values.shape()};
  Value start = hlo::full(b, index_type, 0), end = hlo::full(b, index_type, static_cast<double>(n));
  if (n == 0) return start;
  Value one = hlo::full(b, index_type, 1), last = hlo::full(b, index_type, static_cast<double>(n - 1));
  for (int64_t width = n; width > 0; width /= 2) {
    Value active = hlo::compare(b, start, end, "LT");
    Value mid = hlo::add(b, start, hlo::shift_right_logical(b, hlo::sub(b, end, start), one));
    Value at = idx::gather_elements(b, seq, hlo::min(b, mid, last), 1);
    // start moves right where !(mid_val >= value) (lower bound) or !(mid_val > value) (upper).
    Value stop = hlo::compare(b, at, values, right ? "GT" : "GE");
    Value go_right = hlo::and_(b, active, hlo::logical_not(b, stop));
    Value go_left = hlo::and_(b, active, stop);
    start = hlo::select(b, go_right, hlo::add(b, mid, one), start);
    end = hlo::select(b, go_left, mid, end);
  }
  return start;
}

// searchsorted(sorted_sequence, self, *, out_int32, right, side, sorter): a 1-d sequence serves
// every value; otherwise the leading dimensions of sequence and values match row by row.
Value search(Ctx& c, const Value& sequence, const Value& raw_values, bool right, const Value* sorter) {
  DType t = promote_types(sequence.dtype(), raw_values.dtype());
  Value seq = hlo::convert(c.b, sequence, t), values = hlo::convert(c.b, raw_values, t);
  const int64_t n = seq.rank() == 0 ? 1 : seq.shape().back();
  if (sorter) seq = idx::gather_elements(c.b, seq, *sorter, seq.rank() - 1);
  Shape out_shape = values.shape();
  if (seq.rank() <= 1) {
    seq = hlo::reshape(c.b, seq, {1, n});
    values = hlo::reshape(c.b, values, {1, values.type.numel()});
  } else {
    const int64_t m = values.shape().back();
    seq = hlo::reshape(c.b, seq, {seq.type.numel() / n, n});
    values = hlo::reshape(c.b, values, {values.type.numel() / std::max<int64_t>(m, 1), m});
  }
  Value pos = binary_search(c.b, seq, values, right);
  return hlo::convert(c.b, hlo::reshape(c.b, pos, out_shape), c.out().dtype);
}

bool side_is_right(const Ctx& c) {
  return c.bool_arg("right") || (c.has("side") && c.arg("side").s == "right");
}

// searchsorted.Tensor / .Scalar(sorted_sequence, self, *, out_int32, right, side, sorter)
std::vector<Value> lower_searchsorted(Ctx& c) {
  Value sorter = c.has("sorter") ? c.tensor("sorter") : Value{};
  return {search(c, c.tensor("sorted_sequence"), c.tensor("self"), side_is_right(c),
                 c.has("sorter") ? &sorter : nullptr)};
}

// bucketize.Tensor / .Scalar(self, boundaries, *, out_int32, right): searchsorted with the
// arguments swapped (right=True puts values equal to a boundary after it).
std::vector<Value> lower_bucketize(Ctx& c) {
  return {search(c, c.tensor("boundaries"), c.tensor("self"), c.bool_arg("right"), nullptr)};
}

// isin(elements, test_elements, *, assume_unique, invert): every element against every test
// element in their result dtype (a Python number does not widen it), as CPU's brute force does.
std::vector<Value> lower_isin(Ctx& c) {
  // isin.Scalar_Tensor calls its scalar `element`, isin.Tensor_Scalar its scalar `test_element`.
  std::string_view first = c.declared_one_of({"elements", "element"});
  std::string_view second = c.declared_one_of({"test_elements", "test_element"});
  DType t = result_type(c, {first, second});
  Value elements = hlo::convert(c.b, c.tensor(first), t), tests = hlo::convert(c.b, c.tensor(second), t);
  const Shape& shape = elements.shape();
  const int64_t m = tests.type.numel();
  Shape pairs = shape;
  pairs.push_back(m);
  std::vector<int64_t> dims;
  for (size_t d = 0; d < shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
  Value e = hlo::broadcast_in_dim(c.b, elements, pairs, dims);
  Value k =
      hlo::broadcast_in_dim(c.b, hlo::reshape(c.b, tests, {m}), pairs, {static_cast<int64_t>(shape.size())});
  Value found = reduce::max(c.b, hlo::compare(c.b, e, k, "EQ"), {static_cast<int64_t>(shape.size())});
  if (c.bool_arg("invert")) found = hlo::logical_not(c.b, found);
  return {found};
}

// histc(self, bins, min, max): CPU's linear-interpolation histogram. The range is [min, max], or
// the data's own extremes when min == max (widened by 1 on each side if those are equal too);
// each element in range goes to bin (x - lo) * bins / (hi - lo), computed in the input dtype, the
// top edge belonging to the last bin; NaN and out-of-range elements are not counted.
std::vector<Value> lower_histc(Ctx& c) {
  const Type& out = c.out();
  const int64_t bins = c.int_arg("bins");
  Value x = hlo::reshape(c.b, c.tensor("self"), {c.tensor("self").type.numel()});
  const DType t = x.dtype();
  Type scalar{DType::F64, {}};
  Value lo = hlo::convert(c.b, c.tensor("min"), DType::F64),
        hi = hlo::convert(c.b, c.tensor("max"), DType::F64);
  if (x.type.numel() > 0) {
    Value same = hlo::compare(c.b, lo, hi, "EQ");
    lo = hlo::select(c.b, same, hlo::convert(c.b, reduce::min(c.b, x, {0}), DType::F64), lo);
    hi = hlo::select(c.b, same, hlo::convert(c.b, reduce::max(c.b, x, {0}), DType::F64), hi);
  }
  Value same = hlo::compare(c.b, lo, hi, "EQ");
  lo = hlo::select(c.b, same, hlo::sub(c.b, lo, hlo::full(c.b, scalar, 1)), lo);
  hi = hlo::select(c.b, same, hlo::add(c.b, hi, hlo::full(c.b, scalar, 1)), hi);
  Value finite = hlo::and_(c.b, hlo::is_finite(c.b, lo), hlo::is_finite(c.b, hi));
  c.require(finite, "torch.histc: range of [min, max] is not finite");
  c.require(hlo::compare(c.b, lo, hi, "LT"), "torch.histc: max must be larger than min");

  Value left = hlo::broadcast_to(c.b, hlo::convert(c.b, lo, t), x.shape());
  Value right = hlo::broadcast_to(c.b, hlo::convert(c.b, hi, t), x.shape());
  Value in_range = hlo::and_(c.b, hlo::compare(c.b, x, left, "GE"), hlo::compare(c.b, x, right, "LE"));
  Value scaled = hlo::mul(c.b, hlo::sub(c.b, x, left), hlo::full(c.b, x.type, static_cast<double>(bins)));
  Value pos = hlo::convert(c.b, hlo::div(c.b, scaled, hlo::sub(c.b, right, left)), DType::I64);
  Type index_type{DType::I64, x.shape()};
  pos = hlo::min(c.b, pos, hlo::full(c.b, index_type, static_cast<double>(bins - 1)));
  // Elements not counted go to an extra bin past the end, cut off afterwards.
  pos = hlo::select(c.b, in_range, pos, hlo::full(c.b, index_type, static_cast<double>(bins)));
  Value hist = hlo::full(c.b, Type{out.dtype, {bins + 1}}, 0);
  hist = idx::scatter_elements(c.b, hist, pos, 0, hlo::full(c.b, Type{out.dtype, x.shape()}, 1),
                               hlo::Combiner::Add);
  return {hlo::slice_dim(c.b, hist, 0, 0, bins)};
}

// torch_tpu::repeat_interleave(repeats) -> the index i at each position j of the result, i.e.
// the number of running totals of repeats <= j (the result length was read on the host).
std::vector<Value> lower_repeat_interleave(Ctx& c) {
  const ir::Type& out = c.out();
  Value repeats = hlo::convert(c.b, c.tensor("repeats"), DType::I64);
  const int64_t n = repeats.shape()[0];
  if (n == 0 || out.numel() == 0) return {hlo::full(c.b, out, 0)};
  Value totals =
      hlo::reduce_window(c.b, {repeats}, {hlo::constant(c.b, DType::I64, 0)}, {n}, {}, {{n - 1, 0}}, {},
                         [](ir::Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                           return {hlo::add(rb, a[0], a[1])};
                         })[0];
  Value positions = hlo::iota(c.b, Type{DType::I64, {1, out.numel()}}, 1);
  Value index = binary_search(c.b, hlo::reshape(c.b, totals, {1, n}), positions, true);
  return {hlo::convert(c.b, hlo::reshape(c.b, index, out.shape), out.dtype)};
}

}  // namespace

TPU_LOWERING("torch_tpu::repeat_interleave", lower_repeat_interleave, reads({"repeats"}));
TPU_LOWERING("aten::searchsorted.Tensor", lower_searchsorted,
             reads({"sorted_sequence", "self", "right", "side", "sorter"}));
TPU_LOWERING("aten::searchsorted.Scalar", lower_searchsorted,
             reads({"sorted_sequence", "self", "right", "side", "sorter"}));
TPU_LOWERING("aten::bucketize.Tensor", lower_bucketize, reads({"self", "boundaries", "right"}));
TPU_LOWERING("aten::bucketize.Scalar", lower_bucketize, reads({"self", "boundaries", "right"}));
TPU_LOWERING("aten::isin.Tensor_Tensor", lower_isin, reads({"elements", "test_elements", "invert"}));
TPU_LOWERING("aten::isin.Tensor_Scalar", lower_isin, reads({"elements", "test_element", "invert"}));
TPU_LOWERING("aten::isin.Scalar_Tensor", lower_isin, reads({"element", "test_elements", "invert"}));
TPU_LOWERING("aten::histc", lower_histc, reads({"self", "bins", "min", "max"}));

// Padded execution: each element is looked up on its own; what it is looked up in must be whole.
TPU_PADDED("aten::isin.Tensor_Tensor", pointwise({"test_elements"}));
TPU_PADDED("aten::isin.Tensor_Scalar", pointwise());
TPU_PADDED("aten::isin.Scalar_Tensor", pointwise({"test_elements"}));
TPU_PADDED("aten::searchsorted.Tensor", pointwise({"sorted_sequence", "sorter"}));
TPU_PADDED("aten::searchsorted.Scalar", pointwise({"sorted_sequence", "sorter"}));
TPU_PADDED("aten::bucketize.Tensor", pointwise({"boundaries"}));

}  // namespace tpu::lowering
