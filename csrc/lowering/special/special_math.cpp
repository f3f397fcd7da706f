#include "lowering/special/special_math.h"

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

// erf(x) / x as a polynomial in x^2 on |x| < 1 (highest degree first).
const std::vector<double> kErfSmallF32 = {-0.00056480598655030438, 0.0049217620278772306,
                                          -0.02671505423226643,    0.11280316652505075,
                                          -0.37612343775327806,    1.1283791261787373};
const std::vector<double> kErfSmallF64 = {
    -7.7958988270021425e-10, 1.3720064546777686e-08, -1.6208483801871705e-07, 1.6447424703317362e-06,
    -1.4924736907419661e-05, 0.00012055294904839707, -0.00085483259753896918, 0.0052239776071164225,
    -0.02686617064323777,    0.11283791670945006,    -0.37612638903183543,    1.1283791670955126};

// erfcx(x) * (1 + 2x) = sum c_k T_k(u), u = (x - 3) / (x + 3), for x >= 0 (c_0 first). The
// map sends [0, inf) onto [-1, 1) and the scaled function is smooth there (it tends to
// 2/sqrt(pi)), so one Chebyshev series covers the whole half line.
constexpr double kErfcxMap = 3.0;
const std::vector<double> kErfcxF32 = {
    1.1775625741965599,     0.0053539045396154439,   -0.093775503422840564,   0.054366525557450508,
    -0.018976596707864942,  0.0044534260612813662,   -0.00063355317084739225, 1.7661723800511662e-05,
    1.2841531388340695e-05, -2.0073321819804512e-06, -1.8073767825028438e-07, 7.81978024880493e-08};
const std::vector<double> kErfcxF64 = {
    1.1775625741965601,     0.0053539045396156764,   -0.093775503422842091,   0.054366525557443222,
    -0.018976596707845208,  0.0044534260614627116,   -0.00063355317105531469, 1.7661719523171593e-05,
    1.2841532864056671e-05, -2.0072285659059913e-06, -1.8075227904148371e-07, 7.5498283438250929e-08,
    1.8856685238386075e-09, -2.6995190497983606e-09, -1.4600791199452298e-11, 1.0361607445947687e-10,
    1.4757159770209444e-12, -4.2773400598078697e-12, -2.0792248770657395e-13, 1.8134495557053007e-13,
    1.9734011425331616e-14, -7.2873890491200742e-15, -1.5113792608039483e-15, 2.3719837540476787e-16};

// erfinv(a) / a in the form of Giles ("Approximating the erfinv function"), with our own
// fitted coefficients: with w = -log((1 - a)(1 + a)), a polynomial in w - 2.5 for w < 5 and
// in sqrt(w) - 3 beyond (highest degree first). The f64 fit covers a up to 1 - 2^-53.
const std::vector<double> kErfinvWF32 = {
    2.2605977741170975e-08,  3.4222470899345687e-07, -3.4547795142697842e-06,
    -4.3803467141237499e-06, 0.00021831297984101024, -0.0012537588848353181,
    -0.0041773465172870563,  0.2466407662672499,     1.501409351110792};
const std::vector<double> kErfinvSF32 = {
    -0.00012933680443335689, 4.4285985721436482e-05, 0.0012602803866985318,
    -0.0036138097206789874,  0.0057765205388935993,  -0.0076400520449146029,
    0.0094335998791791765,   1.0016753470320994,     2.8329770445012432};
const std::vector<double> kErfinvWF64 = {
    4.6719325090386648e-10,  -8.7390107028301222e-09, 1.5984306133900061e-08, 4.6541741050231655e-07,
    -3.4234142742220455e-06, -4.9596917942159365e-06, 0.00021825772396383332, -0.0012527485028416628,
    -0.0041773200405401216,  0.24664028942745514,     1.501409351110792};
const std::vector<double> kErfinvSF64 = {
    -3.6434517005877483e-07, 5.9303904358941366e-06,  -4.0017164951980616e-05, 0.00013890686474390894,
    -0.00022079183056561368, -0.00012277995923291507, 0.0014157324981294609,   -0.003547682186878448,
    0.005711131054197769,    -0.0076507111973941428,  0.0094417460417314213,   1.001675917474776,
    2.8329769056133327};

bool is_f64(const Value& x) { return x.dtype() == DType::F64; }

// exp(-x^2) without the error of rounding x^2: x = hi + lo with hi a multiple of 1/16, so
// hi^2 is exact (x is capped far below 2^8) and x^2 = hi^2 + lo * (x + hi). Rounding x^2
// directly would cost a relative error of x^2 * eps, ~100 ulp for f32 near x = 10.
Value exp_neg_square(Builder& b, const Value& x) {
  Value hi = ew::mul_c(b, hlo::round_nearest_even(b, ew::mul_c(b, x, 16)), 1.0 / 16);
  Value lo = hlo::sub(b, x, hi);
  Value e_hi = ew::exp(b, hlo::neg(b, hlo::mul(b, hi, hi)));
  // 1 + expm1 rather than exp: XLA rewrites exp(a) * exp(b) into exp(a + b), which would undo
  // the split.
  Value e_lo = ew::add_c(b, ew::expm1(b, hlo::neg(b, hlo::mul(b, lo, hlo::add(b, x, hi)))), 1);
  return hlo::mul(b, e_hi, e_lo);
}

