// Pooling: max_pool2d/3d_with_indices, avg_pool2d/3d, adaptive avg/max pooling 2d/3d, and their
// backward ops (the 1-d forms are PyTorch composites over the 2-d ones).
//
// Inputs are (N, C, spatial...) or unbatched (C, spatial...); the leading dimensions are
// flattened into one batch dimension B and restored at the end.
//
// - Regular windows (max_pool, avg_pool) are a stablehlo.reduce_window. Max pooling reduces
//   (value, flat index in the input plane) pairs with PyTorch's CPU rule: the first maximum
//   wins, a NaN beats every number and the last NaN wins (`val > max || isnan(val)`); padding
//   never wins. The backward scatters (adds) the gradient to the recorded indices, as CPU does.
// - avg_pool divides window sums by CPU's divisor (the window clipped to the padded input with
//   count_include_pad, to the input without, or divisor_override); its backward spreads each
//   gy / divisor over the window: gy dilated by the stride, padded and summed by a stride-1
//   reduce_window.
// - Adaptive pooling: output o along a dimension covers [floor(o*in/out), ceil((o+1)*in/out)).
//   When out divides in the windows are a reshape; otherwise averages contract with a 0/1
//   window matrix and maxima gather the (clamped) window positions.
// bf16/f16 sums run in f32, rounded once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "lowering/core/hlo.h"
#include "lowering/core/index_util.h"
#include "lowering/core/precision.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;
using Padding = std::vector<std::pair<int64_t, int64_t>>;

void require_float(DType t, const char* op) {
  if (!ir::is_floating(t))
    throw std::invalid_argument(std::string("\"") + op + "\" not implemented for '" + ir::torch_name(t) +
                                "'");
}

// CPU's avg_pool{2,3}d kernels also take int64 (no other integer type); its max_pool{2,3}d
// kernels take every type but bool.
void require_float_or_long(DType t, const char* op) {
  if (t != DType::I64) require_float(t, op);
}

void require_not_bool(DType t, const char* op) {
  if (t == DType::Bool) require_float(t, op);
}

int64_t product(Shape::const_iterator first, Shape::const_iterator last) {
  int64_t n = 1;
  for (; first != last; ++first) n *= *first;
  return n;
}

// The input as [B, spatial...] (n spatial dims); outputs take their meta shapes at the end.
Value planes(Builder& b, const Value& v, int n) {
  Shape s = {product(v.shape().begin(), v.shape().end() - n)};
  s.insert(s.end(), v.shape().end() - n, v.shape().end());
  return hlo::reshape(b, v, s);
}

Shape spatial(const Shape& s, int n) { return Shape(s.end() - n, s.end()); }

std::vector<int64_t> expand(const std::vector<int64_t>& v, int n, const std::vector<int64_t>& fill) {
  if (v.empty()) return fill;
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  return v;
}

struct Window {
  std::vector<int64_t> kernel, stride, padding, dilation;
};

// The arguments kernel_size, stride (empty: kernel_size), padding and dilation (max pooling only).
Window window_args(const Ctx& c, int n, bool has_dilation) {
  Window w;
  w.kernel = expand(c.ints("kernel_size"), n, {});
  w.stride = expand(c.ints("stride"), n, w.kernel);
  w.padding = expand(c.ints("padding"), n, std::vector<int64_t>(n, 0));
  w.dilation =
      has_dilation ? expand(c.ints("dilation"), n, std::vector<int64_t>(n, 1)) : std::vector<int64_t>(n, 1);
  return w;
}

// reduce_window padding for [B, spatial...] that yields exactly `out` windows per dimension
// (the high side grows for ceil_mode; it is never needed below 0).
Padding pool_padding(const Window& w, const Shape& in, const Shape& out) {
  Padding p = {{0, 0}};
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t kd = (w.kernel[d] - 1) * w.dilation[d] + 1;
    int64_t hi = (out[d] - 1) * w.stride[d] + kd - in[d] - w.padding[d];
    p.push_back({w.padding[d], std::max<int64_t>(hi, 0)});
  }
  return p;
}

