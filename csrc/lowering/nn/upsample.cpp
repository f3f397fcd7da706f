// Interpolation (F.interpolate): upsample_nearest{1,2,3}d, _upsample_nearest_exact{1,2,3}d,
// upsample_linear1d, upsample_bilinear2d, upsample_trilinear3d, upsample_bicubic2d and
// _upsample_bilinear2d_aa, with their backward ops.
//
// Every mode is separable: along one spatial dimension, output position o reads K input
// positions index[k][o] with weights weight[k][o] (nearest: K = 1 and no weights; linear: 2;
// cubic: 4 with clamped border taps; antialiased: the filter's support). The tables depend only
// on (input size, output size, align_corners, scale) and are computed here on the host with
// PyTorch's own index arithmetic (UpSample.h: area_pixel_compute_scale /
// area_pixel_compute_source_index / nearest_idx / nearest_exact_idx, in float for f32/bf16/f16
// inputs and double for f64 as CPU's opmath type), so indices agree with CPU bit for bit.
//
// - Forward along a dimension: one gather of the K*out taps, a multiply by the weights and a
//   sum over the K taps in CPU's order. Dimensions are resampled innermost first, as CPU's
//   separable kernel nests them.
// - Backward is the transpose: the gradient times each tap's weight, scatter-added to the tap
//   positions (one scatter per dimension), outermost dimension first.
// bf16/f16 interpolate in f32 and round once; their weights are rounded as CPU stores them
// (see lower_upsample).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/core/index_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

enum class Mode { Nearest, NearestExact, Linear, Cubic, LinearAA };

// One resampling axis: tap k of output o reads input index[k * out + o] with weight
// weight[k * out + o] (weight empty: nearest).
struct Taps {
  int64_t in = 0, out = 0;
  int k = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
};

// --- PyTorch's index arithmetic (UpSample.h), in the opmath type T --------------------------

template <typename T>
T compute_scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return (scale && *scale > 0.) ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / out;
}

template <typename T>
T area_pixel_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / (out - 1) : static_cast<T>(0);
  return compute_scales_value<T>(scale, in, out);
}

template <typename T>
T area_pixel_source_index(T scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * o;
  T src = scale * (o + static_cast<T>(0.5)) - static_cast<T>(0.5);
  return (!cubic && src < static_cast<T>(0)) ? T(0) : src;
}

// guard_index_and_lambda: the floor index (floorf, as CPU, even for double) and the fraction.
template <typename T>
void index_and_lambda(T real, int64_t in, int64_t& index, T& lambda) {
  index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
  lambda = std::min(std::max(real - static_cast<T>(index), static_cast<T>(0)), static_cast<T>(1));
}

int64_t nearest_index(int64_t o, int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  if (!exact) {
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    float s = compute_scales_value<float>(scale, in, out);
    return std::min(static_cast<int64_t>(std::floor(o * s)), in - 1);
  }
  float s = compute_scales_value<float>(scale, in, out);
  return std::min(static_cast<int64_t>(std::floor((o + 0.5) * s)), in - 1);
}

// `v` rounded to the dtype CPU stores interpolation weights in (round to nearest even).
double round_to(double v, DType storage) {
  if (storage == DType::BF16) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    bits &= 0xFFFF0000u;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (storage == DType::F16) return static_cast<float>(static_cast<_Float16>(static_cast<float>(v)));
  return v;
}

