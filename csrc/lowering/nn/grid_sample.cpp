// grid_sampler_2d / grid_sampler_3d (F.grid_sample) and their backward ops.
//
// input [N, C, S...] (S = (H, W) or (D, H, W)), grid [N, O..., n] whose last dimension holds
// (x, y[, z]) in [-1, 1]: x addresses the last spatial dimension. Modes: 0 bilinear, 1 nearest,
// 2 bicubic (2-d only); padding: 0 zeros, 1 border, 2 reflection. The coordinate arithmetic is
// PyTorch's (GridSampler.h): unnormalize to pixel space, then (bilinear / nearest) clip or
// reflect the coordinate into range, tracking d(source coordinate)/d(grid) for the backward;
// bicubic clips or reflects each of its 4 integer taps instead.
//
// Along each spatial dimension a sample has a few taps (float tap coordinate, weight, d weight /
// d coordinate): bilinear 2, nearest 1 (round half to even), bicubic 4 (A = -0.75). Every
// combination of taps is one gather of [N, O..., C] values from the input (as [N, S..., C]),
// zero where a tap falls outside the input; the output sums value * weight product.
// The backward scatter-adds gy * weight product to the same taps (grad_input) and sums
// gy * value * d(weight product)/d coordinate over channels (grad_grid).
// The forward computes in the input dtype (CPU's bf16 kernel rounds every step); the backward
// computes bf16/f16 in f32.
#include <cmath>
#include <stdexcept>
#include <string>

#include "lowering/core/elementwise_ops.h"
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

