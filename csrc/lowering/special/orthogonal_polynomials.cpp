// Orthogonal polynomials of torch.special with a runtime degree tensor n: Chebyshev T, U, V, W
// (plain and shifted to [0, 1]), Hermite H and He, Laguerre L and Legendre P.
//
// Semantics are PyTorch's CPU kernels': n is truncated to an integer, n < 0 gives 0, the
// values at x = +-1 (0 and 1 for the shifted kinds) are exact, Chebyshev polynomials of large
// degree inside (-1, 1) use their trigonometric closed forms, Hermite polynomials beyond
// degree 128 (f32) / 512 (f64) are NaN, and everything else runs the three-term recurrence in
// n, in the same operation order.
//
// The recurrence is unrolled to a fixed bound of kMaxSteps steps (each element selects its own
// stopping point), since n is a runtime tensor. Degrees beyond the bound where the result
// would need more steps raise a runtime error (Ctx::require) instead of returning a wrong
// value.
#include <cmath>
#include <string>

#include "lowering/core/elementwise_ops.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using ir::Builder;
using ir::DType;
using ir::Value;
using Vs = std::vector<Value>;

constexpr int kMaxSteps = 128;  // recurrences handle n <= kMaxSteps

// The recurrence q_{j+1} = step(j, p = q_{j-1}, q = q_j) for j = 1 .. n - 1 from (p0, q0),
// i.e. the value for degree n (n >= 1); elements with n <= j keep their value.
template <typename Step>
Value recurrence(Builder& b, const Value& n, Value p, Value q, Step step) {
  for (int j = 1; j < kMaxSteps; ++j) {
    Value active = gt(b, n, j);
    Value r = step(j, p, q);
    p = hlo::select(b, active, q, p);
    q = hlo::select(b, active, r, q);
  }
  return q;
}

Value any(Builder& b, const Value& pred) {
  std::vector<int64_t> dims;
  for (int i = 0; i < pred.rank(); ++i) dims.push_back(i);
  return hlo::reduce(b, pred, hlo::constant(b, DType::Bool, 0), dims, hlo::Combiner::Or);
}

// `too_deep`: elements whose value needs more than kMaxSteps recurrence steps.
void require_steps(Ctx& ctx, const Value& too_deep, const char* name) {
  ctx.require(not_(ctx.b, any(ctx.b, too_deep)), std::string("torch_tpu: ") + name +
                                                     " supports degrees n <= " + std::to_string(kMaxSteps) +
                                                     " on tpu (where no closed form applies)");
}

Value is_even(Builder& b, const Value& n) {
  return eq(b, hlo::sub(b, n, mul_c(b, hlo::floor(b, mul_c(b, n, 0.5)), 2)), 0);
}

enum class Kind { T, U, V, W };