template <typename T>
T cubic1(T x, T a) {
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <typename T>
T cubic2(T x, T a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// CPU's generic forward kernel computes nearest indices its own way (no special cases for
// out == in or out == 2 in, the opmath scale, exact mode via (src - 1/2) + 1/2 in double).
template <typename T>
int64_t nearest_index_generic(int64_t o, int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  T s = compute_scales_value<T>(scale, in, out);
  if (!exact) return std::min(static_cast<int64_t>(std::floor(static_cast<float>(s * o))), in - 1);
  T real = area_pixel_source_index<T>(s, o, false, false);
  float shifted = static_cast<float>(static_cast<double>(real) + 0.5);
  return std::min(static_cast<int64_t>(std::floor(shifted)), in - 1);
}

Taps nearest_taps(int64_t in, int64_t out, std::optional<double> scale, bool exact, bool generic, bool f64) {
  Taps t{in, out, 1, {}, {}};
  for (int64_t o = 0; o < out; ++o)
    t.index.push_back(!generic ? nearest_index(o, in, out, scale, exact)
                      : f64    ? nearest_index_generic<double>(o, in, out, scale, exact)
                               : nearest_index_generic<float>(o, in, out, scale, exact));
  return t;
}

// Weights are rounded to `storage` as CPU stores them: lambda1 first, lambda0 = 1 - lambda1
// from the stored lambda1.
template <typename T>
Taps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale, DType storage) {
  Taps t{in, out, 2, std::vector<int64_t>(2 * out), std::vector<double>(2 * out)};
  T ratio = area_pixel_scale<T>(in, out, align_corners, scale);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i0 = o, i1 = o;
    T l1 = 0;
    if (out != in) {
      T real = area_pixel_source_index<T>(ratio, o, align_corners, false);
      index_and_lambda(real, in, i0, l1);
      i1 = i0 + (i0 < in - 1 ? 1 : 0);
    }
    t.index[o] = i0, t.index[out + o] = i1;
    const double l1s = round_to(l1, storage);
    t.weight[o] = round_to(static_cast<double>(static_cast<T>(1) - static_cast<T>(l1s)), storage);
    t.weight[out + o] = l1s;
  }
  return t;
}

template <typename T>
Taps cubic_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale, DType storage) {
  Taps t{in, out, 4, std::vector<int64_t>(4 * out), std::vector<double>(4 * out)};
  T ratio = area_pixel_scale<T>(in, out, align_corners, scale);
  const T a = static_cast<T>(-0.75);
  for (int64_t o = 0; o < out; ++o) {
    T real = area_pixel_source_index<T>(ratio, o, align_corners, true);
    int64_t i;
    T x;
    index_and_lambda(real, in, i, x);
    T w[4] = {cubic2<T>(x + static_cast<T>(1), a), cubic1<T>(x, a), cubic1<T>(static_cast<T>(1) - x, a),
              cubic2<T>(static_cast<T>(1) - x + static_cast<T>(1), a)};
    for (int k = 0; k < 4; ++k) {
      t.index[k * out + o] = std::clamp<int64_t>(i - 1 + k, 0, in - 1);
      t.weight[k * out + o] = round_to(w[k], storage);
    }
  }
  return t;
}

// Antialiased bilinear (PIL-style triangle filter, _upsample_bilinear2d_aa): when downsampling
// the filter widens by the scale, so an output reads every input within `support` of its
// center, weights normalised to sum 1. Taps beyond an output's window get weight 0 (index
// clamped to its window start).
template <typename T>
Taps linear_aa_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  T s = area_pixel_scale<T>(in, out, align_corners, scale);
  const T support = (s >= 1.0) ? static_cast<T>(1.0) * s : static_cast<T>(1.0);
  int k = static_cast<int>(std::ceil(support)) * 2 + 1;
  Taps t{in, out, k, std::vector<int64_t>(static_cast<size_t>(k) * out),
         std::vector<double>(static_cast<size_t>(k) * out)};
  const T invscale = (s >= 1.0) ? static_cast<T>(1.0) / s : static_cast<T>(1.0);
  for (int64_t o = 0; o < out; ++o) {
    const T center = s * (o + static_cast<T>(0.5));
    int64_t xmin =
        std::max(static_cast<int64_t>(center - support + static_cast<T>(0.5)), static_cast<int64_t>(0));
    int64_t xsize = std::min(static_cast<int64_t>(center + support + static_cast<T>(0.5)), in) - xmin;
    xsize = std::clamp<int64_t>(xsize, 0, k);
    std::vector<T> w(k, 0);
    T total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      T x = (j + xmin - center + static_cast<T>(0.5)) * invscale;
      x = std::abs(x);
      T v = x < static_cast<T>(1) ? static_cast<T>(1) - x : static_cast<T>(0);
      w[j] = v;
      total += v;
    }
    for (int j = 0; j < k; ++j) {
      if (j < xsize && total != 0) w[j] /= total;
      t.index[static_cast<size_t>(j) * out + o] = j < xsize ? xmin + j : xmin;
      t.weight[static_cast<size_t>(j) * out + o] = j < xsize ? static_cast<double>(w[j]) : 0.0;
    }
  }
  return t;
}

