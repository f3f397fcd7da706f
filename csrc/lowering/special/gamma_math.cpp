#include "lowering/special/gamma_math.h"

#include <cmath>
#include <limits>
#include <vector>

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/hlo.h"

namespace tpu::lowering::special {

namespace {

using ew::cst;
using ir::Builder;
using ir::DType;
using ir::Value;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kNegativeShift = 64;  // zeta(s, q) supports q >= -64

bool is_f64(const Value& x) { return x.dtype() == DType::F64; }

// Lanczos approximation Gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^-t (c_0 + sum_k c_k / (z + k)),
// t = z + g + 1/2, with c fitted by least squares in relative error over z in [-0.5, 400]
// (tools/fit_gamma_math.py). Maximum relative error of the series itself: 2.3e-11 (f32 set,
// g = 4.5) and 2.7e-18 (f64 set, g = 7); beyond the fitted range the series only tends to c_0,
// which the form already carries.
constexpr double kLanczosGF32 = 4.5;
const std::vector<double> kLanczosF32 = {1.0000000000178785, 43.563020988907294,   -41.63661418777503,
                                         8.3376663660448098, -0.18076837927576957, 2.8541198434271575e-5};
constexpr double kLanczosGF64 = 7.0;
const std::vector<double> kLanczosF64 = {1.0,
                                         676.52036812188351,
                                         -1259.1392167222735,
                                         771.32342877512343,
                                         -176.6150291416794,
                                         12.507343194921825,
                                         -0.13857090660664683,
                                         9.7476144843013779e-6,
                                         3.0562906791379085e-7,
                                         -4.1279441133816282e-8};

// Bernoulli numbers B_2, B_4, ..., B_24 (exact rationals).
const std::vector<double> kBernoulliEven = {
    1.0 / 6, -1.0 / 30,     1.0 / 42,      -1.0 / 30,       5.0 / 66,       -691.0 / 2730,
    7.0 / 6, -3617.0 / 510, 43867.0 / 798, -174611.0 / 330, 854513.0 / 138, -236364091.0 / 2730};

// lgamma(x) for x >= 0.5. Written as (z + 1/2)(log t - 1) - g rather than
// (z + 1/2) log t - t, which overflows while lgamma is still finite (x ~ 4e36 in f32).
Value lgamma_lanczos(Builder& b, const Value& x) {
  bool f64 = is_f64(x);
  const std::vector<double>& c = f64 ? kLanczosF64 : kLanczosF32;
  double g = f64 ? kLanczosGF64 : kLanczosGF32;
  Value z = ew::add_c(b, x, -1);
  Value s = cst(b, z, c[0]);
  for (size_t k = 1; k < c.size(); ++k)
    s = hlo::add(b, s, hlo::div(b, cst(b, z, c[k]), ew::add_c(b, z, static_cast<double>(k))));
  Value t = ew::add_c(b, z, g + 0.5);
  Value main = hlo::mul(b, ew::add_c(b, z, 0.5), ew::add_c(b, ew::log(b, t), -1));
  return hlo::add(b, ew::add_c(b, main, 0.5 * std::log(2 * M_PI) - g), ew::log(b, s));
}

// x - round(x), in [-1/2, 1/2] and exact: sin(pi x) and tan(pi x) from it keep their relative
// accuracy near the integers, where pi * x itself would have lost it.
Value distance_to_integer(Builder& b, const Value& x) {
  return hlo::sub(b, x, hlo::round_nearest_even(b, x));
}

Value sin_pi(Builder& b, const Value& r) { return hlo::sin(b, ew::mul_c(b, r, M_PI)); }
Value cos_pi(Builder& b, const Value& r) { return hlo::cos(b, ew::mul_c(b, r, M_PI)); }

Value is_integer(Builder& b, const Value& x) { return hlo::compare(b, x, hlo::floor(b, x), "EQ"); }

// digamma(y) for y > 0: the recurrence psi(y) = psi(y + 1) - 1/y lifts y to >= 10, where the
// asymptotic series log y - 1/(2y) - sum B_2k / (2k y^2k) is accurate to f64 precision.
Value digamma_pos(Builder& b, const Value& x) {
  Value y = x, acc = cst(b, x, 0);
  for (int i = 0; i < 10; ++i) {
    Value small = ew::lt(b, y, 10);
    acc = hlo::add(b, acc, hlo::select(b, small, hlo::div(b, cst(b, y, 1), y), cst(b, y, 0)));
    y = hlo::select(b, small, ew::add_c(b, y, 1), y);
  }
  Value z = hlo::div(b, cst(b, y, 1), hlo::mul(b, y, y));
  std::vector<double> coeffs;  // B_2k / (2k), highest power of z first
  for (int k = 7; k >= 1; --k) coeffs.push_back(kBernoulliEven[k - 1] / (2 * k));
  Value series = hlo::mul(b, z, ew::polynomial(b, z, coeffs));
  Value r = hlo::sub(b, ew::log(b, y), hlo::div(b, cst(b, y, 0.5), y));
  return hlo::sub(b, hlo::sub(b, r, series), acc);
}

// (q + k)^-s, also for negative q + k when s is an integer (zeta's domain for q < 0).
Value pow_neg_s(Builder& b, const Value& v, const Value& neg_s, const Value& s_odd) {
  Value mag = hlo::power(b, abs(b, v), neg_s);
  return hlo::select(b, ew::and_(b, ew::lt(b, v, 0), s_odd), hlo::neg(b, mag), mag);
}

}  // namespace

Value lgamma(Builder& b, const Value& x) {
  Value reflect = ew::lt(b, x, 0.5);
  Value y = hlo::select(b, reflect, hlo::sub(b, cst(b, x, 1), x), x);
  Value lg = lgamma_lanczos(b, y);
  // Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x).
  Value sin_abs = abs(b, sin_pi(b, distance_to_integer(b, x)));
  Value reflected = hlo::sub(b, hlo::sub(b, cst(b, x, std::log(M_PI)), ew::log(b, sin_abs)), lg);
  Value r = hlo::select(b, reflect, reflected, lg);
  // Poles at 0, -1, -2, ... and lgamma(-inf) = +inf.
  Value pole = ew::and_(b, ew::le(b, x, 0), is_integer(b, x));
  return hlo::select(b, pole, cst(b, x, kInf), r);
}

Value digamma(Builder& b, const Value& x) {
  Value neg = ew::lt(b, x, 0);
  Value y = hlo::select(b, neg, hlo::sub(b, cst(b, x, 1), x), x);
  Value d = digamma_pos(b, y);
  // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x).
  Value r = distance_to_integer(b, x);
  Value pi_cot = ew::mul_c(b, hlo::div(b, cos_pi(b, r), sin_pi(b, r)), M_PI);
  Value out = hlo::select(b, neg, hlo::sub(b, d, pi_cot), d);
  out = hlo::select(b, ew::and_(b, neg, is_integer(b, x)), cst(b, x, kNaN), out);
  // psi(+-0) = -+inf, as C's tgamma poles.
  Value signed_inf = ew::copysign(b, cst(b, x, kInf), hlo::neg(b, x));
  return hlo::select(b, ew::eq(b, x, 0), signed_inf, out);
}

Value trigamma(Builder& b, const Value& x) {
  Value reflect = ew::lt(b, x, 0.5);
  // pi and pi^2 rounded to the working type as the CPU kernel's constants are.
  double pi_t = is_f64(x) ? M_PI : static_cast<double>(static_cast<float>(M_PI));
  double pi2 =
      is_f64(x) ? M_PI * M_PI : static_cast<double>(static_cast<float>(pi_t) * static_cast<float>(pi_t));
  Value sp = hlo::sin(b, ew::mul_c(b, x, pi_t));
  Value acc = hlo::select(b, reflect, hlo::div(b, cst(b, x, -pi2), hlo::mul(b, sp, sp)), cst(b, x, 0));
  Value y = hlo::select(b, reflect, hlo::sub(b, cst(b, x, 1), x), x);
  Value one = cst(b, x, 1);
  for (int i = 0; i < 6; ++i) {
    acc = hlo::add(b, acc, hlo::div(b, one, hlo::mul(b, y, y)));
    y = ew::add_c(b, y, 1);
  }
  // 1/y + 1/(2y^2) + sum B_2k / y^(2k+1), truncated after B_6.
  Value ixx = hlo::div(b, one, hlo::mul(b, y, y));
  Value p = hlo::sub(b, cst(b, y, 1.0 / 30), hlo::mul(b, ixx, cst(b, y, 1.0 / 42)));
  p = hlo::sub(b, cst(b, y, 1.0 / 6), hlo::mul(b, ixx, p));
  Value inner = hlo::add(b, ew::add_c(b, hlo::div(b, one, ew::mul_c(b, y, 2)), 1), hlo::mul(b, ixx, p));
  acc = hlo::add(b, acc, hlo::div(b, inner, y));
  return hlo::select(b, reflect, hlo::neg(b, acc), acc);
}

// Integer q <= 0 are poles (inf), handled for every q.
Value zeta_unsupported(Builder& b, const Value& q) {
  return ew::and_(b, ew::lt(b, q, -kNegativeShift), ew::not_(b, is_integer(b, q)));
}

Value zeta(Builder& b, const Value& s, const Value& q) {
  constexpr int kTerms = 12;  // direct terms before the Euler-Maclaurin tail
  constexpr int kTail = 12;   // Bernoulli terms of the tail
  Value neg_s = hlo::neg(b, s);
  Value half_s = ew::mul_c(b, s, 0.5);
  Value s_odd = ew::and_(b, is_integer(b, s), ew::not_(b, is_integer(b, half_s)));
  // Negative q (integer s only): the terms (q + k)^-s for k < m = ceil(-q) are summed
  // directly (masked, up to kNegativeShift of them), leaving zeta(s, q + m) with q + m >= 0.
  Value m = hlo::select(b, ew::lt(b, q, 0), hlo::ceil(b, hlo::neg(b, q)), cst(b, q, 0));
  Value sum = cst(b, s, 0);
  for (int k = 0; k < kNegativeShift; ++k) {
    Value term = pow_neg_s(b, ew::add_c(b, q, k), neg_s, s_odd);
    sum = hlo::add(b, sum, hlo::select(b, ew::gt(b, m, k), term, cst(b, term, 0)));
  }
  Value q_shifted = hlo::add(b, q, m);
  for (int k = 0; k < kTerms; ++k)
    sum = hlo::add(b, sum, pow_neg_s(b, ew::add_c(b, q_shifted, k), neg_s, s_odd));
  // Tail from a = q + N: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)..(s+2j-2) a^(-s-2j+1).
  Value a = ew::add_c(b, q_shifted, kTerms);
  Value pw = pow_neg_s(b, a, neg_s, s_odd);
  Value tail = hlo::add(b, hlo::div(b, hlo::mul(b, pw, a), ew::add_c(b, s, -1)), ew::mul_c(b, pw, 0.5));
  Value inv_a = hlo::div(b, cst(b, a, 1), a);
  Value inv_a2 = hlo::mul(b, inv_a, inv_a);
  Value fac = s, pa = hlo::mul(b, pw, inv_a);
  double factorial = 1;  // (2j)!
  for (int j = 1; j <= kTail; ++j) {
    factorial *= (2.0 * j - 1) * (2.0 * j);
    tail = hlo::add(b, tail, ew::mul_c(b, hlo::mul(b, fac, pa), kBernoulliEven[j - 1] / factorial));
    fac = hlo::mul(b, fac, hlo::mul(b, ew::add_c(b, s, 2.0 * j - 1), ew::add_c(b, s, 2.0 * j)));
    pa = hlo::mul(b, pa, inv_a2);
  }
  Value r = hlo::add(b, sum, tail);
  // Domain, as the CPU kernel: s == 1 and integer q <= 0 are poles; s < 1, non-integer s with
  // q < 0, and q = +inf (0 * inf in its tail) are NaN.
  Value q_nonpos = ew::le(b, q, 0);
  Value nan = cst(b, r, kNaN), inf = cst(b, r, kInf);
  r = hlo::select(b, ew::and_(b, q_nonpos, ew::not_(b, is_integer(b, s))), nan, r);
  r = hlo::select(b, ew::eq(b, q, kInf), nan, r);
  r = hlo::select(b, ew::and_(b, q_nonpos, is_integer(b, q)), inf, r);
  r = hlo::select(b, ew::lt(b, s, 1), nan, r);
  return hlo::select(b, ew::eq(b, s, 1), inf, r);
}

constexpr int kIncompleteGammaTerms = 80;

Value incomplete_gamma_unsupported(Builder& b, const Value& a, const Value& x) {
  Value near = ew::and_(b, hlo::compare(b, x, ew::mul_c(b, a, 0.5), "GT"),
                        hlo::compare(b, x, ew::mul_c(b, a, 2), "LT"));
  return ew::and_(b, ew::gt(b, a, 150), near);
}

Value incomplete_gamma(Builder& b, const Value& a, const Value& x, bool upper) {
  // x^a e^-x / Gamma(a), the common prefactor. Its exponent a log x - x - lgamma(a) cancels
  // badly for large a (terms ~ a log a, result ~ (x - a)^2 / a), so from a = 10 on it is
  // rearranged with Stirling's series: a (log1p(rel) - rel) + log(a / 2 pi) / 2 - r(a),
  // rel = (x - a) / a, r(a) = 1/(12a) - 1/(360a^3) + 1/(1260a^5) - 1/(1680a^7).
  Value direct = hlo::sub(b, hlo::sub(b, hlo::mul(b, a, ew::log(b, x)), x), lgamma(b, a));
  Value big_a = ew::maximum(b, a, cst(b, a, 10));
  Value rel = hlo::div(b, hlo::sub(b, x, big_a), big_a);
  Value inv = hlo::div(b, cst(b, a, 1), big_a), inv2 = hlo::mul(b, inv, inv);
  Value remainder =
      hlo::mul(b, inv, ew::polynomial(b, inv2, {-1.0 / 1680, 1.0 / 1260, -1.0 / 360, 1.0 / 12}));
  Value stirling = hlo::mul(b, big_a, hlo::sub(b, ew::log1p(b, rel), rel));
  stirling = hlo::add(b, stirling, ew::mul_c(b, ew::log(b, ew::mul_c(b, big_a, 1 / (2 * M_PI))), 0.5));
  stirling = hlo::sub(b, stirling, remainder);
  Value pre = ew::exp(b, hlo::select(b, ew::ge(b, a, 10), stirling, direct));
  // Series P = pre / a * sum_n x^n / ((a + 1) ... (a + n)).
  Value term = cst(b, x, 1), sum = cst(b, x, 1);
  for (int n = 1; n < kIncompleteGammaTerms; ++n) {
    term = hlo::mul(b, term, hlo::div(b, x, ew::add_c(b, a, n)));
    sum = hlo::add(b, sum, term);
  }
  Value p_series = hlo::div(b, hlo::mul(b, pre, sum), a);
  // Continued fraction Q = pre / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)), by
  // the modified Lentz method.
  constexpr double kTiny = 1e-30;
  Value tiny = cst(b, x, kTiny);
  auto guard = [&](const Value& v) { return hlo::select(b, ew::lt(b, abs(b, v), kTiny), tiny, v); };
  Value bk = hlo::sub(b, ew::add_c(b, x, 1), a);
  Value c = cst(b, x, 1 / kTiny);
  Value d = hlo::div(b, cst(b, x, 1), guard(bk));
  Value h = d;
  for (int i = 1; i < kIncompleteGammaTerms; ++i) {
    Value an = hlo::mul(b, cst(b, a, -i), hlo::sub(b, cst(b, a, i), a));  // -i (i - a)
    bk = ew::add_c(b, bk, 2);
    d = hlo::div(b, cst(b, x, 1), guard(hlo::add(b, hlo::mul(b, an, d), bk)));
    c = guard(hlo::add(b, bk, hlo::div(b, an, c)));
    h = hlo::mul(b, h, hlo::mul(b, d, c));
  }
  Value q_fraction = hlo::mul(b, pre, h);
  Value use_series = hlo::compare(b, x, ew::add_c(b, a, 1), "LT");
  Value one = cst(b, x, 1);
  Value r = upper ? hlo::select(b, use_series, hlo::sub(b, one, p_series), q_fraction)
                  : hlo::select(b, use_series, p_series, hlo::sub(b, one, q_fraction));
  // Boundaries as the CPU kernels (P shown; Q = 1 - P): x = inf -> 1; a = inf -> 0 (NaN if x
  // is inf too); x = 0 -> 0; a = 0 -> 1 for x > 0, NaN at x = 0; negative arguments NaN.
  double lo = upper ? 1 : 0, hi = upper ? 0 : 1;
  Value nan = cst(b, x, kNaN);
  r = hlo::select(b, ew::eq(b, x, kInf), cst(b, x, hi), r);
  r = hlo::select(b, ew::eq(b, a, kInf), hlo::select(b, ew::eq(b, x, kInf), nan, cst(b, x, lo)), r);
  r = hlo::select(b, ew::eq(b, x, 0), cst(b, x, lo), r);
  r = hlo::select(b, ew::eq(b, a, 0), hlo::select(b, ew::gt(b, x, 0), cst(b, x, hi), nan), r);
  return hlo::select(b, ew::or_(b, ew::lt(b, x, 0), ew::lt(b, a, 0)), nan, r);
}

Value polygamma(Builder& b, int64_t n, const Value& x) {
  if (n == 0) return digamma(b, x);
  if (n == 1) return trigamma(b, x);
  // (-1)^(n+1) n! zeta(n + 1, x)
  double scale = std::tgamma(static_cast<double>(n) + 1) * (n % 2 ? 1 : -1);
  return ew::mul_c(b, zeta(b, cst(b, x, static_cast<double>(n) + 1), x), scale);
}

}  // namespace tpu::lowering::special