// Chebyshev polynomials of the four kinds in y (y = 2x - 1 for the shifted ones).
Vs chebyshev(Ctx& ctx, Kind kind, bool shifted, const char* name) {
  Value needs;
  Vs out = compute(ctx, {"x", "n"}, [&](Builder& b, const Vs& a) {
    Value x = a[0], n = trunc(b, a[1]);
    Value y = shifted ? add_c(b, hlo::add(b, x, x), -1) : x;
    Value one = cst(b, y, 1);
    Value two_n1 = add_c(b, mul_c(b, n, 2), 1), n1 = add_c(b, n, 1);
    Value even = is_even(b, n);
    auto pm = [&](const Value& v) { return hlo::select(b, even, v, hlo::neg(b, v)); };  // (-1)^n v
    // Values at y = 1 and y = -1.
    Value at_one, at_minus_one;
    switch (kind) {
      case Kind::T:
        at_one = one, at_minus_one = pm(one);
        break;
      case Kind::U:
        at_one = n1, at_minus_one = pm(n1);
        break;
      case Kind::V:
        at_one = one, at_minus_one = pm(two_n1);
        break;
      case Kind::W:
        at_one = two_n1, at_minus_one = pm(one);
        break;
    }
    // Closed forms inside (-1, 1), with theta = acos y.
    Value theta = hlo::atan2(b, sqrt(b, hlo::mul(b, hlo::sub(b, one, y), hlo::add(b, one, y))), y);
    auto cos_ = [&](const Value& v) { return hlo::cos(b, v); };
    auto sin_ = [&](const Value& v) { return hlo::sin(b, v); };
    Value closed;
    int threshold = 8;
    switch (kind) {
      case Kind::T:
        threshold = 6;
        closed = cos_(hlo::mul(b, n, theta));
        break;
      case Kind::U: {
        threshold = shifted ? 6 : 8;
        Value s = sin_(theta);
        Value regular = hlo::div(b, sin_(hlo::mul(b, n1, theta)), s);
        Value degenerate = hlo::div(b, hlo::mul(b, n1, cos_(hlo::mul(b, n1, theta))), y);
        closed = hlo::select(b, eq(b, s, 0), degenerate, regular);
        break;
      }
      case Kind::V: {
        threshold = shifted ? 6 : 8;
        Value half = mul_c(b, theta, 0.5);
        Value regular = hlo::div(b, cos_(hlo::mul(b, add_c(b, n, 0.5), theta)), cos_(half));
        closed = hlo::select(b, eq(b, sin_(half), 1), pm(two_n1), regular);
        break;
      }
      case Kind::W: {
        threshold = shifted ? 4 : 8;
        Value half = mul_c(b, theta, 0.5);
        Value regular = hlo::div(b, sin_(hlo::mul(b, add_c(b, n, 0.5), theta)), sin_(half));
        Value degenerate = shifted ? pm(one) : hlo::select(b, gt(b, y, 0), two_n1, pm(one));
        closed = hlo::select(b, eq(b, cos_(half), 1), degenerate, regular);
        break;
      }
    }
    Value q0;
    switch (kind) {
      case Kind::T:
        q0 = y;
        break;
      case Kind::U:
        q0 = hlo::add(b, y, y);
        break;
      case Kind::V:
        q0 = add_c(b, hlo::add(b, y, y), -1);
        break;
      case Kind::W:
        q0 = add_c(b, hlo::add(b, y, y), 1);
        break;
    }
    Value two_y = hlo::add(b, y, y);
    Value rec = recurrence(b, n, one, q0, [&](int, const Value& p, const Value& q) {
      return hlo::sub(b, hlo::mul(b, two_y, q), p);
    });
    Value r = hlo::select(b, eq(b, n, 0), one, rec);
    Value inside = lt(b, abs(b, y), 1);
    Value use_closed = and_(b, inside, gt(b, n, threshold));
    r = hlo::select(b, use_closed, closed, r);
    r = hlo::select(b, eq(b, y, 1), at_one, r);
    r = hlo::select(b, eq(b, y, -1), at_minus_one, r);
    Value known = or_(b, or_(b, use_closed, eq(b, abs(b, y), 1)), is_nan(b, y));
    needs = and_(b, not_(b, known), gt(b, n, kMaxSteps));
    return hlo::select(b, lt(b, n, 0), cst(b, r, 0), r);
  });
  require_steps(ctx, needs, name);
  return out;
}

Vs lower_chebyshev_t(Ctx& ctx) { return chebyshev(ctx, Kind::T, false, "chebyshev_polynomial_t"); }
Vs lower_chebyshev_u(Ctx& ctx) { return chebyshev(ctx, Kind::U, false, "chebyshev_polynomial_u"); }
Vs lower_chebyshev_v(Ctx& ctx) { return chebyshev(ctx, Kind::V, false, "chebyshev_polynomial_v"); }
Vs lower_chebyshev_w(Ctx& ctx) { return chebyshev(ctx, Kind::W, false, "chebyshev_polynomial_w"); }
Vs lower_shifted_t(Ctx& ctx) { return chebyshev(ctx, Kind::T, true, "shifted_chebyshev_polynomial_t"); }
Vs lower_shifted_u(Ctx& ctx) { return chebyshev(ctx, Kind::U, true, "shifted_chebyshev_polynomial_u"); }
Vs lower_shifted_v(Ctx& ctx) { return chebyshev(ctx, Kind::V, true, "shifted_chebyshev_polynomial_v"); }
Vs lower_shifted_w(Ctx& ctx) { return chebyshev(ctx, Kind::W, true, "shifted_chebyshev_polynomial_w"); }

// Hermite H (physicists') and He (probabilists'): NaN beyond the CPU kernel's degree limit.
template <bool Physicists>
Vs lower_hermite(Ctx& ctx) {
  Value needs;
  Vs out = compute(ctx, {"x", "n"}, [&](Builder& b, const Vs& a) {
    Value x = a[0];
    // NaN and infinite degrees count as -1, as on CPU.
    Value n = hlo::select(b, or_(b, is_nan(b, a[1]), is_inf(b, a[1])), cst(b, a[1], -1), trunc(b, a[1]));
    Value one = cst(b, x, 1);
    Value q0 = Physicists ? hlo::add(b, x, x) : x;
    Value two_x = hlo::add(b, x, x);
    Value rec = recurrence(b, n, one, q0, [&](int j, const Value& p, const Value& q) {
      if (Physicists) return hlo::sub(b, hlo::mul(b, two_x, q), mul_c(b, p, 2.0 * j));
      return hlo::sub(b, hlo::mul(b, x, q), mul_c(b, p, j));
    });
    double limit = x.dtype() == DType::F64 ? 512 : 128;
    Value r = hlo::select(b, eq(b, n, 0), one, rec);
    r = hlo::select(b, gt(b, n, limit), cst(b, r, NAN), r);
    needs = and_(b, le(b, n, limit), gt(b, n, kMaxSteps));
    return hlo::select(b, lt(b, n, 0), cst(b, r, 0), r);
  });
  require_steps(ctx, needs, Physicists ? "hermite_polynomial_h" : "hermite_polynomial_he");
  return out;
}

