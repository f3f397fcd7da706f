// Unit tests of hlo::convolution and hlo::reduce_window: results on the plugin against direct
// implementations of StableHLO's definitions (padding that may be negative, lhs/rhs dilation,
// strides, feature and batch groups, other dimension layouts, variadic window reductions).
#include <cmath>
#include <cstdint>
#include <vector>

#include "lowering/core/hlo.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::ir::Builder;
using tpu::ir::DType;
using tpu::ir::Shape;
using tpu::ir::Type;
using tpu::ir::Value;
using tpu::testing::HostArray;
namespace hlo = tpu::lowering::hlo;

std::vector<double> iota_values(int64_t n, double scale, double shift) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(scale * static_cast<double>(i) + shift);
  return v;
}

struct Conv2d {
  int64_t n, c, h, w, o, kh, kw;
  std::vector<int64_t> strides{1, 1}, lhs_dil{1, 1}, rhs_dil{1, 1};
  std::vector<std::pair<int64_t, int64_t>> padding{{0, 0}, {0, 0}};
  int64_t groups = 1, batch_groups = 1;
};

int64_t out_size(int64_t in, int64_t ld, int64_t lo, int64_t hi, int64_t k, int64_t rd, int64_t s) {
  int64_t padded = (in - 1) * ld + 1 + lo + hi;
  int64_t win = (k - 1) * rd + 1;
  return padded < win ? 0 : (padded - win) / s + 1;
}

// StableHLO convolution over lhs [N, C, H, W] and rhs [O, C/G, KH, KW]: [N/B, O, OH, OW].
std::vector<double> reference(const Conv2d& p, const std::vector<double>& lhs, const std::vector<double>& rhs,
                              Shape* shape) {
  int64_t oh =
      out_size(p.h, p.lhs_dil[0], p.padding[0].first, p.padding[0].second, p.kh, p.rhs_dil[0], p.strides[0]);
  int64_t ow =
      out_size(p.w, p.lhs_dil[1], p.padding[1].first, p.padding[1].second, p.kw, p.rhs_dil[1], p.strides[1]);
  int64_t nb = p.n / p.batch_groups, ci = p.c / p.groups;
  *shape = {nb, p.o, oh, ow};
  std::vector<double> out(nb * p.o * oh * ow, 0.0);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t o = 0; o < p.o; ++o) {
      int64_t fg = o / (p.o / p.groups), bg = o / (p.o / p.batch_groups);
      int64_t n_in = bg * nb + b;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = 0;
          for (int64_t i = 0; i < ci; ++i)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                // Position in the dilated, padded lhs, then back to an lhs element (or a hole).
                int64_t py = y * p.strides[0] + ky * p.rhs_dil[0] - p.padding[0].first;
                int64_t px = x * p.strides[1] + kx * p.rhs_dil[1] - p.padding[1].first;
                if (py < 0 || px < 0 || py % p.lhs_dil[0] || px % p.lhs_dil[1]) continue;
                int64_t iy = py / p.lhs_dil[0], ix = px / p.lhs_dil[1];
                if (iy >= p.h || ix >= p.w) continue;
                int64_t c = fg * ci + i;
                acc += lhs[((n_in * p.c + c) * p.h + iy) * p.w + ix] *
                       rhs[((o * ci + i) * p.kh + ky) * p.kw + kx];
              }
          out[((b * p.o + o) * oh + y) * ow + x] = acc;
        }
    }
  return out;
}

void check_conv(const Conv2d& p, bool nhwc) {
  std::vector<double> lhs = iota_values(p.n * p.c * p.h * p.w, 0.37, 0.1);
  std::vector<double> rhs = iota_values(p.o * (p.c / p.groups) * p.kh * p.kw, 0.91, 0.7);
  Shape ref_shape;
  std::vector<double> ref = reference(p, lhs, rhs, &ref_shape);

  Builder b;
  Value l = b.param(Type{DType::F64, {p.n, p.c, p.h, p.w}});
  Value r = b.param(Type{DType::F64, {p.o, p.c / p.groups, p.kh, p.kw}});
  hlo::ConvDims dims = hlo::ConvDims::nchw(2);
  if (nhwc) {
    // The same convolution in NHWC / HWIO / NHWC layouts (the result transposed back).
    l = hlo::transpose(b, l, {0, 2, 3, 1});
    r = hlo::transpose(b, r, {2, 3, 1, 0});
    dims.input_batch = 0, dims.input_feature = 3, dims.input_spatial = {1, 2};
    dims.kernel_input_feature = 2, dims.kernel_output_feature = 3, dims.kernel_spatial = {0, 1};
    dims.output_batch = 0, dims.output_feature = 3, dims.output_spatial = {1, 2};
  }
  hlo::ConvWindow win;
  win.strides = p.strides;
  win.padding = p.padding;
  win.lhs_dilation = p.lhs_dil;
  win.rhs_dilation = p.rhs_dil;
  win.feature_group_count = p.groups;
  win.batch_group_count = p.batch_groups;
  Value y = hlo::convolution(b, l, r, dims, win, DType::F64);
  if (nhwc) y = hlo::transpose(b, y, {0, 3, 1, 2});
  REQUIRE_EQ(y.shape(), ref_shape);
  b.set_results({y});
  HostArray out = tpu::testing::run(b, {HostArray::of(DType::F64, {p.n, p.c, p.h, p.w}, lhs),
                                        HostArray::of(DType::F64, {p.o, p.c / p.groups, p.kh, p.kw}, rhs)})
                      .at(0);
  std::vector<double> got = out.as<double>();
  REQUIRE_EQ(got.size(), ref.size());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(got[i] - ref[i]));
  CHECK(worst < 1e-12);
}