enum { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum { kZeros = 0, kBorder = 1, kReflection = 2 };

struct Coord {
  Value x;     // source coordinate [N, O...]
  Value grad;  // d x / d grid component [N, O...]
};

Value c_like(Builder& b, const Value& like, double v) { return hlo::full(b, like.type, v); }

// clip into [0, size - 1]; gradient 1 strictly inside, 0 elsewhere (CPU's rule).
Coord clip(Builder& b, const Coord& in, int64_t size) {
  Value lo = c_like(b, in.x, 0), hi = c_like(b, in.x, static_cast<double>(size - 1));
  Value x = hlo::min(b, hi, hlo::max(b, in.x, lo));
  Value inside = hlo::and_(b, hlo::compare(b, in.x, lo, "GT"), hlo::compare(b, in.x, hi, "LT"));
  return {x, hlo::select(b, inside, in.grad, c_like(b, in.x, 0))};
}

// Reflects x into [twice_low / 2, twice_high / 2] (mirror at the bounds, any number of times).
Coord reflect(Builder& b, const Coord& in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return {c_like(b, in.x, 0), c_like(b, in.x, 0)};
  const double lo = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  Value u = hlo::sub(b, in.x, c_like(b, in.x, lo));
  Value neg = hlo::compare(b, u, c_like(b, u, 0), "LT");
  Value sign = hlo::select(b, neg, c_like(b, u, -1), c_like(b, u, 1));
  u = hlo::abs(b, u);
  Value spanv = c_like(b, u, span);
  Value extra = hlo::rem(b, u, spanv);
  Value flips = hlo::floor(b, hlo::div(b, u, spanv));
  Value even = hlo::compare(b, hlo::rem(b, flips, c_like(b, u, 2)), c_like(b, u, 0), "EQ");
  Value x = hlo::select(b, even, hlo::add(b, extra, c_like(b, u, lo)),
                        hlo::add(b, hlo::sub(b, spanv, extra), c_like(b, u, lo)));
  Value g = hlo::select(b, even, sign, hlo::neg(b, sign));
  return {x, hlo::mul(b, in.grad, g)};
}

Coord compute_coordinates(Builder& b, const Coord& in, int64_t size, int64_t padding, bool align) {
  if (padding == kBorder) return clip(b, in, size);
  if (padding == kReflection) {
    Coord r = align ? reflect(b, in, 0, 2 * (size - 1)) : reflect(b, in, -1, 2 * size - 1);
    return clip(b, r, size);
  }
  return in;
}

// Grid coordinate in [-1, 1] -> pixel coordinate, and its derivative. CPU's 2-d kernel spells
// it (g + 1) * ((size - 1) / 2) or (g + 1) * (size / 2) - 1/2; its 3-d kernel as below.
Coord unnormalize(Builder& b, const Value& g, int64_t size, bool align, bool two_d) {
  if (two_d) {
    double f = align ? (size - 1) / 2.0 : size / 2.0;
    Value x = hlo::mul(b, hlo::add(b, g, c_like(b, g, 1)), c_like(b, g, f));
    if (!align) x = hlo::sub(b, x, c_like(b, g, 0.5));
    return {x, c_like(b, g, f)};
  }
  if (align) {
    // ((g + 1) / 2) * (size - 1)
    Value x = hlo::mul(b, hlo::div(b, hlo::add(b, g, c_like(b, g, 1)), c_like(b, g, 2)),
                       c_like(b, g, static_cast<double>(size - 1)));
    return {x, c_like(b, g, (size - 1) / 2.0)};
  }
  // ((g + 1) * size - 1) / 2
  Value x = hlo::div(
      b,
      hlo::sub(b, hlo::mul(b, hlo::add(b, g, c_like(b, g, 1)), c_like(b, g, static_cast<double>(size))),
               c_like(b, g, 1)),
      c_like(b, g, 2));
  return {x, c_like(b, g, size / 2.0)};
}

// The taps of one spatial dimension.
struct DimTaps {
  std::vector<Value> at;     // tap coordinate (integral float) [N, O...]
  std::vector<Value> w, dw;  // weight and d weight / d source coordinate
  Value mult;                // d source coordinate / d grid component
};

// Cubic convolution weights (A = -0.75) of the 4 taps at distance t in [0, 1) past the second,
// and their derivatives in t (CPU's grid sampler spells them so; upsampling's w3 differs in
// rounding): w0 = k2(1 + t), w1 = k1(t), w2 = k1(1 - t), w3 = k2(2 - t) with
// k1(x) = (A+2)x^3 - (A+3)x^2 + 1 and k2(x) = A x^3 - 5A x^2 + 8A x - 4A.
void cubic_weights(Builder& b, const Value& t, std::vector<Value>& w, std::vector<Value>& dw) {
  const double a = -0.75;
  auto k1 = [&](const Value& x) {  // ((A + 2) x - (A + 3)) x x + 1
    Value p = hlo::sub(b, hlo::mul(b, c_like(b, x, a + 2), x), c_like(b, x, a + 3));
    return hlo::add(b, hlo::mul(b, hlo::mul(b, p, x), x), c_like(b, x, 1));
  };
  auto k2 = [&](const Value& x) {  // ((A x - 5A) x + 8A) x - 4A
    Value p = hlo::sub(b, hlo::mul(b, c_like(b, x, a), x), c_like(b, x, 5 * a));
    p = hlo::add(b, hlo::mul(b, p, x), c_like(b, x, 8 * a));
    return hlo::sub(b, hlo::mul(b, p, x), c_like(b, x, 4 * a));
  };
  auto dk1 = [&](const Value& x) {  // (3(A + 2) x - 2(A + 3)) x
    return hlo::mul(b, hlo::sub(b, hlo::mul(b, c_like(b, x, 3 * (a + 2)), x), c_like(b, x, 2 * (a + 3))), x);
  };
  auto dk2 = [&](const Value& x) {  // (3A x - 10A) x + 8A
    Value p = hlo::sub(b, hlo::mul(b, c_like(b, x, 3 * a), x), c_like(b, x, 10 * a));
    return hlo::add(b, hlo::mul(b, p, x), c_like(b, x, 8 * a));
  };
  Value one = c_like(b, t, 1);
  Value t1 = hlo::add(b, t, one), u = hlo::sub(b, one, t), u1 = hlo::sub(b, c_like(b, t, 2), t);
  w = {k2(t1), k1(t), k1(u), k2(u1)};
  dw = {dk2(t1), dk1(t), hlo::neg(b, dk1(u)), hlo::neg(b, dk2(u1))};
}

// two_d: CPU's 2-d kernel spells the bilinear weights 1 - t and t (t = x - floor(x)); its 3-d
// kernel (floor(x) + 1) - x and x - floor(x).
DimTaps dim_taps(Builder& b, const Value& g, int64_t size, int mode, int64_t padding, bool align,
                 bool two_d) {
  DimTaps d;
  Coord u = unnormalize(b, g, size, align, two_d);
  if (mode == kBicubic) {
    d.mult = u.grad;
    Value f = hlo::floor(b, u.x);
    cubic_weights(b, hlo::sub(b, u.x, f), d.w, d.dw);
    for (int k = 0; k < 4; ++k) {
      Coord tap{hlo::add(b, f, c_like(b, f, k - 1)), c_like(b, f, 0)};
      d.at.push_back(compute_coordinates(b, tap, size, padding, align).x);
    }
    return d;
  }
  Coord s = compute_coordinates(b, u, size, padding, align);
  d.mult = s.grad;
  if (mode == kNearest) {
    d.at = {hlo::round_nearest_even(b, s.x)};
    d.w = {c_like(b, s.x, 1)};
    d.dw = {c_like(b, s.x, 0)};
    return d;
  }
  Value f = hlo::floor(b, s.x);
  Value f1 = hlo::add(b, f, c_like(b, f, 1));
  d.at = {f, f1};
  Value t = hlo::sub(b, s.x, f);
  d.w = {two_d ? hlo::sub(b, c_like(b, t, 1), t) : hlo::sub(b, f1, s.x), t};
  d.dw = {c_like(b, f, -1), c_like(b, f, 1)};
  return d;
}

struct Sampler {
  int n = 2;         // spatial dims
  Shape in_spatial;  // S...
  Shape o;           // [N, O...]
  int64_t channels = 0;
  std::vector<DimTaps> dims;  // per spatial dim, input order (D, H, W)
  bool cubic = false;
};

Sampler make_sampler(Ctx& c, const Value& input, const Value& grid, DType t) {
  Builder& b = c.b;
  Sampler s;
  s.n = input.rank() - 2;
  s.channels = input.dim(1);
  s.in_spatial = Shape(input.shape().begin() + 2, input.shape().end());
  s.o = Shape(grid.shape().begin(), grid.shape().end() - 1);
  const int mode = static_cast<int>(c.int_arg("interpolation_mode"));
  const int64_t padding = c.int_arg("padding_mode");
  const bool align = c.bool_arg("align_corners");
  s.cubic = mode == kBicubic;
  if (mode == kBicubic && s.n != 2)
    throw std::invalid_argument("grid_sampler_3d: bicubic interpolation only supports 4D input");
  Value gt = hlo::convert(b, grid, t);
  for (int k = 0; k < s.n; ++k) {
    int comp = s.n - 1 - k;
    Value g = hlo::reshape(b, hlo::slice_dim(b, gt, gt.rank() - 1, comp, comp + 1), s.o);
    s.dims.push_back(dim_taps(b, g, s.in_spatial[k], mode, padding, align, s.n == 2));
  }
  return s;
}

// Visits every combination of taps (first spatial dim outermost): tap[k] per dimension.
template <typename Fn>
void for_each_combo(const Sampler& s, Fn fn) {
  std::vector<int> tap(s.n, 0);
  while (true) {
    fn(tap);
    int k = s.n - 1;
    while (k >= 0 && ++tap[k] == static_cast<int>(s.dims[k].at.size())) tap[k--] = 0;
    if (k < 0) return;
  }
}

struct Gathered {
  Value index;  // i64 [N, O..., 1 + n]: (batch, spatial coords) clamped into the input
  Value mask;   // i1 [N, O...]: every tap inside
};

Gathered locate(Builder& b, const Sampler& s, const std::vector<int>& tap) {
  Type it{DType::I64, s.o};
  Shape col = s.o;
  col.push_back(1);
  std::vector<Value> parts = {hlo::reshape(b, hlo::iota(b, it, 0), col)};
  Value mask;
  for (int k = 0; k < s.n; ++k) {
    const Value& at = s.dims[k].at[tap[k]];
    Value lo = c_like(b, at, 0), hi = c_like(b, at, static_cast<double>(s.in_spatial[k] - 1));
    Value ok = hlo::and_(b, hlo::compare(b, at, lo, "GE"), hlo::compare(b, at, hi, "LE"));
    mask = k == 0 ? ok : hlo::and_(b, mask, ok);
    // NaN coordinates fail `ok`; clamp them (and everything else) into range for the gather.
    Value clamped = hlo::select(b, ok, at, lo);
    parts.push_back(hlo::reshape(b, hlo::convert(b, clamped, DType::I64), col));
  }
  return {hlo::concatenate(b, parts, static_cast<int64_t>(col.size()) - 1), mask};
}

// Product of the weights of `tap`, with dimension `skip`'s factor replaced by its derivative.
Value weight(Builder& b, const Sampler& s, const std::vector<int>& tap, int skip = -1) {
  Value w;
  for (int k = s.n - 1; k >= 0; --k) {  // x first, as CPU multiplies
    const Value& f = k == skip ? s.dims[k].dw[tap[k]] : s.dims[k].w[tap[k]];
    w = k == s.n - 1 ? f : hlo::mul(b, w, f);
  }
  return w;
}

idx::GatherDims gather_dims(const Sampler& s) {
  idx::GatherDims g;
  const int64_t r = static_cast<int64_t>(s.o.size());  // result rank - 1
  g.offset_dims = {r};
  for (int k = 0; k <= s.n; ++k) {
    g.collapsed_slice_dims.push_back(k);
    g.start_index_map.push_back(k);
  }
  g.index_vector_dim = r;
  g.slice_sizes = Shape(s.n + 1, 1);
  g.slice_sizes.push_back(s.channels);
  return g;
}

// input [N, C, S...] -> [N, S..., C]
Value channels_last(Builder& b, const Value& x) {
  std::vector<int64_t> perm = {0};
  for (int k = 2; k < x.rank(); ++k) perm.push_back(k);
  perm.push_back(1);
  return hlo::transpose(b, x, perm);
}

Shape with_channels(const Shape& o, int64_t c) {
  Shape s = o;
  s.push_back(c);
  return s;
}

std::vector<int64_t> leading_dims(int rank) {
  std::vector<int64_t> d;
  for (int i = 0; i < rank; ++i) d.push_back(i);
  return d;
}

// The value of tap combination `tap`: [N, O..., C], zero outside the input.
Value sample(Builder& b, const Sampler& s, const Value& xl, const Gathered& g) {
  Value v = idx::gather(b, xl, g.index, gather_dims(s));
  Shape vs = v.shape();
  Value m = hlo::broadcast_in_dim(b, g.mask, vs, leading_dims(static_cast<int>(s.o.size())));
  return hlo::select(b, m, v, c_like(b, v, 0));
}

// grid_sampler_{2,3}d(input, grid, interpolation_mode, padding_mode, align_corners)
std::vector<Value> lower_grid_sampler(Ctx& c) {
  Builder& b = c.b;
  // In the input's own dtype: CPU's bf16/f16 kernel rounds every step (coordinates, weights,
  // each product and partial sum), which per-op rounding reproduces exactly.
  const DType t = c.out().dtype;
  require_real(t);
  Value x = hlo::convert(b, c.tensor("input"), t);
  Sampler s = make_sampler(c, x, c.tensor("grid"), t);
  Value xl = channels_last(b, x);
  Shape vs = with_channels(s.o, s.channels);
  auto bc = [&](const Value& w) {
    return hlo::broadcast_in_dim(b, w, vs, leading_dims(static_cast<int>(s.o.size())));
  };
  Value out, row;
  for_each_combo(s, [&](const std::vector<int>& tap) {
    Value v = sample(b, s, xl, locate(b, s, tap));
    if (s.cubic) {
      // CPU interpolates each row along x (coefficient * value), then the rows along y.
      Value term = hlo::mul(b, bc(s.dims[1].w[tap[1]]), v);
      row = tap[1] == 0 ? term : hlo::add(b, row, term);
      if (tap[1] == 3) {
        Value r = hlo::mul(b, bc(s.dims[0].w[tap[0]]), row);
        out = out.valid() ? hlo::add(b, out, r) : r;
      }
      return;
    }
    Value term = hlo::mul(b, v, bc(weight(b, s, tap)));
    out = out.valid() ? hlo::add(b, out, term) : term;
  });
  // [N, O..., C] -> [N, C, O...]
  std::vector<int64_t> perm = {0, static_cast<int64_t>(s.o.size())};
  for (size_t k = 1; k < s.o.size(); ++k) perm.push_back(static_cast<int64_t>(k));
  return {finish(c, hlo::transpose(b, out, perm))};
}

// d output / d source coordinate k, summed over channels: ggrid[k] [N, O...]. vals holds the
// (masked) values of every tap combination in for_each_combo's order, gy [N, O..., C].
// Bilinear 2-d follows CPU's vectorized kernel: per channel, differences of neighbouring
// values times the other dimension's weights, times gy (gx = ((ne - nw) s + (se - sw) n) gy);
// otherwise, as CPU's generic and bicubic kernels, per channel the sum over combinations of
// value * d(weight product) * gy.
// Sums per-channel terms [N, O..., C] over channels in CPU's order: a running sum over
// channels, each channel adding its terms in order (few channels: unrolled; many: a reduce).
Value channel_ordered_sum(Builder& b, const std::vector<Value>& terms, int cdim) {
  const int64_t channels = terms[0].dim(cdim);
  if (channels > 16) {
    Value t = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) t = hlo::add(b, t, terms[i]);
    return reduce::sum(b, t, {cdim});
  }
  Shape s = terms[0].shape();
  s.erase(s.begin() + cdim);
  Value acc;
  for (int64_t ch = 0; ch < channels; ++ch)
    for (const Value& t : terms) {
      Value v = hlo::reshape(b, hlo::slice_dim(b, t, cdim, ch, ch + 1), s);
      acc = acc.valid() ? hlo::add(b, acc, v) : v;
    }
  return acc;
}