// erfcx(a) (1 + 2a) for a >= 0 as the Chebyshev series; beyond 1e20 the map is 1 to the last
// bit (and inf would make it NaN).
Value erfcx_scaled(Builder& b, const Value& a) {
  Value capped = ew::minimum(b, a, cst(b, a, 1e20));
  Value u = hlo::div(b, ew::add_c(b, capped, -kErfcxMap), ew::add_c(b, capped, kErfcxMap));
  return chebyshev_series(b, u, is_f64(a) ? kErfcxF64 : kErfcxF32);
}

// erfc(a) for a >= 0 (NaN propagates).
Value erfc_nonneg(Builder& b, const Value& a) {
  // erfc underflows to 0 well before these bounds; capping keeps inf out of hi - lo.
  Value capped = ew::minimum(b, a, cst(b, a, is_f64(a) ? 30.0 : 12.0));
  Value s = erfcx_scaled(b, capped);
  Value scale = ew::add_c(b, ew::mul_c(b, capped, 2), 1);
  return hlo::div(b, hlo::mul(b, exp_neg_square(b, capped), s), scale);
}

// erf(x) for |x| < 1.
Value erf_small(Builder& b, const Value& x) {
  Value p = ew::polynomial(b, hlo::mul(b, x, x), is_f64(x) ? kErfSmallF64 : kErfSmallF32);
  return hlo::mul(b, x, p);
}

}  // namespace

// Clenshaw summation of sum c_k T_k(u).
Value chebyshev_series(Builder& b, const Value& u, const std::vector<double>& c) {
  Value b1 = cst(b, u, 0), b2 = cst(b, u, 0);
  Value two_u = ew::mul_c(b, u, 2);
  for (size_t k = c.size() - 1; k >= 1; --k) {
    Value next = ew::add_c(b, hlo::sub(b, hlo::mul(b, two_u, b1), b2), c[k]);
    b2 = b1;
    b1 = next;
  }
  return ew::add_c(b, hlo::sub(b, hlo::mul(b, u, b1), b2), c[0]);
}

Value erfc(Builder& b, const Value& x) {
  Value r = erfc_nonneg(b, abs(b, x));
  return hlo::select(b, ew::lt(b, x, 0), hlo::sub(b, cst(b, x, 2), r), r);
}

Value erf(Builder& b, const Value& x) {
  Value a = abs(b, x);
  // Beyond |x| = 1, 1 - erfc loses nothing (erfc(1) = 0.157) and reaches 1 exactly.
  Value big = ew::copysign(b, hlo::sub(b, cst(b, x, 1), erfc_nonneg(b, a)), x);
  return hlo::select(b, ew::lt(b, a, 1), erf_small(b, x), big);
}

namespace {

// erfinv(a) for a = |y| in [0, 1], given also 1 - a (exact in the caller's terms).
Value erfinv_abs(Builder& b, const Value& a, const Value& one_minus_a) {
  bool f64 = is_f64(a);
  const std::vector<double>& pw = f64 ? kErfinvWF64 : kErfinvWF32;
  const std::vector<double>& ps = f64 ? kErfinvSF64 : kErfinvSF32;
  Value w = hlo::neg(b, ew::log(b, hlo::mul(b, one_minus_a, hlo::sub(b, cst(b, a, 2), one_minus_a))));
  Value central = ew::lt(b, w, 5);
  Value t = hlo::select(b, central, ew::add_c(b, w, -2.5), ew::add_c(b, ew::sqrt(b, w), -3));
  // One Horner pass whose coefficients are chosen per element (shorter list padded with 0).
  size_t n = std::max(pw.size(), ps.size());
  auto coeff = [&](size_t i, const std::vector<double>& c) {
    size_t pad = n - c.size();
    return i < pad ? 0.0 : c[i - pad];
  };
  Value p;
  for (size_t i = 0; i < n; ++i) {
    Value c = hlo::select(b, central, cst(b, t, coeff(i, pw)), cst(b, t, coeff(i, ps)));
    p = i == 0 ? c : hlo::add(b, hlo::mul(b, p, t), c);
  }
  Value x = hlo::mul(b, p, a);
  if (f64) {
    // Newton on erf(x) = a. The residual uses erfc near 1, where 1 - a is exact and erf(x) - a
    // would cancel; below a = 0.5, x < 0.48 so erf is the small-argument polynomial.
    Value near_zero = ew::lt(b, a, 0.5);
    for (int step = 0; step < 2; ++step) {
      Value r = hlo::select(b, near_zero, hlo::sub(b, erf_small(b, x), a),
                            hlo::sub(b, one_minus_a, erfc_nonneg(b, x)));
      Value slope = ew::mul_c(b, ew::exp(b, hlo::neg(b, hlo::mul(b, x, x))), 2 / std::sqrt(M_PI));
      x = hlo::sub(b, x, hlo::div(b, r, slope));
    }
  }
  // Far below 1e-150, erfinv(a) = a sqrt(pi) / 2 to the last bit, while the Newton residuals
  // above would be subnormal (flushed to zero by XLA) and leave the initial guess's error.
  Value linear = ew::mul_c(b, a, std::sqrt(M_PI) / 2);
  x = hlo::select(b, ew::lt(b, a, f64 ? 1e-150 : 1e-30), linear, x);
  return hlo::select(b, ew::eq(b, one_minus_a, 0), cst(b, a, std::numeric_limits<double>::infinity()), x);
}

}  // namespace