// `storage`: the dtype the weights are rounded to; `generic`: nearest indices as CPU's generic
// forward kernel computes them (see lower_upsample).
Taps make_taps(Mode mode, DType dtype, DType storage, int64_t in, int64_t out, bool align_corners,
               std::optional<double> scale, bool generic = false) {
  const bool f64 = dtype == DType::F64;
  switch (mode) {
    case Mode::Nearest:
      return nearest_taps(in, out, scale, false, generic, f64);
    case Mode::NearestExact:
      return nearest_taps(in, out, scale, true, generic, f64);
    case Mode::Linear:
      return f64 ? linear_taps<double>(in, out, align_corners, scale, storage)
                 : linear_taps<float>(in, out, align_corners, scale, storage);
    case Mode::Cubic:
      return f64 ? cubic_taps<double>(in, out, align_corners, scale, storage)
                 : cubic_taps<float>(in, out, align_corners, scale, storage);
    case Mode::LinearAA:
      return f64 ? linear_aa_taps<double>(in, out, align_corners, scale)
                 : linear_aa_taps<float>(in, out, align_corners, scale);
  }
  return {};
}

// --- IR --------------------------------------------------------------------------------------

// x with dimension d (size taps.in) resampled to taps.out.
Value resample_dim(Builder& b, const Value& x, int d, const Taps& taps) {
  Value r = idx::gather_along(b, x, d, hlo::i64_vector(b, taps.index));
  if (taps.weight.empty()) return r;
  Shape s = r.shape();
  s[d] = taps.k;
  s.insert(s.begin() + d + 1, taps.out);
  Value w = hlo::reshape(b, hlo::float_vector(b, taps.weight, x.dtype()), {taps.k, taps.out});
  Value terms = hlo::mul(b, hlo::reshape(b, r, s), hlo::broadcast_in_dim(b, w, s, {d, d + 1}));
  // CPU's order: ((t0 + t1) + t2) + ...
  Shape one = x.shape();
  one[d] = taps.out;
  Value sum;
  for (int k = 0; k < taps.k; ++k) {
    Value t = hlo::reshape(b, hlo::slice_dim(b, terms, d, k, k + 1), one);
    sum = k == 0 ? t : hlo::add(b, sum, t);
  }
  return sum;
}

// The transpose of resample_dim: g with dimension d (size taps.out) spread back to taps.in.
Value resample_dim_backward(Builder& b, const Value& g, int d, const Taps& taps) {
  Value updates = g;
  if (!taps.weight.empty()) {
    Shape s = g.shape();
    s[d] = taps.k;
    s.insert(s.begin() + d + 1, taps.out);
    std::vector<int64_t> dims;
    for (int i = 0; i < g.rank(); ++i) dims.push_back(i <= d ? (i == d ? d + 1 : i) : i + 1);
    Value w = hlo::reshape(b, hlo::float_vector(b, taps.weight, g.dtype()), {taps.k, taps.out});
    updates = hlo::mul(b, hlo::broadcast_in_dim(b, g, s, dims), hlo::broadcast_in_dim(b, w, s, {d, d + 1}));
    Shape flat = g.shape();
    flat[d] = taps.k * taps.out;
    updates = hlo::reshape(b, updates, flat);
  }
  Shape in = g.shape();
  in[d] = taps.in;
  Value zeros = hlo::full(b, Type{g.dtype(), in}, 0);
  return idx::scatter_along(b, zeros, d, hlo::i64_vector(b, taps.index), updates, hlo::Combiner::Add);
}

