// segment_reduce (sum/mean/max/min/prod over consecutive segments along `axis`, given by
// lengths or offsets) and its backward.
//
// The data is viewed as [B, S, I] (B: the dimensions before `axis`, I: those after) and the
// result as [B, M, I] for M segments. Every data position s gets its segment seg[b, s]; the
// reduction is a scatter of the data rows into the [B, M, I] result, and the backward gathers
// the result rows back.
#include <cmath>

#include "lowering/core/index_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Type;
using ir::Value;

struct Segments {
  int64_t b = 1, s = 0, i = 1, m = 0;
  Value seg;    // i64 [B, S], clamped into [0, M)
  Value valid;  // i1 [B, S]: the position lies in a segment
  Value count;  // i64 [B, M]: segment lengths
};

// bounds [B, M+1]: segment m covers [bounds[m], bounds[m+1]).
Segments segments(ir::Builder& b, const ir::Shape& data_shape, int64_t axis, const Value& lengths,
                  const Value& offsets) {
  Segments g;
  for (int64_t d = 0; d < axis; ++d) g.b *= data_shape[d];
  g.s = data_shape[axis];
  for (size_t d = axis + 1; d < data_shape.size(); ++d) g.i *= data_shape[d];
  Value bounds;
  if (lengths.valid()) {
    g.m = lengths.shape().back();
    Value len = hlo::reshape(b, hlo::convert(b, lengths, DType::I64), {g.b, g.m});
    // bounds[b, k] = sum_{j < k} len[b, j]
    ir::Shape cube{g.b, g.m + 1, g.m};
    Value j = hlo::iota(b, Type{DType::I64, cube}, 2);
    Value k = hlo::iota(b, Type{DType::I64, cube}, 1);
    Value sel = hlo::select(b, hlo::compare(b, j, k, "LT"), hlo::broadcast_in_dim(b, len, cube, {0, 2}),
                            hlo::full(b, Type{DType::I64, cube}, 0));
    bounds = hlo::reduce(b, sel, hlo::constant(b, DType::I64, 0), {2}, hlo::Combiner::Add);
  } else {
    g.m = offsets.shape().back() - 1;
    bounds = hlo::reshape(b, hlo::convert(b, offsets, DType::I64), {g.b, g.m + 1});
  }
  // cnt[b, s] = #{k : bounds[b, k] <= s}; the segment is cnt - 1 when 1 <= cnt <= M.
  ir::Shape cube{g.b, g.s, g.m + 1};
  Value pos = hlo::iota(b, Type{DType::I64, cube}, 1);
  Value le = hlo::compare(b, hlo::broadcast_in_dim(b, bounds, cube, {0, 2}), pos, "LE");
  Value cnt = hlo::reduce(b, hlo::convert(b, le, DType::I64), hlo::constant(b, DType::I64, 0), {2},
                          hlo::Combiner::Add);
  Type bs{DType::I64, {g.b, g.s}};
  g.valid = hlo::and_(b, hlo::compare(b, cnt, hlo::full(b, bs, 1), "GE"),
                      hlo::compare(b, cnt, hlo::full(b, bs, static_cast<double>(g.m)), "LE"));
  Value seg = hlo::sub(b, cnt, hlo::full(b, bs, 1));
  g.seg = hlo::min(b, hlo::max(b, seg, hlo::full(b, bs, 0)),
                   hlo::full(b, bs, static_cast<double>(g.m > 0 ? g.m - 1 : 0)));
  Value hi = hlo::slice_dim(b, bounds, 1, 1, g.m + 1);
  Value lo = hlo::slice_dim(b, bounds, 1, 0, g.m);
  g.count = hlo::sub(b, hi, lo);
  return g;
}

// [B, S, 2] coordinates (b, seg[b, s]).
Value coords(ir::Builder& b, const Segments& g) {
  Type one{DType::I64, {g.b, g.s, 1}};
  return hlo::concatenate(b, {hlo::iota(b, one, 0), hlo::reshape(b, g.seg, {g.b, g.s, 1})}, 2);
}