Vs lower_laguerre(Ctx& ctx) {
  Value needs;
  Vs out = compute(ctx, {"x", "n"}, [&](Builder& b, const Vs& a) {
    Value x = a[0], n = trunc(b, a[1]);
    Value one = cst(b, x, 1);
    Value one_minus_x = hlo::sub(b, one, x);
    Value rec = recurrence(b, n, one, one_minus_x, [&](int j, const Value& p, const Value& q) {
      Value t = hlo::sub(b, hlo::mul(b, add_c(b, one_minus_x, 2.0 * j), q), mul_c(b, p, j));
      return mul_c(b, t, 1.0 / (j + 1));
    });
    Value r = hlo::select(b, eq(b, n, 0), one, rec);
    r = hlo::select(b, eq(b, x, 0), one, r);
    needs = and_(b, gt(b, n, kMaxSteps), hlo::compare(b, x, cst(b, x, 0), "NE"));
    return hlo::select(b, lt(b, n, 0), cst(b, r, 0), r);
  });
  require_steps(ctx, needs, "laguerre_polynomial_l");
  return out;
}

Vs lower_legendre(Ctx& ctx) {
  Value needs;
  Vs out = compute(ctx, {"x", "n"}, [&](Builder& b, const Vs& a) {
    Value x = a[0], n = trunc(b, a[1]);
    Value one = cst(b, x, 1);
    Value rec = recurrence(b, n, one, x, [&](int j, const Value& p, const Value& q) {
      Value t = hlo::sub(b, hlo::mul(b, mul_c(b, x, 2.0 * j + 1), q), mul_c(b, p, j));
      return mul_c(b, t, 1.0 / (j + 1));
    });
    Value r = hlo::select(b, eq(b, n, 0), one, rec);
    Value pm_one = hlo::select(b, or_(b, gt(b, x, 0), is_even(b, n)), one, cst(b, x, -1));
    Value at_unit = eq(b, abs(b, x), 1);
    r = hlo::select(b, at_unit, pm_one, r);
    needs = and_(b, gt(b, n, kMaxSteps), not_(b, at_unit));
    return hlo::select(b, lt(b, n, 0), cst(b, r, 0), r);
  });
  require_steps(ctx, needs, "legendre_polynomial_p");
  return out;
}

}  // namespace

TPU_LOWERING("aten::special_chebyshev_polynomial_t", lower_chebyshev_t, reads({"x", "n"}));
TPU_LOWERING("aten::special_chebyshev_polynomial_u", lower_chebyshev_u, reads({"x", "n"}));
TPU_LOWERING("aten::special_chebyshev_polynomial_v", lower_chebyshev_v, reads({"x", "n"}));
TPU_LOWERING("aten::special_chebyshev_polynomial_w", lower_chebyshev_w, reads({"x", "n"}));
TPU_LOWERING("aten::special_shifted_chebyshev_polynomial_t", lower_shifted_t, reads({"x", "n"}));
TPU_LOWERING("aten::special_shifted_chebyshev_polynomial_u", lower_shifted_u, reads({"x", "n"}));
TPU_LOWERING("aten::special_shifted_chebyshev_polynomial_v", lower_shifted_v, reads({"x", "n"}));
TPU_LOWERING("aten::special_shifted_chebyshev_polynomial_w", lower_shifted_w, reads({"x", "n"}));
TPU_LOWERING("aten::special_hermite_polynomial_h", lower_hermite<true>, reads({"x", "n"}));
TPU_LOWERING("aten::special_hermite_polynomial_he", lower_hermite<false>, reads({"x", "n"}));
TPU_LOWERING("aten::special_laguerre_polynomial_l", lower_laguerre, reads({"x", "n"}));
TPU_LOWERING("aten::special_legendre_polynomial_p", lower_legendre, reads({"x", "n"}));

}  // namespace tpu::lowering