std::optional<double> scale_arg(const Ctx& c, std::string_view name) {
  if (!c.has(name)) return std::nullopt;
  return c.arg(name).d;
}

bool interpolates(Mode m) { return m != Mode::Nearest && m != Mode::NearestExact; }

// The schema names of an N-d upsample's scales, one per resized dimension.
const std::vector<std::string>& scale_names(int n) {
  static const std::vector<std::string> names[3] = {
      {"scales"}, {"scales_h", "scales_w"}, {"scales_d", "scales_h", "scales_w"}};
  return names[n - 1];
}

std::optional<double> scale_of(const Ctx& c, int n, int d) { return scale_arg(c, scale_names(n)[d]); }

// What upsample_* (or its backward) reads: the input (grad_output and input_size), output_size,
// align_corners when the mode interpolates, and the N scales as compile-time constants.
Signature upsample_reads(Mode m, int n, bool backward) {
  std::vector<std::string> names = {backward ? "grad_output" : "self", "output_size"};
  if (backward) names.push_back("input_size");
  if (interpolates(m)) names.push_back("align_corners");
  return reads(names, scale_names(n));
}

// upsample_*(self, output_size, [align_corners,] scales...)
template <Mode M, int N>
std::vector<Value> lower_upsample(Ctx& c) {
  Builder& b = c.b;
  const bool has_align = interpolates(M);
  const bool align = has_align && c.bool_arg("align_corners");
  Value x = c.tensor("self");
  const DType out_dtype = c.out().dtype;
  if (interpolates(M)) x = hlo::convert(b, x, compute_dtype(out_dtype));
  const int r = x.rank();
  // CPU's generic kernel stores the weights in the input dtype (bf16 weights for bf16 images)
  // and interpolates in float; bilinear with a small output (H + W <= 128) runs its
  // channels-last kernel, whose weights stay float.
  // Nearest: the generic kernel's index rule, except for 2-d with that small output, where CPU
  // runs its channels-last kernel with nearest_idx (the backward always uses nearest_idx).
  const bool small_2d = N == 2 && c.ints("output_size")[0] + c.ints("output_size")[1] <= 128;
  DType storage = out_dtype;
  if (M == Mode::Linear && small_2d) storage = x.dtype();
  for (int d = N - 1; d >= 0; --d) {
    Taps t = make_taps(M, out_dtype, storage, x.dim(r - N + d), c.ints("output_size")[d], align,
                       scale_of(c, N, d), !small_2d);
    x = resample_dim(b, x, r - N + d, t);
  }
  return {hlo::reshape(b, hlo::convert(b, x, out_dtype), c.out().shape)};
}

// upsample_*_backward(grad_output, output_size, input_size, [align_corners,] scales...)
template <Mode M, int N>
std::vector<Value> lower_upsample_backward(Ctx& c) {
  Builder& b = c.b;
  const bool has_align = interpolates(M);
  const bool align = has_align && c.bool_arg("align_corners");
  const DType out_dtype = c.out().dtype;
  Value g = hlo::convert(b, c.tensor("grad_output"), compute_dtype(out_dtype));
  const std::vector<int64_t>& in_size = c.ints("input_size");
  const int r = g.rank();
  for (int d = 0; d < N; ++d) {
    // The backward kernels keep float weights.
    Taps t = make_taps(M, out_dtype, g.dtype(), in_size[in_size.size() - N + d], c.ints("output_size")[d],
                       align, scale_of(c, N, d));
    g = resample_dim_backward(b, g, r - N + d, t);
  }
  return {hlo::reshape(b, hlo::convert(b, g, out_dtype), c.out().shape)};
}

}  // namespace

