// Unit tests of lowering/special_math: erf, erfc and erfinv run on the plugin over dense grids
// and compared in ulps with references computed here in long double (libm's erf/erfc, and
// erfinv by Newton iteration on erfl).
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "lowering/special/special_math.h"
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

constexpr double kInf = std::numeric_limits<double>::infinity();

long double erfinv_reference(long double y) {
  if (std::fabs(y) >= 1) return y == 1 ? kInf : y == -1 ? -kInf : NAN;
  if (y == 0) return y;
  if (y < 0) return -erfinv_reference(-y);
  // Bisection to a bracket, then Newton in long double.
  long double lo = -7, hi = 7;
  for (int i = 0; i < 80; ++i) {
    long double mid = (lo + hi) / 2;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  long double x = (lo + hi) / 2;
  // Bisection resolves only ~1e-23 absolutely; small arguments start from the linear term.
  if (std::fabs(y) < 0.5L) x = y * std::sqrt(3.14159265358979323846264338327950288L) / 2;
  for (int i = 0; i < 6; ++i) {
    long double r = y > 0.5L ? (1 - y) - std::erfc(x) : std::erf(x) - y;
    x -= r / (2 / std::sqrt(3.14159265358979323846264338327950288L) * std::exp(-x * x));
  }
  return x;
}

// Largest relative error in ulps of the dtype, over results of normal magnitude.
double max_ulps(Fn fn, long double (*ref)(long double), DType dtype, const std::vector<double>& xs_in,
                double* worst_x) {
  std::vector<double> xs = xs_in;
  if (dtype == DType::F32)
    for (double& v : xs) v = static_cast<float>(v);
  std::vector<double> got = run_unary(fn, dtype, xs);
  double eps =
      dtype == DType::F32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  double tiny = dtype == DType::F32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    long double want = ref(xs[i]);
    if (!(std::fabs(want) > tiny) || std::isinf(static_cast<double>(want))) continue;
    double err = static_cast<double>(std::fabs((got[i] - want) / want)) / eps;
    if (!(err <= worst)) {
      worst = err;
      *worst_x = xs[i];
    }
  }
  return worst;
}

std::vector<double> grid(double lo, double hi, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(lo + (hi - lo) * i / (n - 1));
  return v;
}

long double erf_ref(long double x) { return std::erf(x); }
long double erfc_ref(long double x) { return std::erfc(x); }

void check_accuracy(Fn fn, long double (*ref)(long double), const std::vector<double>& xs, DType dtype,
                    double limit, const char* what) {
  double at = 0;
  double ulps = max_ulps(fn, ref, dtype, xs, &at);
  if (!(ulps <= limit)) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s: %.3g ulp at x = %.17g", what, ulps, at);
    tpu::testing::fail(__FILE__, __LINE__, msg);
  }
}

TEST(SpecialMath, ErfAccuracy) {
  check_accuracy(tpu::lowering::special::erf, erf_ref, grid(-6, 6, 4001), DType::F32, 2, "erf f32");
  check_accuracy(tpu::lowering::special::erf, erf_ref, grid(-6, 6, 4001), DType::F64, 2, "erf f64");
}

TEST(SpecialMath, ErfcAccuracyIntoTheTail) {
  check_accuracy(tpu::lowering::special::erfc, erfc_ref, grid(-3, 9.2, 4001), DType::F32, 4, "erfc f32");
  check_accuracy(tpu::lowering::special::erfc, erfc_ref, grid(-3, 26.5, 4001), DType::F64, 4, "erfc f64");
}

TEST(SpecialMath, ErfinvAccuracyUpToOne) {
  for (DType dtype : {DType::F32, DType::F64}) {
    std::vector<double> ys = grid(-0.999, 0.999, 2001);
    int digits = dtype == DType::F32 ? 7 : 16;
    for (int k = 1; k <= 10 * digits; ++k) {
      double t = 1 - std::pow(10.0, -k / 10.0);
      ys.push_back(t);
      ys.push_back(-t);
    }
    ys.push_back(1e-30);
    ys.push_back(dtype == DType::F32 ? 1e-37 : 1e-300);  // Newton residuals here would be subnormal
    check_accuracy(tpu::lowering::special::erfinv, erfinv_reference, ys, dtype, 4,
                   dtype == DType::F32 ? "erfinv f32" : "erfinv f64");
  }
}

TEST(SpecialMath, SpecialValues) {
  for (DType dtype : {DType::F32, DType::F64}) {
    std::vector<double> xs = {kInf, -kInf, NAN, 0.0, -0.0, 1.0, -1.0, 2.0, 1e300};
    std::vector<double> erf = run_unary(tpu::lowering::special::erf, dtype, xs);
    std::vector<double> erfc = run_unary(tpu::lowering::special::erfc, dtype, xs);
    std::vector<double> inv = run_unary(tpu::lowering::special::erfinv, dtype, xs);
    CHECK_EQ(erf[0], 1.0);
    CHECK_EQ(erf[1], -1.0);
    CHECK(std::isnan(erf[2]));
    CHECK(erf[4] == 0 && std::signbit(erf[4]));
    CHECK_EQ(erfc[0], 0.0);
    CHECK_EQ(erfc[1], 2.0);
    CHECK(std::isnan(erfc[2]));
    CHECK_EQ(erfc[3], 1.0);
    CHECK_EQ(inv[5], kInf);
    CHECK_EQ(inv[6], -kInf);
    CHECK(std::isnan(inv[0]) && std::isnan(inv[2]) && std::isnan(inv[7]));
    CHECK(inv[4] == 0 && std::signbit(inv[4]));
  }
}

}  // namespace
