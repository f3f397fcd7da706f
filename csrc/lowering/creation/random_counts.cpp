// Count samplers: poisson(rates) and binomial(count, prob), exact algorithms as CPU runs them
// (in double, as CPU does: their rejection tests compare log-probabilities of large counts).
// - Poisson: for rate < 10, inversion by sequential multiplication (count uniforms until their
//   product drops below exp(-rate)); for rate >= 10, Hormann's transformed rejection (PTRS).
// - Binomial: with p' = min(p, 1 - p) (the count is flipped for p > 1/2), a sum of geometric
//   waiting times (inversion) while n p' < 10, BTRS (Hormann's transformed rejection with a
//   squeeze) above.
// Both regimes run as one vectorized rejection loop (random_rejection.h); each element uses the
// draws of its own regime.
#include <cmath>

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/reduce_util.h"
#include "lowering/creation/random_bits.h"
#include "lowering/creation/random_rejection.h"
#include "lowering/special/gamma_math.h"

namespace tpu::lowering {

namespace {

using namespace ew;  // NOLINT

Value floor_(Builder& b, const Value& x) { return hlo::floor(b, x); }

// poisson(self, generator)
std::vector<Value> lower_poisson(Ctx& c) {
  Builder& b = c.b;
  const ir::Type& out = c.out();
  Value lam = hlo::convert(b, c.tensor("self"), DType::F64);
  c.require(reduce::min(b, ge(b, lam, 0), reduce::dims_or_all({}, lam.rank())),
            "invalid Poisson rate, expected rate to be non-negative");
  Value small = lt(b, lam, 10);
  Value slam = sqrt(b, lam), loglam = log(b, lam);
  Value bb = add_c(b, mul_c(b, slam, 2.53), 0.931);
  Value a = add_c(b, mul_c(b, bb, 0.02483), -0.059);
  Value invalpha = add_c(b, hlo::div(b, cst(b, bb, 1.1328), add_c(b, bb, -3.4)), 1.1239);
  Value vr = hlo::sub(b, cst(b, bb, 0.9277), hlo::div(b, cst(b, bb, 3.6224), add_c(b, bb, -2)));
  Value enlam = exp(b, hlo::neg(b, lam));
  auto step = [](Builder& rb, Value& rng, const std::vector<Value>& p, const std::vector<Value>& carry) {
    const Value &lam = p[0], &small = p[1], &loglam = p[2], &bb = p[3], &a = p[4], &invalpha = p[5],
                &vr = p[6], &enlam = p[7];
    Value u = next_uniform_open(rb, rng, lam.shape(), DType::F64);
    Value v = next_uniform_open(rb, rng, lam.shape(), DType::F64);
    // Inversion: one more factor of the running product.
    Value prod = hlo::mul(rb, carry[0], u);
    Value more = hlo::compare(rb, prod, enlam, "GT");
    Value count = carry[1];
    // PTRS.
    Value uc = add_c(rb, u, -0.5);
    Value us = hlo::sub(rb, cst(rb, uc, 0.5), abs(rb, uc));
    Value k = floor_(
        rb,
        add_c(rb, hlo::add(rb, hlo::mul(rb, hlo::add(rb, hlo::div(rb, mul_c(rb, a, 2), us), bb), uc), lam),
              0.43));
    Value quick = and_(rb, ge(rb, us, 0.07), hlo::compare(rb, v, vr, "LE"));
    Value reject = or_(rb, lt(rb, k, 0), and_(rb, lt(rb, us, 0.013), hlo::compare(rb, v, us, "GT")));
    Value lhs = hlo::sub(rb, hlo::add(rb, log(rb, v), log(rb, invalpha)),
                         log(rb, hlo::add(rb, hlo::div(rb, a, hlo::mul(rb, us, us)), bb)));
    Value rhs =
        hlo::sub(rb, hlo::sub(rb, hlo::mul(rb, k, loglam), lam), special::lgamma(rb, add_c(rb, k, 1)));
    Value ptrs_ok = or_(rb, quick, and_(rb, not_(rb, reject), hlo::compare(rb, lhs, rhs, "LE")));
    Value accept = hlo::select(rb, small, not_(rb, more), ptrs_ok);
    Value value = hlo::select(rb, small, count, k);
    return RejectionStep{accept, value, {prod, hlo::select(rb, more, add_c(rb, count, 1), count)}};
  };
  Value done = not_(b, gt(b, lam, 0));  // 0 for rate 0; negative and NaN rates were checked
  Value zero = cst(b, lam, 0);
  Value k =
      sample_until_accepted(b, c.rng_state, done, hlo::select(b, eq(b, lam, 0), zero, add_c(b, lam, NAN)),
                            {lam, small, loglam, bb, a, invalpha, vr, enlam}, {cst(b, lam, 1), zero}, step);
  return {hlo::convert(b, k, out.dtype)};
}

// Stirling's series tail log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2], from a
// table below 10 (CPU's values, indexed by the integer part).
Value stirling_tail(Builder& b, const Value& k) {
  static const double kTail[] = {
      0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
      0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287};
  Value kp1 = add_c(b, k, 1);
  Value kp1sq = hlo::mul(b, kp1, kp1);
  Value inner = hlo::sub(b, cst(b, k, 1.0 / 360), hlo::div(b, cst(b, k, 1.0 / 1260), kp1sq));
  Value r = hlo::div(b, hlo::sub(b, cst(b, k, 1.0 / 12), hlo::div(b, inner, kp1sq)), kp1);
  Value i = floor_(b, k);
  for (int t = 0; t < 10; ++t) r = hlo::select(b, eq(b, i, t), cst(b, r, kTail[t]), r);
  return r;
}

// binomial(count, prob, generator)
std::vector<Value> lower_binomial(Ctx& c) {
  Builder& b = c.b;
  const ir::Type& out = c.out();
  Value n = operand(c, "count", DType::F64, out.shape), prob = operand(c, "prob", DType::F64, out.shape);
  Value flip = gt(b, prob, 0.5);
  Value p = hlo::select(b, flip, hlo::sub(b, cst(b, prob, 1), prob), prob);
  Value use_btrs = ge(b, hlo::mul(b, n, p), 10);
  // BTRS constants.
  Value stddev = sqrt(b, hlo::mul(b, hlo::mul(b, n, p), hlo::sub(b, cst(b, p, 1), p)));
  Value bb = add_c(b, mul_c(b, stddev, 2.53), 1.15);
  Value a = add_c(b, add_c(b, mul_c(b, bb, 0.0248), -0.0873), 0);
  a = hlo::add(b, a, mul_c(b, p, 0.01));
  Value cc = add_c(b, hlo::mul(b, n, p), 0.5);
  Value v_r = hlo::sub(b, cst(b, bb, 0.92), hlo::div(b, cst(b, bb, 4.2), bb));
  Value r = hlo::div(b, p, hlo::sub(b, cst(b, p, 1), p));
  Value alpha = hlo::mul(b, add_c(b, hlo::div(b, cst(b, bb, 5.1), bb), 2.83), stddev);
  Value m = floor_(b, hlo::mul(b, add_c(b, n, 1), p));
  Value logq = log1p(b, hlo::neg(b, p));
  auto step = [](Builder& rb, Value& rng, const std::vector<Value>& s, const std::vector<Value>& carry) {
    const Value &n = s[0], &use_btrs = s[1], &bb = s[2], &a = s[3], &cc = s[4], &v_r = s[5], &r = s[6],
                &alpha = s[7], &m = s[8], &logq = s[9];
    Value u = next_uniform_open(rb, rng, n.shape(), DType::F64);
    Value v = next_uniform_open(rb, rng, n.shape(), DType::F64);
    // Inversion: add one geometric waiting time.
    Value geom_sum = hlo::add(rb, carry[0], hlo::ceil(rb, hlo::div(rb, log(rb, u), logq)));
    Value over = hlo::compare(rb, geom_sum, n, "GT");
    Value num_geom = carry[1];
    // BTRS.
    Value uc = add_c(rb, u, -0.5);
    Value us = hlo::sub(rb, cst(rb, uc, 0.5), abs(rb, uc));
    Value k =
        floor_(rb, hlo::add(rb, hlo::mul(rb, hlo::add(rb, hlo::div(rb, mul_c(rb, a, 2), us), bb), uc), cc));
    Value in_range = and_(rb, ge(rb, k, 0), hlo::compare(rb, k, n, "LE"));
    Value quick = and_(rb, ge(rb, us, 0.07), hlo::compare(rb, v, v_r, "LE"));
    Value lv = log(
        rb, hlo::div(rb, hlo::mul(rb, v, alpha), hlo::add(rb, hlo::div(rb, a, hlo::mul(rb, us, us)), bb)));
    Value nm1 = add_c(rb, hlo::sub(rb, n, m), 1), nk1 = add_c(rb, hlo::sub(rb, n, k), 1);
    Value bound =
        hlo::mul(rb, add_c(rb, m, 0.5), log(rb, hlo::div(rb, add_c(rb, m, 1), hlo::mul(rb, r, nm1))));
    bound = hlo::add(rb, bound, hlo::mul(rb, add_c(rb, n, 1), log(rb, hlo::div(rb, nm1, nk1))));
    bound = hlo::add(
        rb, bound,
        hlo::mul(rb, add_c(rb, k, 0.5), log(rb, hlo::div(rb, hlo::mul(rb, r, nk1), add_c(rb, k, 1)))));
    bound = hlo::add(rb, bound, hlo::add(rb, stirling_tail(rb, m), stirling_tail(rb, hlo::sub(rb, n, m))));
    bound = hlo::sub(rb, bound, hlo::add(rb, stirling_tail(rb, k), stirling_tail(rb, hlo::sub(rb, n, k))));
    Value btrs_ok = and_(rb, in_range, or_(rb, quick, hlo::compare(rb, lv, bound, "LE")));
    Value accept = hlo::select(rb, use_btrs, btrs_ok, over);
    Value value = hlo::select(rb, use_btrs, k, num_geom);
    return RejectionStep{accept, value, {geom_sum, hlo::select(rb, over, num_geom, add_c(rb, num_geom, 1))}};
  };
  // Decided before sampling: n <= 0 or p <= 0 give 0, p >= 1 gives n, NaN p gives NaN.
  Value zero_case = or_(b, le(b, n, 0), le(b, prob, 0));
  Value full_case = ge(b, prob, 1);
  Value nan_case = is_nan(b, prob);
  Value preset = hlo::select(b, zero_case, cst(b, n, 0), hlo::select(b, full_case, n, cst(b, n, NAN)));
  Value done = or_(b, or_(b, zero_case, full_case), nan_case);
  Value zero = cst(b, n, 0);
  Value k = sample_until_accepted(b, c.rng_state, done, preset,
                                  {n, use_btrs, bb, a, cc, v_r, r, alpha, m, logq}, {zero, zero}, step);
  Value sampled = hlo::select(b, flip, hlo::sub(b, n, k), k);
  return {hlo::convert(b, hlo::select(b, done, preset, sampled), out.dtype)};
}

}  // namespace

TPU_LOWERING("aten::poisson", lower_poisson, reads({"self"}));
TPU_LOWERING("aten::binomial", lower_binomial, reads({"count", "prob"}));

}  // namespace tpu::lowering