TPU_LOWERING("aten::upsample_nearest1d", lower_upsample<Mode::Nearest, 1>,
             upsample_reads(Mode::Nearest, 1, false));
TPU_LOWERING("aten::upsample_nearest2d", lower_upsample<Mode::Nearest, 2>,
             upsample_reads(Mode::Nearest, 2, false));
TPU_LOWERING("aten::upsample_nearest3d", lower_upsample<Mode::Nearest, 3>,
             upsample_reads(Mode::Nearest, 3, false));
TPU_LOWERING("aten::_upsample_nearest_exact1d", lower_upsample<Mode::NearestExact, 1>,
             upsample_reads(Mode::NearestExact, 1, false));
TPU_LOWERING("aten::_upsample_nearest_exact2d", lower_upsample<Mode::NearestExact, 2>,
             upsample_reads(Mode::NearestExact, 2, false));
TPU_LOWERING("aten::_upsample_nearest_exact3d", lower_upsample<Mode::NearestExact, 3>,
             upsample_reads(Mode::NearestExact, 3, false));
TPU_LOWERING("aten::upsample_linear1d", lower_upsample<Mode::Linear, 1>,
             upsample_reads(Mode::Linear, 1, false));
TPU_LOWERING("aten::upsample_bilinear2d", lower_upsample<Mode::Linear, 2>,
             upsample_reads(Mode::Linear, 2, false));
TPU_LOWERING("aten::upsample_trilinear3d", lower_upsample<Mode::Linear, 3>,
             upsample_reads(Mode::Linear, 3, false));
TPU_LOWERING("aten::upsample_bicubic2d", lower_upsample<Mode::Cubic, 2>,
             upsample_reads(Mode::Cubic, 2, false));
TPU_LOWERING("aten::_upsample_bilinear2d_aa", lower_upsample<Mode::LinearAA, 2>,
             upsample_reads(Mode::LinearAA, 2, false));

TPU_LOWERING("aten::upsample_nearest1d_backward", lower_upsample_backward<Mode::Nearest, 1>,
             upsample_reads(Mode::Nearest, 1, true));
TPU_LOWERING("aten::upsample_nearest2d_backward", lower_upsample_backward<Mode::Nearest, 2>,
             upsample_reads(Mode::Nearest, 2, true));
TPU_LOWERING("aten::upsample_nearest3d_backward", lower_upsample_backward<Mode::Nearest, 3>,
             upsample_reads(Mode::Nearest, 3, true));
TPU_LOWERING("aten::_upsample_nearest_exact1d_backward", lower_upsample_backward<Mode::NearestExact, 1>,
             upsample_reads(Mode::NearestExact, 1, true));
TPU_LOWERING("aten::_upsample_nearest_exact2d_backward", lower_upsample_backward<Mode::NearestExact, 2>,
             upsample_reads(Mode::NearestExact, 2, true));
TPU_LOWERING("aten::_upsample_nearest_exact3d_backward", lower_upsample_backward<Mode::NearestExact, 3>,
             upsample_reads(Mode::NearestExact, 3, true));
TPU_LOWERING("aten::upsample_linear1d_backward", lower_upsample_backward<Mode::Linear, 1>,
             upsample_reads(Mode::Linear, 1, true));
TPU_LOWERING("aten::upsample_bilinear2d_backward", lower_upsample_backward<Mode::Linear, 2>,
             upsample_reads(Mode::Linear, 2, true));
TPU_LOWERING("aten::upsample_trilinear3d_backward", lower_upsample_backward<Mode::Linear, 3>,
             upsample_reads(Mode::Linear, 3, true));
TPU_LOWERING("aten::upsample_bicubic2d_backward", lower_upsample_backward<Mode::Cubic, 2>,
             upsample_reads(Mode::Cubic, 2, true));
TPU_LOWERING("aten::_upsample_bilinear2d_aa_backward", lower_upsample_backward<Mode::LinearAA, 2>,
             upsample_reads(Mode::LinearAA, 2, true));

}  // namespace tpu::lowering