// Scatter [B, S, I] updates into [B, M, I] starting from `init`, combining with `op`.
Value scatter_segments(ir::Builder& b, const Segments& g, const Value& init, const Value& updates,
                       hlo::Combiner op) {
  if (g.s == 0 || g.m == 0) return init;
  idx::ScatterDims d;
  d.update_window_dims = {2};
  d.inserted_window_dims = {0, 1};
  d.scatter_dims_to_operand_dims = {0, 1};
  d.index_vector_dim = 2;
  return idx::scatter(b, init, coords(b, g), updates, d, op);
}

// The [B, M, I] (or [B, M]) per-segment `v` at each data position: [B, S, I] (or [B, S]).
Value gather_segments(ir::Builder& b, const Segments& g, const Value& v) {
  const bool rows = v.rank() == 3;
  idx::GatherDims d;
  if (rows) d.offset_dims = {2};
  d.collapsed_slice_dims = {0, 1};
  d.start_index_map = {0, 1};
  d.index_vector_dim = 2;
  d.slice_sizes = rows ? std::vector<int64_t>{1, 1, g.i} : std::vector<int64_t>{1, 1};
  if (g.m == 0)
    return hlo::full(b, Type{v.dtype(), rows ? ir::Shape{g.b, g.s, g.i} : ir::Shape{g.b, g.s}}, 0);
  return idx::gather(b, v, coords(b, g), d);
}

double identity_of(const std::string& reduce) {
  if (reduce == "max") return -INFINITY;
  if (reduce == "min") return INFINITY;
  if (reduce == "prod") return 1;
  return 0;
}

hlo::Combiner combine_of(const std::string& reduce) {
  if (reduce == "max") return hlo::Combiner::Max;
  if (reduce == "min") return hlo::Combiner::Min;
  if (reduce == "prod") return hlo::Combiner::Mul;
  return hlo::Combiner::Add;
}

Value bcast_inner(ir::Builder& b, const Value& v, int64_t inner) {
  ir::Shape s = v.shape();
  s.push_back(inner);
  return hlo::broadcast_in_dim(b, v, s, {0, 1});
}

// The forward on [B, S, I] data in opmath: the [B, M, I] result.
Value reduce_segments(ir::Builder& b, const Segments& g, const Value& x, const std::string& reduce,
                      bool has_initial, double initial) {
  const DType t = x.dtype();
  Type out_t{t, {g.b, g.m, g.i}};
  const double start = has_initial ? initial : identity_of(reduce);
  Value valid = bcast_inner(b, g.valid, g.i);
  Value upd = hlo::select(b, valid, x, hlo::full(b, x.type, identity_of(reduce)));
  Value r = scatter_segments(b, g, hlo::full(b, out_t, start), upd, combine_of(reduce));
  if (reduce == "mean") {
    // (initial + sum) / length; an empty segment is `initial`, or 0/0 = NaN without one.
    Value cnt = bcast_inner(b, hlo::convert(b, g.count, t), g.i);
    Value empty = hlo::compare(b, cnt, hlo::full(b, cnt.type, 0), "EQ");
    Value mean = hlo::div(b, r, cnt);
    r = has_initial ? hlo::select(b, empty, hlo::full(b, out_t, initial), mean) : mean;
  }
  return r;
}

// The segments of `data` along `axis` (from lengths or offsets), and data as [b, s, i] in the
// accumulation dtype: the CPU kernel accumulates in the output dtype itself (bf16 sums round at
// every step).
struct SegmentedData {
  Segments g;
  Value x;
  DType acc;
};

SegmentedData segmented_data(Ctx& c) {
  const Value& data = c.tensor("data");
  const int64_t axis = hlo::wrap_dim(c.int_arg("axis"), data.rank());
  Segments g = segments(c.b, data.shape(), axis, c.has("lengths") ? c.tensor("lengths") : Value(),
                        c.has("offsets") ? c.tensor("offsets") : Value());
  const DType acc = c.out().dtype;
  return {g, hlo::convert(c.b, hlo::reshape(c.b, data, {g.b, g.s, g.i}), acc), acc};
}

// segment_reduce(data, reduce, *, lengths, indices, offsets, axis, unsafe, initial)
std::vector<Value> lower_segment_reduce(Ctx& c) {
  const std::string& reduce = c.arg("reduce").s;
  auto [g, x, acc] = segmented_data(c);
  Value r = reduce_segments(c.b, g, x, reduce, c.has("initial"), c.has("initial") ? c.arg("initial").d : 0);
  return {hlo::reshape(c.b, hlo::convert(c.b, r, c.out().dtype), c.out().shape)};
}