TEST(WindowOps, ConvolutionStridesPaddingDilation) {
  Conv2d p{2, 3, 7, 6, 4, 3, 2};
  check_conv(p, false);
  p.strides = {2, 3};
  p.padding = {{1, 2}, {0, 1}};
  check_conv(p, false);
  p.rhs_dil = {2, 1};
  p.lhs_dil = {1, 3};
  check_conv(p, false);
  check_conv(p, true);
}

TEST(WindowOps, ConvolutionNegativePadding) {
  Conv2d p{1, 2, 8, 7, 3, 2, 3};
  p.padding = {{-1, 2}, {2, -2}};
  p.lhs_dil = {2, 1};
  check_conv(p, false);
}

TEST(WindowOps, ConvolutionFeatureAndBatchGroups) {
  Conv2d p{2, 6, 5, 5, 4, 3, 2};
  p.groups = 2;
  p.strides = {1, 2};
  check_conv(p, false);
  check_conv(p, true);
  Conv2d q{4, 3, 6, 5, 6, 2, 2};
  q.batch_groups = 2;
  q.rhs_dil = {2, 2};
  q.padding = {{1, 0}, {0, 1}};
  check_conv(q, false);
}

TEST(WindowOps, ReduceWindowVariadic) {
  // (sum of a, max of b) over 3x2 windows, stride (2, 1), window dilation (1, 2), padding.
  const int64_t h = 6, w = 7;
  std::vector<double> a = iota_values(h * w, 0.53, 0.2), bv = iota_values(h * w, 1.7, 0.4);
  const std::vector<int64_t> window = {3, 2}, strides = {2, 1}, dil = {1, 2};
  const std::vector<std::pair<int64_t, int64_t>> pad = {{1, 1}, {0, 2}};
  Builder b;
  Value x = b.param(Type{DType::F64, {h, w}}), y = b.param(Type{DType::F64, {h, w}});
  std::vector<Value> r = hlo::reduce_window(
      b, {x, y}, {hlo::constant(b, DType::F64, 0), hlo::constant(b, DType::F64, -INFINITY)}, window, strides,
      pad, dil, [](Builder& rb, const std::vector<Value>& v) -> std::vector<Value> {
        return {hlo::add(rb, v[0], v[2]), hlo::max(rb, v[1], v[3])};
      });
  int64_t oh = out_size(h, 1, 1, 1, 3, 1, 2), ow = out_size(w, 1, 0, 2, 2, 2, 1);
  REQUIRE_EQ(r[0].shape(), (Shape{oh, ow}));
  b.set_results(r);
  std::vector<HostArray> out =
      tpu::testing::run(b, {HostArray::of(DType::F64, {h, w}, a), HostArray::of(DType::F64, {h, w}, bv)});
  std::vector<double> sums = out.at(0).as<double>(), maxes = out.at(1).as<double>();
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) {
      double s = 0, m = -INFINITY;
      for (int64_t ki = 0; ki < 3; ++ki)
        for (int64_t kj = 0; kj < 2; ++kj) {
          int64_t yi = i * 2 + ki - 1, xj = j + kj * 2;
          if (yi < 0 || yi >= h || xj >= w) continue;
          s += a[yi * w + xj];
          m = std::max(m, bv[yi * w + xj]);
        }
      CHECK(std::fabs(sums[i * ow + j] - s) < 1e-12);
      CHECK_EQ(maxes[i * ow + j], m);
    }
}

}  // namespace
