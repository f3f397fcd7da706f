// Unit tests of lowering/gamma_math and lowering/bessel_math: lgamma and the Bessel functions
// run on the plugin over dense grids, compared with long double references from libm and
// libstdc++'s C++17 special functions (std::lgammal, std::cyl_bessel_*l, std::cyl_neumannl).
//
// These functions have zeros (lgamma at 1 and 2, J and Y everywhere) where relative error is
// meaningless, so the error is measured in ulps of max(|reference|, 1): relative for large
// values, absolute (in units of eps) near the zeros.
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "lowering/special/bessel_math.h"
#include "lowering/special/gamma_math.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::ir::Builder;
using tpu::ir::DType;
using tpu::ir::Type;
using tpu::ir::Value;
using tpu::testing::HostArray;
using Fn = Value (*)(Builder&, const Value&);
using tpu::testing::run_unary;
using Ref = long double (*)(long double);

std::vector<double> grid(double lo, double hi, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(lo + (hi - lo) * i / (n - 1));
  return v;
}

void check(Fn fn, Ref ref, std::vector<double> xs, DType dtype, double limit, const char* what) {
  if (dtype == DType::F32)
    for (double& v : xs) v = static_cast<float>(v);
  std::vector<double> got = run_unary(fn, dtype, xs);
  double eps =
      dtype == DType::F32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  double worst = 0, at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    long double want = ref(xs[i]);
    if (!std::isfinite(static_cast<double>(want))) continue;
    double err = static_cast<double>(std::fabs(got[i] - want) / std::max(std::fabs(want), 1.0L)) / eps;
    if (!(err <= worst)) worst = err, at = xs[i];
  }
  if (!(worst <= limit)) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s: %.3g ulp at x = %.17g", what, worst, at);
    tpu::testing::fail(__FILE__, __LINE__, msg);
  }
}

long double lgamma_ref(long double x) { return std::lgamma(x); }
long double i0_ref(long double x) { return std::cyl_bessel_i(0.0L, std::fabs(x)) * std::exp(-std::fabs(x)); }
long double i1_ref(long double x) {
  return std::copysign(std::cyl_bessel_i(1.0L, std::fabs(x)) * std::exp(-std::fabs(x)), x);
}
long double k0_ref(long double x) { return std::cyl_bessel_k(0.0L, x); }
long double k1_ref(long double x) { return std::cyl_bessel_k(1.0L, x); }
long double j0_ref(long double x) { return std::cyl_bessel_j(0.0L, std::fabs(x)); }
long double j1_ref(long double x) {
  long double j = std::cyl_bessel_j(1.0L, std::fabs(x));  // J1 is odd
  return x < 0 ? -j : j;
}
long double y0_ref(long double x) { return std::cyl_neumann(0.0L, x); }
long double y1_ref(long double x) { return std::cyl_neumann(1.0L, x); }

Value k0(Builder& b, const Value& x) { return tpu::lowering::special::bessel_k0(b, x, false); }
Value k1(Builder& b, const Value& x) { return tpu::lowering::special::bessel_k1(b, x, false); }

namespace sp = tpu::lowering::special;

TEST(GammaMath, LgammaAccuracy) {
  // Negative arguments stay 0.02 away from the poles, where lgamma's condition number is large.
  std::vector<double> xs = grid(0.001, 40, 4001);
  for (double x : grid(-9.98, -0.02, 2001))
    if (std::fabs(x - std::round(x)) > 0.02) xs.push_back(x);
  for (double x : {1e3, 1e6, 1e10, 1e20, 1e30}) xs.push_back(x);
  check(sp::lgamma, lgamma_ref, xs, DType::F32, 16, "lgamma f32");
  check(sp::lgamma, lgamma_ref, xs, DType::F64, 16, "lgamma f64");
}

TEST(BesselMath, Accuracy) {
  std::vector<double> both = grid(-60, 60, 3001), pos = grid(0.01, 60, 3001);
  for (DType dtype : {DType::F32, DType::F64}) {
    bool f32 = dtype == DType::F32;
    check(sp::bessel_i0e, i0_ref, both, dtype, 8, f32 ? "i0e f32" : "i0e f64");
    check(sp::bessel_i1e, i1_ref, both, dtype, 8, f32 ? "i1e f32" : "i1e f64");
    check(k0, k0_ref, pos, dtype, 8, f32 ? "k0 f32" : "k0 f64");
    check(k1, k1_ref, pos, dtype, 8, f32 ? "k1 f32" : "k1 f64");
    check(sp::bessel_j0, j0_ref, both, dtype, 8, f32 ? "j0 f32" : "j0 f64");
    check(sp::bessel_j1, j1_ref, both, dtype, 8, f32 ? "j1 f32" : "j1 f64");
    check(sp::bessel_y0, y0_ref, pos, dtype, 8, f32 ? "y0 f32" : "y0 f64");
    check(sp::bessel_y1, y1_ref, pos, dtype, 8, f32 ? "y1 f32" : "y1 f64");
  }
}

}  // namespace