void grid_grad_terms(Builder& b, const Sampler& s, const std::vector<Value>& vals, const Value& gy,
                     std::vector<Value>& ggrid) {
  const int orank = static_cast<int>(s.o.size());
  Shape vs = gy.shape();
  auto bc = [&](const Value& w) { return hlo::broadcast_in_dim(b, w, vs, leading_dims(orank)); };
  const bool bilinear_2d = s.n == 2 && !s.cubic && vals.size() == 4;
  if (bilinear_2d) {
    const Value &v00 = vals[0], &v01 = vals[1], &v10 = vals[2], &v11 = vals[3];  // (y, x)
    const DimTaps &y = s.dims[0], &x = s.dims[1];
    Value gx = hlo::add(b, hlo::mul(b, hlo::sub(b, v01, v00), bc(y.w[0])),
                        hlo::mul(b, hlo::sub(b, v11, v10), bc(y.w[1])));
    Value gyy = hlo::add(b, hlo::mul(b, hlo::sub(b, v10, v00), bc(x.w[0])),
                         hlo::mul(b, hlo::sub(b, v11, v01), bc(x.w[1])));
    ggrid[1] = channel_ordered_sum(b, {hlo::mul(b, gx, gy)}, orank);
    ggrid[0] = channel_ordered_sum(b, {hlo::mul(b, gyy, gy)}, orank);
    return;
  }
  std::vector<std::vector<Value>> terms(s.n);
  size_t i = 0;
  for_each_combo(s, [&](const std::vector<int>& tap) {
    const Value& v = vals[i++];
    for (int k = 0; k < s.n; ++k) {
      Value term = s.cubic ? hlo::mul(b, v, gy) : v;  // bicubic: ((v * gy) * x factor) * y factor
      for (int j = s.n - 1; j >= 0; --j)              // x, y, z order, as CPU multiplies
        term = hlo::mul(b, term, bc(j == k ? s.dims[j].dw[tap[j]] : s.dims[j].w[tap[j]]));
      if (!s.cubic) term = hlo::mul(b, term, gy);
      terms[k].push_back(term);
    }
  });
  for (int k = 0; k < s.n; ++k) ggrid[k] = channel_ordered_sum(b, terms[k], orank);
}