std::vector<int64_t> with_batch(const std::vector<int64_t>& v, int64_t batch_value) {
  std::vector<int64_t> out = {batch_value};
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

// Flat position of each element within its plane: i64 [B, spatial...].
Value plane_index(Builder& b, const Shape& s) {
  Type t{DType::I64, s};
  Value idx = hlo::full(b, t, 0);
  int64_t stride = 1;
  for (int d = static_cast<int>(s.size()) - 1; d >= 1; --d) {
    Value term = hlo::mul(b, hlo::iota(b, t, d), hlo::full(b, t, static_cast<double>(stride)));
    idx = hlo::add(b, idx, term);
    stride *= s[d];
  }
  return idx;
}

// Combines (value, index) pairs as CPU max pooling does (see the file comment); associative
// and commutative, so any reduction order gives CPU's answer.
std::vector<Value> max_pair(Builder& rb, const std::vector<Value>& a) {
  const Value &av = a[0], &ai = a[1], &bv = a[2], &bi = a[3];
  Value a_wins = hlo::compare(rb, av, bv, "GT");
  Value tie = hlo::compare(rb, av, bv, "EQ");
  Value a_nan = hlo::compare(rb, av, av, "NE");
  Value b_nan = hlo::compare(rb, bv, bv, "NE");
  Value both_nan = hlo::and_(rb, a_nan, b_nan);
  a_wins = hlo::or_(rb, a_wins, hlo::and_(rb, a_nan, hlo::logical_not(rb, b_nan)));
  Value a_first = hlo::compare(rb, ai, bi, "LT");
  // Ties: the smaller index; two NaNs: the larger one.
  Value pick_a_on_tie = hlo::select(rb, both_nan, hlo::logical_not(rb, a_first), a_first);
  Value tied = hlo::or_(rb, tie, both_nan);
  Value pick_a = hlo::select(rb, tied, pick_a_on_tie, a_wins);
  return {hlo::select(rb, pick_a, av, bv), hlo::select(rb, pick_a, ai, bi)};
}

std::vector<Value> max_pair_inits(Builder& b, DType t) {
  return {reduce::lowest(b, t), hlo::constant_int(b, DType::I64, std::numeric_limits<int64_t>::max())};
}

// grad_input of max pooling: gy [B, out...] added at `indices` [B, out...] of zero planes
// shaped like `in` [B, in...].
Value scatter_to_indices(Builder& b, const Value& gy, const Value& indices, const Shape& in) {
  const int64_t bsz = in[0], plane = product(in.begin() + 1, in.end());
  const int64_t q = gy.type.numel() / std::max<int64_t>(bsz, 1);
  Value idx = hlo::reshape(b, hlo::convert(b, indices, DType::I64), {bsz, q});
  Value base = hlo::mul(b, hlo::iota(b, Type{DType::I64, {bsz, q}}, 0),
                        hlo::full(b, Type{DType::I64, {bsz, q}}, static_cast<double>(plane)));
  Value flat_idx = hlo::reshape(b, hlo::add(b, idx, base), {bsz * q, 1});
  Value updates = hlo::reshape(b, gy, {bsz * q});
  idx::ScatterDims dims;
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  Value zeros = hlo::full(b, Type{gy.dtype(), {bsz * plane}}, 0);
  return hlo::reshape(b, idx::scatter(b, zeros, flat_idx, updates, dims, hlo::Combiner::Add), in);
}

// --- max pooling ---------------------------------------------------------------------------

// max_pool{2,3}d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
template <int N>
std::vector<Value> lower_max_pool(Ctx& c) {
  Builder& b = c.b;
  require_not_bool(c.tensor("self").dtype(), N == 2 ? "max_pool2d" : "max_pool3d");
  Value x = planes(b, c.tensor("self"), N);
  Window w = window_args(c, N, true);
  Shape in = spatial(x.shape(), N), out = spatial(c.out(0).shape, N);
  Value idx = plane_index(b, x.shape());
  std::vector<Value> r = hlo::reduce_window(b, {x, idx}, max_pair_inits(b, x.dtype()),
                                            with_batch(w.kernel, 1), with_batch(w.stride, 1),
                                            pool_padding(w, in, out), with_batch(w.dilation, 1), max_pair);
  return {finish(c, r[0], 0), finish(c, r[1], 1)};
}

// max_pool{2,3}d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
// dilation, ceil_mode, indices)
template <int N>
std::vector<Value> lower_max_pool_backward(Ctx& c) {
  Builder& b = c.b;
  Value self = planes(b, c.tensor("self"), N);
  DType acc = compute_dtype(c.out().dtype);
  Value gy = hlo::convert(b, c.tensor("grad_output"), acc);
  return {finish(c, scatter_to_indices(b, gy, c.tensor("indices"), self.shape()))};
}

// adaptive_max_pool{2,3}d_backward(grad_output, self, indices)
template <int N>
std::vector<Value> lower_adaptive_max_pool_backward(Ctx& c) {
  Builder& b = c.b;
  Value self = planes(b, c.tensor("self"), N);
  DType acc = compute_dtype(c.out().dtype);
  Value gy = hlo::convert(b, c.tensor("grad_output"), acc);
  return {finish(c, scatter_to_indices(b, gy, c.tensor("indices"), self.shape()))};
}

// --- average pooling -----------------------------------------------------------------------

// CPU's divisor of every output window, [B, out...] in dtype t (per dimension: the window
// clipped to the padded input, or to the input when padding does not count; the product over
// dimensions), or divisor_override.
Value avg_divisor(Builder& b, const Window& w, const Shape& in, const Shape& out_full, bool include_pad,
                  const Arg& override_arg, DType t) {
  Type type{t, out_full};
  if (!override_arg.is_none()) return hlo::full(b, type, static_cast<double>(override_arg.i));
  Value div = hlo::full(b, type, 1);
  for (size_t d = 0; d < in.size(); ++d) {
    std::vector<int64_t> counts;
    for (int64_t o = 0; o < out_full[d + 1]; ++o) {
      int64_t start = o * w.stride[d] - w.padding[d];
      int64_t end = std::min(start + w.kernel[d], in[d] + w.padding[d]);
      if (!include_pad) {
        end = std::min(end, in[d]);
        start = std::max<int64_t>(start, 0);
      }
      counts.push_back(std::max<int64_t>(end - start, 0));
    }
    Value v = hlo::convert(b, hlo::i64_vector(b, counts), t);
    div = hlo::mul(b, div, hlo::broadcast_in_dim(b, v, out_full, {static_cast<int64_t>(d) + 1}));
  }
  return div;
}

// x / div, 0 where div is 0 (a window with no input element, which CPU skips).
Value safe_div(Builder& b, const Value& x, const Value& div) {
  Value zero = hlo::full(b, div.type, 0);
  Value q = hlo::div(b, x, hlo::select(b, hlo::compare(b, div, zero, "EQ"), hlo::full(b, div.type, 1), div));
  return hlo::select(b, hlo::compare(b, div, zero, "EQ"), zero, q);
}

// avg_pool{2,3}d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override)
template <int N>
std::vector<Value> lower_avg_pool(Ctx& c) {
  Builder& b = c.b;
  // Integer averages truncate toward zero as CPU's (stablehlo.divide on integers).
  require_float_or_long(c.tensor("self").dtype(), N == 2 ? "avg_pool2d" : "avg_pool3d");
  Value x = planes(b, c.tensor("self"), N);
  DType acc = compute_dtype(c.out().dtype);
  x = hlo::convert(b, x, acc);
  Window w = window_args(c, N, false);
  Shape in = spatial(x.shape(), N), out = spatial(c.out().shape, N);
  Value sum = hlo::reduce_window(b, {x}, {hlo::constant(b, acc, 0)}, with_batch(w.kernel, 1),
                                 with_batch(w.stride, 1), pool_padding(w, in, out), {},
                                 [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                                   return {hlo::add(rb, a[0], a[1])};
                                 })[0];
  Value div =
      avg_divisor(b, w, in, sum.shape(), c.bool_arg("count_include_pad"), c.arg("divisor_override"), acc);
  return {finish(c, safe_div(b, sum, div))};
}

// avg_pool{2,3}d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override)
template <int N>
std::vector<Value> lower_avg_pool_backward(Ctx& c) {
  Builder& b = c.b;
  Value self = planes(b, c.tensor("self"), N);
  DType acc = compute_dtype(c.out().dtype);
  Shape in = spatial(self.shape(), N);
  Value gy = planes(b, hlo::convert(b, c.tensor("grad_output"), acc), N);
  Window w = window_args(c, N, false);
  Value gd = safe_div(
      b, gy,
      avg_divisor(b, w, in, gy.shape(), c.bool_arg("count_include_pad"), c.arg("divisor_override"), acc));
  // gx[i] = sum of gd[o] over windows o covering i: gd dilated by the stride, padded so that a
  // stride-1 window of the kernel size ending at i + padding collects them.
  std::vector<int64_t> lo = {0}, hi = {0}, interior = {0};
  for (int d = 0; d < N; ++d) {
    int64_t out = gy.dim(d + 1);
    lo.push_back(w.kernel[d] - 1 - w.padding[d]);
    hi.push_back(in[d] + w.padding[d] - 1 - (out - 1) * w.stride[d]);
    interior.push_back(w.stride[d] - 1);
  }
  Value padded = hlo::pad(b, gd, hlo::constant(b, acc, 0), lo, hi, interior);
  Value gx = hlo::reduce_window(b, {padded}, {hlo::constant(b, acc, 0)}, with_batch(w.kernel, 1), {}, {}, {},
                                [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                                  return {hlo::add(rb, a[0], a[1])};
                                })[0];
  return {finish(c, gx)};
}

// --- adaptive pooling ----------------------------------------------------------------------

int64_t window_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
int64_t window_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

// The 0/1 matrix [out, in] of adaptive windows, in dtype t.
Value window_matrix(Builder& b, int64_t in, int64_t out, DType t) {
  std::vector<int64_t> starts, ends;
  for (int64_t o = 0; o < out; ++o) {
    starts.push_back(window_start(o, in, out));
    ends.push_back(window_end(o, in, out));
  }
  Shape s = {out, in};
  Value pos = hlo::iota(b, Type{DType::I64, s}, 1);
  Value st = hlo::broadcast_in_dim(b, hlo::i64_vector(b, starts), s, {0});
  Value en = hlo::broadcast_in_dim(b, hlo::i64_vector(b, ends), s, {0});
  Value inside = hlo::and_(b, hlo::compare(b, pos, st, "GE"), hlo::compare(b, pos, en, "LT"));
  return hlo::convert(b, inside, t);
}

Value window_counts(Builder& b, int64_t in, int64_t out, DType t) {
  std::vector<int64_t> n;
  for (int64_t o = 0; o < out; ++o) n.push_back(window_end(o, in, out) - window_start(o, in, out));
  return hlo::convert(b, hlo::i64_vector(b, n), t);
}

// x with dimension d (size in) replaced by the window sums (size out).
Value adaptive_sum_dim(Builder& b, const Value& x, int d, int64_t out) {
  int64_t in = x.dim(d);
  if (in % out == 0) {
    Shape s = x.shape();
    s[d] = out;
    s.insert(s.begin() + d + 1, in / out);
    return reduce::sum(b, hlo::reshape(b, x, s), {d + 1});
  }
  Value m = window_matrix(b, in, out, x.dtype());
  Value r = hlo::dot_general(b, x, m, {}, {}, {d}, {1}, x.dtype());  // d moved last
  std::vector<int64_t> perm;
  for (int i = 0; i < x.rank() - 1; ++i) perm.push_back(i);
  perm.insert(perm.begin() + d, x.rank() - 1);
  return hlo::transpose(b, r, perm);
}

// The transpose of adaptive_sum_dim: g with dimension d (size out) spread back to size in.
Value adaptive_spread_dim(Builder& b, const Value& g, int d, int64_t in) {
  int64_t out = g.dim(d);
  if (in % out == 0) {
    Shape s = g.shape();
    s.insert(s.begin() + d + 1, in / out);
    std::vector<int64_t> dims;
    for (int i = 0; i < g.rank(); ++i) dims.push_back(i <= d ? i : i + 1);
    Value e = hlo::broadcast_in_dim(b, g, s, dims);
    s.erase(s.begin() + d + 1);
    s[d] = in;
    return hlo::reshape(b, e, s);
  }
  Value m = window_matrix(b, in, out, g.dtype());
  Value r = hlo::dot_general(b, g, m, {}, {}, {d}, {0}, g.dtype());
  std::vector<int64_t> perm;
  for (int i = 0; i < g.rank() - 1; ++i) perm.push_back(i);
  perm.insert(perm.begin() + d, g.rank() - 1);
  return hlo::transpose(b, r, perm);
}

// Window sizes of the output [B, out...] (product over dimensions), in dtype t.
Value adaptive_divisor(Builder& b, const Shape& in, const Shape& out_full, DType t) {
  Value div = hlo::full(b, Type{t, out_full}, 1);
  for (size_t d = 0; d < in.size(); ++d) {
    Value v = window_counts(b, in[d], out_full[d + 1], t);
    div = hlo::mul(b, div, hlo::broadcast_in_dim(b, v, out_full, {static_cast<int64_t>(d) + 1}));
  }
  return div;
}

// x with dimension d replaced by [out, k]: the elements at positions pos (out * k of them,
// window by window) along d.
Value gather_windows(Builder& b, const Value& x, int d, int64_t out, int64_t k,
                     const std::vector<int64_t>& pos) {
  Value r = idx::gather_along(b, x, d, hlo::i64_vector(b, pos));
  Shape s = x.shape();
  s[d] = out;
  s.insert(s.begin() + d + 1, k);
  return hlo::reshape(b, r, s);
}

// x [B, in...] (float) with dimension d (size in) replaced by [out, k]: the k positions of each
// adaptive window, zeros past the end of windows shorter than k.
Value adaptive_windows_zero_padded(Builder& b, const Value& x, int d, int64_t out) {
  int64_t in = x.dim(d);
  int64_t k = 0;
  for (int64_t o = 0; o < out; ++o) k = std::max(k, window_end(o, in, out) - window_start(o, in, out));
  std::vector<int64_t> low(x.rank(), 0), high(x.rank(), 0);
  high[d] = 1;  // position `in` is a zero
  Value padded = hlo::pad(b, x, hlo::constant(b, x.dtype(), 0), low, high, std::vector<int64_t>(x.rank(), 0));
  std::vector<int64_t> pos;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = window_start(o, in, out) + j;
      pos.push_back(p < window_end(o, in, out) ? p : in);
    }
  return gather_windows(b, padded, d, out, k, pos);
}

