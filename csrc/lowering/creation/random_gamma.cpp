// Gamma-family samplers: _standard_gamma (torch.distributions.Gamma), _sample_dirichlet, and
// _standard_gamma_grad, the reparameterized gradient behind Gamma.rsample's backward.
//
// Gamma(alpha) by Marsaglia and Tsang's rejection method (exact) as CPU's sample_gamma runs it,
// with its boost for alpha < 1: Gamma(alpha) = Gamma(alpha + 1) * U^(1 / alpha). Samples are
// kept as logarithms until the end, so tiny samples of small alpha lose nothing: Dirichlet
// normalizes them as a softmax (no gamma underflows to 0 before the division). As on CPU, a
// gamma sample is at least the dtype's smallest normal number, which is also what alpha <= 0
// gives.
#include <cmath>
#include <limits>

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/reduce_util.h"
#include "lowering/creation/random_bits.h"
#include "lowering/creation/random_rejection.h"
#include "lowering/special/gamma_math.h"

namespace tpu::lowering {

namespace {

using namespace ew;  // NOLINT

DType compute_type(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

// log(Gamma(alpha) sample) for alpha > 0 (f32 or f64); -inf where alpha is not > 0.
Value log_gamma_sample(Builder& b, const Value& rng_state, const Value& alpha) {
  Value state = private_state(b, rng_state);
  Value valid = gt(b, alpha, 0);
  Value small = lt(b, alpha, 1);
  Value boost = next_uniform_open(b, state, alpha.shape(), alpha.dtype());
  Value log_scale = hlo::select(b, small, hlo::div(b, log(b, boost), alpha), cst(b, alpha, 0));
  Value a = hlo::select(b, small, add_c(b, alpha, 1), alpha);
  a = hlo::select(b, valid, a, cst(b, a, 1));  // keeps d and c finite for skipped elements
  Value d = add_c(b, a, -1.0 / 3.0);
  Value c = hlo::div(b, cst(b, d, 1), sqrt(b, mul_c(b, d, 9)));
  auto step = [](Builder& rb, Value& rng, const std::vector<Value>& p, const std::vector<Value>&) {
    const Value &d = p[0], &c = p[1];
    Value x = next_normal(rb, rng, d.shape(), d.dtype());
    Value u = next_uniform_open(rb, rng, d.shape(), d.dtype());
    Value y = add_c(rb, hlo::mul(rb, c, x), 1);
    Value v = hlo::mul(rb, hlo::mul(rb, y, y), y);
    Value xx = hlo::mul(rb, x, x);
    Value squeeze =
        hlo::compare(rb, u, hlo::sub(rb, cst(rb, u, 1), mul_c(rb, hlo::mul(rb, xx, xx), 0.0331)), "LT");
    Value bound = hlo::add(rb, mul_c(rb, xx, 0.5),
                           hlo::mul(rb, d, hlo::add(rb, hlo::sub(rb, cst(rb, v, 1), v), log(rb, v))));
    Value ok = and_(rb, gt(rb, y, 0), or_(rb, squeeze, hlo::compare(rb, log(rb, u), bound, "LT")));
    return RejectionStep{ok, hlo::mul(rb, d, v), {}};
  };
  Value dv = sample_until_accepted(b, state, not_(b, valid), cst(b, alpha, 1), {d, c}, {}, step);
  Value lg = hlo::add(b, log_scale, log(b, dv));
  return hlo::select(b, valid, lg, cst(b, lg, -std::numeric_limits<double>::infinity()));
}

// max(x, smallest normal of dtype t) after rounding to t (NaN becomes that minimum, as CPU's
// std::max(min, x) does).
Value at_least_min(Builder& b, const Value& x, DType t) {
  Value r = hlo::convert(b, x, t);
  Value lo = cst(b, r,
                 t == DType::F64   ? std::numeric_limits<double>::min()
                 : t == DType::F16 ? 6.103515625e-05
                                   : static_cast<double>(std::numeric_limits<float>::min()));
  return hlo::select(b, hlo::compare(b, r, lo, "GT"), r, lo);
}

// _standard_gamma(self, generator)
std::vector<Value> lower_standard_gamma(Ctx& c) {
  const ir::Type& out = c.out();
  Value alpha = hlo::convert(c.b, c.tensor("self"), compute_type(out.dtype));
  return {at_least_min(c.b, exp(c.b, log_gamma_sample(c.b, c.rng_state, alpha)), out.dtype)};
}

// _sample_dirichlet(self, generator): gammas of the last dimension, normalized.
std::vector<Value> lower_sample_dirichlet(Ctx& c) {
  Builder& b = c.b;
  const ir::Type& out = c.out();
  Value alpha = hlo::convert(b, c.tensor("self"), compute_type(out.dtype));
  if (alpha.rank() == 0) alpha = hlo::reshape(b, alpha, {1});
  Value lg = log_gamma_sample(b, c.rng_state, alpha);
  const int64_t last = lg.rank() - 1;
  Value top = reduce::expand_back(b, reduce::max(b, lg, {last}), lg.shape(), {last});
  // A row with no valid alpha (all -inf) is uniform, as CPU's equal clamped gammas give.
  top = hlo::select(b, is_inf(b, top), cst(b, top, 0), top);
  Value w = exp(b, hlo::sub(b, lg, top));
  w = hlo::select(b, is_nan(b, w), cst(b, w, 0), w);
  Value all_zero = eq(b, reduce::expand_back(b, reduce::sum(b, w, {last}), w.shape(), {last}), 0);
  w = hlo::select(b, all_zero, cst(b, w, 1), w);
  Value total = reduce::expand_back(b, reduce::sum(b, w, {last}), w.shape(), {last});
  return {hlo::convert(b, hlo::reshape(b, hlo::div(b, w, total), out.shape), out.dtype)};
}

// _standard_gamma_grad(alpha, x): d x / d alpha of a Gamma(alpha) sample x, CPU's
// standard_gamma_grad_one in double: a series for small x, Rice's saddle point expansion for
// large alpha, and a rational fit elsewhere. The thresholds are CPU's float literals (0.8f,
// 0.9f, 1.1f), which decide the regime of points like x = 0.8 in double.
Value gamma_grad(Builder& b, const Value& alpha, const Value& x) {
  // Series in x (x < 0.8).
  Value numer = cst(b, x, 1), denom = alpha;
  Value series1 = hlo::div(b, numer, denom), series2 = hlo::div(b, numer, hlo::mul(b, denom, denom));
  for (int i = 1; i <= 5; ++i) {
    numer = hlo::mul(b, numer, mul_c(b, x, -1.0 / i));
    denom = add_c(b, denom, 1);
    series1 = hlo::add(b, series1, hlo::div(b, numer, denom));
    series2 = hlo::add(b, series2, hlo::div(b, numer, hlo::mul(b, denom, denom)));
  }
  Value pow_x_alpha = hlo::power(b, x, alpha);
  Value pdf = hlo::mul(b, hlo::power(b, x, add_c(b, alpha, -1)), exp(b, hlo::neg(b, x)));
  Value cdf = hlo::mul(b, pow_x_alpha, series1);
  Value cdf_alpha = hlo::sub(b, hlo::mul(b, hlo::sub(b, log(b, x), special::digamma(b, alpha)), cdf),
                             hlo::mul(b, pow_x_alpha, series2));
  Value small_x = hlo::div(b, hlo::neg(b, cdf_alpha), pdf);
  small_x = hlo::select(b, is_nan(b, small_x), cst(b, small_x, 0), small_x);
  // Saddle point (alpha > 8): near x ~ alpha, and away from it.
  Value a2 = hlo::mul(b, alpha, alpha);
  Value near_numer1 = add_c(b, mul_c(b, hlo::mul(b, alpha, add_c(b, mul_c(b, alpha, 12), 1)), 24), 1);
  Value near_numer2 =
      hlo::add(b,
               hlo::add(b, mul_c(b, a2, 1440),
                        mul_c(b, hlo::mul(b, x, hlo::sub(b, cst(b, x, 53), mul_c(b, x, 120))), 6)),
               hlo::sub(b, hlo::mul(b, alpha, add_c(b, mul_c(b, x, 3600), 107)),
                        hlo::div(b, mul_c(b, hlo::mul(b, x, x), 65), alpha)));
  Value near = hlo::div(b, hlo::mul(b, near_numer1, near_numer2), mul_c(b, hlo::mul(b, a2, a2), 1244160));
  Value sd = sqrt(b, mul_c(b, alpha, 8));
  Value term2 = hlo::div(b, sd, hlo::sub(b, alpha, x));
  Value log_ratio = log(b, hlo::div(b, x, alpha));
  Value term3 =
      hlo::power(b, hlo::sub(b, hlo::sub(b, x, alpha), hlo::mul(b, alpha, log_ratio)), cst(b, x, -1.5));
  Value term23 =
      hlo::select(b, hlo::compare(b, x, alpha, "LT"), hlo::sub(b, term2, term3), hlo::add(b, term2, term3));
  Value diff = hlo::sub(b, alpha, x);
  Value term1 =
      hlo::sub(b, hlo::mul(b, log_ratio, term23),
               hlo::div(b, hlo::mul(b, sqrt(b, hlo::div(b, cst(b, x, 2), alpha)), hlo::add(b, alpha, x)),
                        hlo::mul(b, diff, diff)));
  Value inv12a = hlo::div(b, cst(b, x, 1), mul_c(b, alpha, 12));
  Value stirling =
      add_c(b, hlo::mul(b, inv12a, add_c(b, hlo::div(b, cst(b, x, 1), mul_c(b, alpha, 24)), 1)), 1);
  Value far = hlo::neg(b, hlo::div(b, hlo::mul(b, stirling, hlo::mul(b, x, term1)), sd));
  Value in_band = and_(b, hlo::compare(b, mul_c(b, alpha, double{0.9f}), x, "LE"),
                       hlo::compare(b, x, mul_c(b, alpha, double{1.1f}), "LE"));
  Value saddle = hlo::select(b, in_band, near, far);
  // Bivariate rational approximation.
  static const double kCoef[3][8] = {
      {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084},
      {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
       -0.00058392623},
      {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
       -1.5247877e-07},
  };
  Value u = log_ratio, v = log(b, alpha);
  std::vector<Value> coef;
  for (int i = 0; i < 8; ++i)
    coef.push_back(add_c(b, hlo::mul(b, u, add_c(b, mul_c(b, u, kCoef[2][i]), kCoef[1][i])), kCoef[0][i]));
  auto cubic = [&](int o) {
    Value r = coef[o + 3];
    for (int i = 2; i >= 0; --i) r = hlo::add(b, coef[o + i], hlo::mul(b, v, r));
    return r;
  };
  Value rational = exp(b, hlo::div(b, cubic(0), cubic(4)));
  Value large = hlo::select(b, gt(b, alpha, 8), saddle, rational);
  return hlo::select(b, lt(b, x, double{0.8f}), small_x, large);
}

std::vector<Value> lower_standard_gamma_grad(Ctx& c) {
  Value alpha = operand(c, "self", DType::F64, c.out().shape),
        x = operand(c, "output", DType::F64, c.out().shape);
  return {hlo::convert(c.b, gamma_grad(c.b, alpha, x), c.out().dtype)};
}

}  // namespace

TPU_LOWERING("aten::_standard_gamma", lower_standard_gamma, reads({"self"}));
TPU_LOWERING("aten::_sample_dirichlet", lower_sample_dirichlet, reads({"self"}));
TPU_LOWERING("aten::_standard_gamma_grad", lower_standard_gamma_grad, reads({"self", "output"}));

}  // namespace tpu::lowering