// _segment_reduce_backward(grad, output, data, reduce, *, lengths, offsets, axis, initial)
std::vector<Value> lower_segment_reduce_backward(Ctx& c) {
  const std::string& reduce = c.arg("reduce").s;
  auto [g, x, acc] = segmented_data(c);
  Value gy = hlo::convert(c.b, hlo::reshape(c.b, c.tensor("grad"), {g.b, g.m, g.i}), acc);
  Value y = hlo::convert(c.b, hlo::reshape(c.b, c.tensor("output"), {g.b, g.m, g.i}), acc);
  Value valid = bcast_inner(c.b, g.valid, g.i);
  Value zeros = hlo::full(c.b, x.type, 0);
  Value gx = gather_segments(c.b, g, gy);
  Type seg_t{acc, {g.b, g.m, g.i}};

  Value dx;
  if (reduce == "sum") {
    dx = gx;
  } else if (reduce == "mean") {
    Value cnt = gather_segments(c.b, g, g.count);
    cnt = hlo::max(c.b, cnt, hlo::full(c.b, cnt.type, 1));
    dx = hlo::div(c.b, gx, bcast_inner(c.b, hlo::convert(c.b, cnt, acc), g.i));
  } else if (reduce == "max" || reduce == "min") {
    // The gradient is shared equally by the elements equal to the result.
    Value hit = hlo::and_(c.b, valid, hlo::compare(c.b, x, gather_segments(c.b, g, y), "EQ"));
    Value ones = hlo::select(c.b, hit, hlo::full(c.b, x.type, 1), zeros);
    Value ties = scatter_segments(c.b, g, hlo::full(c.b, seg_t, 0), ones, hlo::Combiner::Add);
    Value share = gather_segments(c.b, g, ties);
    share = hlo::max(c.b, share, hlo::full(c.b, share.type, 1));
    dx = hlo::select(c.b, hit, hlo::div(c.b, gx, share), zeros);
  } else {  // prod
    // Nonzero x: grad * y / x. A zero x: grad times the product of the others, which is the
    // product of the nonzero rest (with initial) when x is the segment's only zero, else 0.
    const double start = c.has("initial") ? c.arg("initial").d : 1.0;
    Value is_zero = hlo::compare(c.b, x, zeros, "EQ");
    Value nz =
        hlo::select(c.b, hlo::and_(c.b, valid, hlo::logical_not(c.b, is_zero)), x, hlo::full(c.b, x.type, 1));
    Value prod_nz = scatter_segments(c.b, g, hlo::full(c.b, seg_t, start), nz, hlo::Combiner::Mul);
    Value zero_one = hlo::select(c.b, hlo::and_(c.b, valid, is_zero), hlo::full(c.b, x.type, 1), zeros);
    Value zcount = scatter_segments(c.b, g, hlo::full(c.b, seg_t, 0), zero_one, hlo::Combiner::Add);
    Value only_zero = hlo::compare(c.b, gather_segments(c.b, g, zcount), hlo::full(c.b, x.type, 1), "EQ");
    Value at_zero = hlo::select(c.b, only_zero, hlo::mul(c.b, gx, gather_segments(c.b, g, prod_nz)), zeros);
    Value safe_x = hlo::select(c.b, is_zero, hlo::full(c.b, x.type, 1), x);
    Value at_nonzero = hlo::div(c.b, hlo::mul(c.b, gx, gather_segments(c.b, g, y)), safe_x);
    dx = hlo::select(c.b, is_zero, at_zero, at_nonzero);
  }
  dx = hlo::select(c.b, valid, dx, zeros);
  return {hlo::reshape(c.b, hlo::convert(c.b, dx, c.out().dtype), c.out().shape)};
}

}  // namespace

TPU_LOWERING("aten::segment_reduce", lower_segment_reduce,
             reads({"data", "reduce", "lengths", "offsets", "axis"}, {"initial"}));
TPU_LOWERING("aten::_segment_reduce_backward", lower_segment_reduce_backward,
             reads({"grad", "output", "data", "reduce", "lengths", "offsets", "axis"}, {"initial"}));

}  // namespace tpu::lowering