// CPU's adaptive_avg_pool3d kernel sums each window in the input's dtype (bf16/f16: a rounding
// after every add, in d, h, w order) and divides by the window's depth, height and width in
// turn, rounding each time. x: planes [B, D, H, W] in float holding reduced-dtype values.
// Empty Value when the windows are too large to unroll (the float path is used then).
Value adaptive_avg_pool3d_reduced(Builder& b, const Value& x, const Shape& out, DType narrow) {
  Shape in = spatial(x.shape(), 3);
  int64_t ks[3], positions = 1;
  for (int d = 0; d < 3; ++d) {
    ks[d] = 0;
    for (int64_t o = 0; o < out[d]; ++o)
      ks[d] = std::max(ks[d], window_end(o, in[d], out[d]) - window_start(o, in[d], out[d]));
    positions *= ks[d];
  }
  if (positions > 512) return Value();
  Value v = x;
  for (int d = 0; d < 3; ++d) v = adaptive_windows_zero_padded(b, v, 1 + 2 * d, out[d]);
  const Shape& vs = v.shape();  // [B, oD, kD, oH, kH, oW, kW]
  Shape res = {vs[0], out[0], out[1], out[2]};
  Value acc = hlo::full(b, Type{x.dtype(), res}, 0);
  for (int64_t i = 0; i < ks[0]; ++i)
    for (int64_t j = 0; j < ks[1]; ++j)
      for (int64_t k = 0; k < ks[2]; ++k) {
        std::vector<int64_t> start = {0, 0, i, 0, j, 0, k}, limit = vs;
        limit[2] = i + 1, limit[4] = j + 1, limit[6] = k + 1;
        Value e = hlo::reshape(b, hlo::slice(b, v, start, limit, std::vector<int64_t>(7, 1)), res);
        acc = precision::round_to(b, hlo::add(b, acc, e), narrow);
      }
  for (int d = 0; d < 3; ++d) {
    Value n = hlo::broadcast_in_dim(b, window_counts(b, in[d], out[d], x.dtype()), res, {d + 1});
    acc = precision::round_to(b, hlo::div(b, acc, n), narrow);
  }
  return acc;
}