Value erfinv(Builder& b, const Value& y) {
  Value a = abs(b, y);
  return ew::copysign(b, erfinv_abs(b, a, hlo::sub(b, cst(b, a, 1), a)), y);
}

Value ndtri(Builder& b, const Value& p) {
  Value one_minus_a = ew::mul_c(b, ew::minimum(b, p, hlo::sub(b, cst(b, p, 1), p)), 2);
  Value a = hlo::sub(b, cst(b, p, 1), one_minus_a);
  Value x = erfinv_abs(b, a, one_minus_a);
  if (!is_f64(p)) {
    // One Newton step on the tail probability min(p, 1 - p) = erfc(x) / 2 (exact on both
    // sides), which takes f32 from erfinv's 3 ulp to ~1 ulp: the gradient exp(ndtri^2 / 2)
    // multiplies a relative error by ndtri^2 (9 near p = 0.999).
    Value tail = ew::mul_c(b, one_minus_a, 0.5);
    Value r = hlo::sub(b, ew::mul_c(b, erfc_nonneg(b, x), 0.5), tail);
    Value step = hlo::mul(b, ew::mul_c(b, r, std::sqrt(M_PI)), ew::exp(b, hlo::mul(b, x, x)));
    Value refined = hlo::add(b, x, step);
    x = hlo::select(b, ew::and_(b, ew::gt(b, tail, 0), ew::lt(b, x, 9)), refined, x);
    // Below 1e-7, beyond the f32 erfinv fit (whose inputs never get that close to 1): start
    // from the asymptotic x^2 = L - log(pi L) / 2, L = -log(erfc x), and take Newton steps on
    // log erfc(x) = log erfcx(x) - x^2, which is nearly quadratic in x.
    Value log_target = ew::log(b, one_minus_a);
    Value big_l = hlo::neg(b, log_target);
    Value t = ew::sqrt(b, hlo::sub(b, big_l, ew::mul_c(b, ew::log(b, ew::mul_c(b, big_l, M_PI)), 0.5)));
    for (int i = 0; i < 3; ++i) {
      Value ex = hlo::div(b, erfcx_scaled(b, t), ew::add_c(b, ew::mul_c(b, t, 2), 1));
      Value f = hlo::sub(b, hlo::sub(b, ew::log(b, ex), hlo::mul(b, t, t)), log_target);
      t = hlo::add(b, t, ew::mul_c(b, hlo::mul(b, f, ex), std::sqrt(M_PI) / 2));
    }
    Value far = ew::and_(b, ew::lt(b, one_minus_a, 1e-7), ew::gt(b, one_minus_a, 0));
    x = hlo::select(b, far, t, x);
  }
  return ew::copysign(b, ew::mul_c(b, x, std::sqrt(2.0)), ew::add_c(b, p, -0.5));
}

Value erfcx(Builder& b, const Value& x) {
  Value a = abs(b, x);
  Value pos = hlo::div(b, erfcx_scaled(b, a), ew::add_c(b, ew::mul_c(b, a, 2), 1));
  pos = hlo::select(b, ew::eq(b, a, std::numeric_limits<double>::infinity()), cst(b, a, 0), pos);
  // erfcx(-a) = 2 e^(a^2) - erfcx(a); e^(a^2) overflows (to the right inf) first. a^2 is
  // rounded before exp as in PyTorch's CPU kernel, whose results (up to 40 ulp off for f32
  // near a = 9, where exp_neg_square's split would be exact) are the reference to match.
  Value neg = hlo::sub(b, ew::mul_c(b, ew::exp(b, hlo::mul(b, a, a)), 2), pos);
  return hlo::select(b, ew::lt(b, x, 0), neg, pos);
}

}  // namespace tpu::lowering::special