// grid_sampler_{2,3}d_backward(grad_output, input, grid, interpolation_mode, padding_mode,
// align_corners, output_mask) -> (grad_input, grad_grid)
std::vector<Value> lower_grid_sampler_backward(Ctx& c) {
  Builder& b = c.b;
  const DType t = compute_dtype(c.out(1).dtype);
  require_real(t);
  Value x = hlo::convert(b, c.tensor("input"), t);
  Sampler s = make_sampler(c, x, c.tensor("grid"), t);
  const bool nearest = c.int_arg("interpolation_mode") == kNearest;
  const int orank = static_cast<int>(s.o.size());
  // gy [N, C, O...] -> [N, O..., C]
  Value gy = hlo::convert(b, c.tensor("grad_output"), t);
  std::vector<int64_t> perm = {0};
  for (int k = 2; k < gy.rank(); ++k) perm.push_back(k);
  perm.push_back(1);
  gy = hlo::transpose(b, gy, perm);
  Value xl = channels_last(b, x);
  Shape vs = with_channels(s.o, s.channels);
  Shape xs = xl.shape();

  std::vector<Value> indices, updates, vals;
  std::vector<Value> ggrid(s.n);
  for_each_combo(s, [&](const std::vector<int>& tap) {
    Gathered g = locate(b, s, tap);
    if (output_wanted(c, 0)) {
      auto bc = [&](const Value& w) { return hlo::broadcast_in_dim(b, w, vs, leading_dims(orank)); };
      Value m = hlo::broadcast_in_dim(b, g.mask, vs, leading_dims(orank));
      Value u = s.cubic ? hlo::mul(b, hlo::mul(b, gy, bc(s.dims[1].w[tap[1]])), bc(s.dims[0].w[tap[0]]))
                        : hlo::mul(b, gy, bc(weight(b, s, tap)));
      updates.push_back(hlo::select(b, m, u, c_like(b, gy, 0)));
      indices.push_back(g.index);
    }
    if (output_wanted(c, 1) && !nearest) vals.push_back(sample(b, s, xl, g));
  });
  if (output_wanted(c, 1) && !nearest) grid_grad_terms(b, s, vals, gy, ggrid);

  std::vector<Value> results;
  if (output_wanted(c, 0)) {
    // One scatter of every combination's updates: [K, N, O..., C] at [K, N, O..., 1 + n].
    auto stack = [&](const std::vector<Value>& vs_) {
      std::vector<Value> r;
      for (const Value& v : vs_) {
        Shape sh = v.shape();
        sh.insert(sh.begin(), 1);
        r.push_back(hlo::reshape(b, v, sh));
      }
      return r.size() == 1 ? r[0] : hlo::concatenate(b, r, 0);
    };
    Value ind = stack(indices), upd = stack(updates);
    idx::ScatterDims d;
    d.update_window_dims = {orank + 1};
    for (int k = 0; k <= s.n; ++k) {
      d.inserted_window_dims.push_back(k);
      d.scatter_dims_to_operand_dims.push_back(k);
    }
    d.index_vector_dim = orank + 1;
    Value gx = idx::scatter(b, hlo::full(b, Type{t, xs}, 0), ind, upd, d, hlo::Combiner::Add);
    // [N, S..., C] -> [N, C, S...]
    std::vector<int64_t> back = {0, s.n + 1};
    for (int k = 1; k <= s.n; ++k) back.push_back(k);
    results.push_back(finish(c, hlo::transpose(b, gx, back), 0));
  } else {
    results.push_back(hlo::full(b, c.out(0), 0));
  }
  if (output_wanted(c, 1) && nearest) {
    results.push_back(hlo::full(b, c.out(1), 0));  // piecewise constant in the grid
  } else if (output_wanted(c, 1)) {
    Shape col = s.o;
    col.push_back(1);
    std::vector<Value> comps;
    for (int comp = 0; comp < s.n; ++comp) {
      int k = s.n - 1 - comp;
      comps.push_back(hlo::reshape(b, hlo::mul(b, ggrid[k], s.dims[k].mult), col));
    }
    results.push_back(finish(c, hlo::concatenate(b, comps, orank), 1));
  } else {
    results.push_back(hlo::full(b, c.out(1), 0));
  }
  return results;
}

}  // namespace

const Signature kGridSamplerReads =
    reads({"input", "grid", "interpolation_mode", "padding_mode", "align_corners"});
const Signature kGridSamplerBackwardReads = reads(
    {"grad_output", "input", "grid", "interpolation_mode", "padding_mode", "align_corners", "output_mask"});

TPU_LOWERING("aten::grid_sampler_2d", lower_grid_sampler, kGridSamplerReads);
TPU_LOWERING("aten::grid_sampler_3d", lower_grid_sampler, kGridSamplerReads);
TPU_LOWERING("aten::grid_sampler_2d_backward", lower_grid_sampler_backward, kGridSamplerBackwardReads);
TPU_LOWERING("aten::grid_sampler_3d_backward", lower_grid_sampler_backward, kGridSamplerBackwardReads);

}  // namespace tpu::lowering