// _adaptive_avg_pool{2,3}d(self, output_size)
template <int N>
std::vector<Value> lower_adaptive_avg_pool(Ctx& c) {
  Builder& b = c.b;
  require_float(c.tensor("self").dtype(), N == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d");
  Value x = planes(b, c.tensor("self"), N);
  DType acc = compute_dtype(c.out().dtype);
  x = hlo::convert(b, x, acc);
  Shape in = spatial(x.shape(), N), out = spatial(c.out().shape, N);
  if (N == 3 && precision::is_reduced(c.out().dtype) && x.type.numel() > 0) {
    Value r = adaptive_avg_pool3d_reduced(b, x, out, c.out().dtype);
    if (r.valid()) return {finish(c, r)};
  }
  Value s = x;
  for (int d = 0; d < N; ++d) s = adaptive_sum_dim(b, s, d + 1, out[d]);
  return {finish(c, hlo::div(b, s, adaptive_divisor(b, in, s.shape(), acc)))};
}

// _adaptive_avg_pool{2,3}d_backward(grad_output, self)
template <int N>
std::vector<Value> lower_adaptive_avg_pool_backward(Ctx& c) {
  Builder& b = c.b;
  Value self = planes(b, c.tensor("self"), N);
  DType acc = compute_dtype(c.out().dtype);
  Shape in = spatial(self.shape(), N);
  Value gy = planes(b, hlo::convert(b, c.tensor("grad_output"), acc), N);
  Value g = hlo::div(b, gy, adaptive_divisor(b, in, gy.shape(), acc));
  for (int d = 0; d < N; ++d) g = adaptive_spread_dim(b, g, d + 1, in[d]);
  return {finish(c, g)};
}

// x with dimension d (size in) replaced by [out, k]: the k positions of each adaptive window,
// the last one repeated in windows shorter than k (harmless for a maximum).
Value adaptive_windows_dim(Builder& b, const Value& x, int d, int64_t out) {
  int64_t in = x.dim(d);
  Shape s = x.shape();
  if (in % out == 0) {
    s[d] = out;
    s.insert(s.begin() + d + 1, in / out);
    return hlo::reshape(b, x, s);
  }
  int64_t k = 0;
  for (int64_t o = 0; o < out; ++o) k = std::max(k, window_end(o, in, out) - window_start(o, in, out));
  std::vector<int64_t> pos;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < k; ++j)
      pos.push_back(std::min(window_start(o, in, out) + j, window_end(o, in, out) - 1));
  return gather_windows(b, x, d, out, k, pos);
}

// adaptive_max_pool{2,3}d(self, output_size) -> (out, indices)
template <int N>
std::vector<Value> lower_adaptive_max_pool(Ctx& c) {
  Builder& b = c.b;
  require_float(c.tensor("self").dtype(), N == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d");
  Value x = planes(b, c.tensor("self"), N);
  Shape out = spatial(c.out(0).shape, N);
  Value v = x, idx = plane_index(b, x.shape());
  std::vector<int64_t> window_dims;
  for (int d = 0; d < N; ++d) {
    // Dimension d of the input now sits at 1 + 2d (earlier dims were split into (out, k)).
    v = adaptive_windows_dim(b, v, 1 + 2 * d, out[d]);
    idx = adaptive_windows_dim(b, idx, 1 + 2 * d, out[d]);
    window_dims.push_back(2 + 2 * d);
  }
  std::vector<Value> r = hlo::reduce_multi(b, {v, idx}, max_pair_inits(b, x.dtype()), window_dims, max_pair);
  return {finish(c, r[0], 0), finish(c, r[1], 1)};
}

}  // namespace

const Signature kAvgPoolReads =
    reads({"self", "kernel_size", "stride", "padding", "count_include_pad", "divisor_override"});
const Signature kAvgPoolBackwardReads = reads(
    {"grad_output", "self", "kernel_size", "stride", "padding", "count_include_pad", "divisor_override"});

TPU_LOWERING("aten::max_pool2d_with_indices", lower_max_pool<2>,
             reads({"self", "kernel_size", "stride", "padding", "dilation"}));
TPU_LOWERING("aten::max_pool3d_with_indices", lower_max_pool<3>,
             reads({"self", "kernel_size", "stride", "padding", "dilation"}));
TPU_LOWERING("aten::max_pool2d_with_indices_backward", lower_max_pool_backward<2>,
             reads({"grad_output", "self", "indices"}));
TPU_LOWERING("aten::max_pool3d_with_indices_backward", lower_max_pool_backward<3>,
             reads({"grad_output", "self", "indices"}));
TPU_LOWERING("aten::avg_pool2d", lower_avg_pool<2>, kAvgPoolReads);
TPU_LOWERING("aten::avg_pool3d", lower_avg_pool<3>, kAvgPoolReads);
TPU_LOWERING("aten::avg_pool2d_backward", lower_avg_pool_backward<2>, kAvgPoolBackwardReads);
TPU_LOWERING("aten::avg_pool3d_backward", lower_avg_pool_backward<3>, kAvgPoolBackwardReads);
TPU_LOWERING("aten::_adaptive_avg_pool2d", lower_adaptive_avg_pool<2>, reads({"self"}));
TPU_LOWERING("aten::_adaptive_avg_pool3d", lower_adaptive_avg_pool<3>, reads({"self"}));
TPU_LOWERING("aten::_adaptive_avg_pool2d_backward", lower_adaptive_avg_pool_backward<2>,
             reads({"grad_output", "self"}));
TPU_LOWERING("aten::_adaptive_avg_pool3d_backward", lower_adaptive_avg_pool_backward<3>,
             reads({"grad_output", "self"}));
TPU_LOWERING("aten::adaptive_max_pool2d", lower_adaptive_max_pool<2>, reads({"self"}));
TPU_LOWERING("aten::adaptive_max_pool3d", lower_adaptive_max_pool<3>, reads({"self"}));
TPU_LOWERING("aten::adaptive_max_pool2d_backward", lower_adaptive_max_pool_backward<2>,
             reads({"grad_output", "self", "indices"}));
TPU_LOWERING("aten::adaptive_max_pool3d_backward", lower_adaptive_max_pool_backward<3>,
             reads({"grad_output", "self", "indices"}));

}  // namespace tpu::lowering
