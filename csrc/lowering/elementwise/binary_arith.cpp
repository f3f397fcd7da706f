// Binary arithmetic: add/sub/mul/div (with rounding modes), pow, remainder/fmod,
// maximum/minimum/fmax/fmin, atan2, hypot, copysign, xlogy, logaddexp.
//
// Operands are converted to compute_dtype(output dtype) (f16/bf16 -> f32), so a Python scalar enters
// the computation at f32 precision as on CPU, and the result is rounded once. Integer
// division and modulo follow PyTorch (floor semantics where Python has them), not C.
#include <cmath>
#include <limits>

#include "lowering/core/elementwise_ops.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using ir::Builder;
using ir::DType;
using ir::Value;
using Vs = std::vector<Value>;

// --- add / sub / mul / div ------------------------------------------------------------------

// Booleans add as logical or and multiply as logical and (what True + True == True means).
Value plus(Builder& b, const Value& x, const Value& y) {
  return x.dtype() == DType::Bool ? or_(b, x, y) : hlo::add(b, x, y);
}
Value times(Builder& b, const Value& x, const Value& y) {
  return x.dtype() == DType::Bool ? and_(b, x, y) : hlo::mul(b, x, y);
}

// other * alpha (alpha is a runtime scalar; multiplying by 1 is exact).
Value scaled(Builder& b, const Value& other, const Value& alpha) {
  return alpha.valid() ? times(b, other, alpha) : other;
}

Vs lower_add(Ctx& ctx) {
  return compute(
      ctx, {"self", "other", "alpha"},
      [](Builder& b, const Vs& x) { return plus(b, x[0], scaled(b, x[1], x[2])); }, true);
}
Vs lower_sub(Ctx& ctx) {
  return compute(
      ctx, {"self", "other", "alpha"},
      [](Builder& b, const Vs& x) { return hlo::sub(b, x[0], scaled(b, x[1], x[2])); }, true);
}
// rsub(self, other, alpha) = other - alpha * self
Vs lower_rsub(Ctx& ctx) {
  return compute(
      ctx, {"self", "other", "alpha"},
      [](Builder& b, const Vs& x) { return hlo::sub(b, x[1], scaled(b, x[0], x[2])); }, true);
}
Vs lower_mul(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return times(b, x[0], x[1]); }, true);
}

// Integer floor division: C division truncates, so step down when the remainder is nonzero and
// its sign differs from the divisor's.
Value int_floor_div(Builder& b, const Value& x, const Value& y) {
  Value q = hlo::div(b, x, y);
  if (ir::is_unsigned(x.dtype())) return q;
  Value r = hlo::rem(b, x, y);
  Value adjust =
      and_(b, hlo::compare(b, r, cst(b, r, 0), "NE"), hlo::compare(b, lt(b, r, 0), lt(b, y, 0), "NE"));
  return hlo::select(b, adjust, add_c(b, q, -1), q);
}

// Float floor division as CPU's div_floor_floating: from fmod, so that a == b * q + r holds
// with r carrying b's sign, then rounded to the nearest integer; 0 keeps the sign of a / b and
// division by zero gives the IEEE quotient.
Value float_floor_div(Builder& b, const Value& x, const Value& y) {
  Value mod = hlo::rem(b, x, y);
  Value div = hlo::div(b, hlo::sub(b, x, mod), y);
  Value step =
      and_(b, hlo::compare(b, mod, cst(b, mod, 0), "NE"), hlo::compare(b, lt(b, y, 0), lt(b, mod, 0), "NE"));
  div = hlo::select(b, step, add_c(b, div, -1), div);
  Value fl = hlo::floor(b, div);
  fl = hlo::select(b, gt(b, hlo::sub(b, div, fl), 0.5), add_c(b, fl, 1), fl);
  Value quotient = hlo::div(b, x, y);
  Value r =
      hlo::select(b, hlo::compare(b, div, cst(b, div, 0), "NE"), fl, copysign(b, cst(b, div, 0), quotient));
  return hlo::select(b, eq(b, y, 0), quotient, r);
}

Value floor_div(Builder& b, const Value& x, const Value& y) {
  return ir::is_floating(x.dtype()) ? float_floor_div(b, x, y) : int_floor_div(b, x, y);
}

Value trunc_div(Builder& b, const Value& x, const Value& y) {
  // stablehlo.divide on integers already truncates toward zero.
  return ir::is_floating(x.dtype()) ? trunc(b, hlo::div(b, x, y)) : hlo::div(b, x, y);
}

Vs lower_div(Ctx& ctx) {
  return compute(
      ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return hlo::div(b, x[0], x[1]); }, true);
}

// For f16/bf16, CPU's vectorized kernels round every intermediate to the tensor's dtype (the
// quotient before trunc, each step of the floor algorithm), which decides results near
// integers; those modes therefore run in the output dtype itself.
Vs lower_div_mode(Ctx& ctx) {
  std::string mode = ctx.has("rounding_mode") ? ctx.arg("rounding_mode").s : "";
  if (mode == "trunc")
    return compute_exact(ctx, {"self", "other"},
                         [](Builder& b, const Vs& x) { return trunc_div(b, x[0], x[1]); });
  if (mode == "floor")
    return compute_exact(ctx, {"self", "other"},
                         [](Builder& b, const Vs& x) { return floor_div(b, x[0], x[1]); });
  return compute(
      ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return hlo::div(b, x[0], x[1]); }, true);
}

Vs lower_floor_divide(Ctx& ctx) {
  return compute_exact(ctx, {"self", "other"},
                       [](Builder& b, const Vs& x) { return floor_div(b, x[0], x[1]); });
}

// --- pow, remainder, fmod ------------------------------------------------------------------

Vs lower_pow(Ctx& ctx) {
  return compute(
      ctx, {"self", "exponent"}, [](Builder& b, const Vs& x) { return hlo::power(b, x[0], x[1]); }, true);
}

// pow(tensor, scalar): CPU evaluates exponents 0.5 and -0.5 as sqrt and rsqrt (for every
// floating type but f16), which differ from pow at -inf (NaN instead of inf / 0). The exponent
// is a runtime value, so select.
Vs lower_pow_tensor_scalar(Ctx& ctx) {
  bool as_cpu_sqrt = ir::is_floating(ctx.out(0).dtype) && ctx.out(0).dtype != DType::F16;
  return compute(
      ctx, {"self", "exponent"},
      [as_cpu_sqrt](Builder& b, const Vs& x) {
        Value r = hlo::power(b, x[0], x[1]);
        if (!as_cpu_sqrt) return r;
        r = hlo::select(b, eq(b, x[1], 0.5), sqrt(b, x[0]), r);
        return hlo::select(b, eq(b, x[1], -0.5), hlo::rsqrt(b, x[0]), r);
      },
      true);
}

// Python modulo: the result takes the divisor's sign (stablehlo.remainder is C fmod).
Vs lower_remainder(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) {
    Value r = hlo::rem(b, x[0], x[1]);
    if (ir::is_unsigned(r.dtype())) return r;
    Value fix =
        and_(b, hlo::compare(b, r, cst(b, r, 0), "NE"), hlo::compare(b, lt(b, r, 0), lt(b, x[1], 0), "NE"));
    return hlo::select(b, fix, hlo::add(b, r, x[1]), r);
  });
}

Vs lower_fmod(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return hlo::rem(b, x[0], x[1]); });
}

// --- max / min -----------------------------------------------------------------------------

Vs lower_maximum(Ctx& ctx) {
  return compute_exact(ctx, {"self", "other"},
                       [](Builder& b, const Vs& x) { return maximum(b, x[0], x[1]); });
}
Vs lower_minimum(Ctx& ctx) {
  return compute_exact(ctx, {"self", "other"},
                       [](Builder& b, const Vs& x) { return minimum(b, x[0], x[1]); });
}
// fmax/fmin ignore a NaN operand (NaN only when both are NaN).
Value ignore_nan(Builder& b, const Value& x, const Value& y, const Value& r) {
  if (!ir::is_floating(x.dtype())) return r;
  return hlo::select(b, is_nan(b, x), y, hlo::select(b, is_nan(b, y), x, r));
}
Vs lower_fmax(Ctx& ctx) {
  return compute_exact(ctx, {"self", "other"}, [](Builder& b, const Vs& x) {
    return ignore_nan(b, x[0], x[1], maximum(b, x[0], x[1]));
  });
}
Vs lower_fmin(Ctx& ctx) {
  return compute_exact(ctx, {"self", "other"}, [](Builder& b, const Vs& x) {
    return ignore_nan(b, x[0], x[1], minimum(b, x[0], x[1]));
  });
}

// --- float-valued binary functions ---------------------------------------------------------

Vs lower_atan2(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return hlo::atan2(b, x[0], x[1]); });
}

// hypot without overflow or underflow: m * sqrt(1 + (n / m)^2), m = max(|x|, |y|), with
// hypot(inf, nan) = inf as C requires.
Vs lower_hypot(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) {
    Value ax = abs(b, x[0]), ay = abs(b, x[1]);
    Value m = maximum(b, ax, ay), n = minimum(b, ax, ay);
    Value q = hlo::div(b, n, m);
    Value r = hlo::mul(b, m, sqrt(b, add_c(b, hlo::mul(b, q, q), 1)));
    r = hlo::select(b, eq(b, m, 0), cst(b, m, 0), r);  // 0/0
    Value inf = cst(b, m, std::numeric_limits<double>::infinity());
    return hlo::select(b, or_(b, is_inf(b, ax), is_inf(b, ay)), inf, r);
  });
}

Vs lower_copysign(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return copysign(b, x[0], x[1]); });
}

// xlogy(x, y) = x * log(y), 0 where x == 0 unless y is NaN.
Vs lower_xlogy(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) {
    Value r = hlo::mul(b, x[0], log(b, x[1]));
    r = hlo::select(b, eq(b, x[0], 0), cst(b, r, 0), r);
    return hlo::select(b, is_nan(b, x[1]), x[1], r);
  });
}

// logaddexp: max + log1p(exp(-|x - y|)); equal infinities return themselves (inf - inf).
Value log_add_exp(Builder& b, const Value& x, const Value& y, bool base2) {
  Value m = hlo::max(b, x, y);
  Value d = hlo::neg(b, abs(b, hlo::sub(b, x, y)));
  Value term =
      base2 ? mul_c(b, log1p(b, hlo::power(b, cst(b, d, 2), d)), 1 / std::log(2.0)) : log1p(b, exp(b, d));
  Value r = hlo::add(b, m, term);
  return hlo::select(b, and_(b, is_inf(b, x), hlo::compare(b, x, y, "EQ")), x, r);
}
Vs lower_logaddexp(Ctx& ctx) {
  return compute(ctx, {"self", "other"},
                 [](Builder& b, const Vs& x) { return log_add_exp(b, x[0], x[1], false); });
}
Vs lower_logaddexp2(Ctx& ctx) {
  return compute(ctx, {"self", "other"},
                 [](Builder& b, const Vs& x) { return log_add_exp(b, x[0], x[1], true); });
}

}  // namespace

TPU_LOWERING("aten::add.Tensor", lower_add, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::add.Scalar", lower_add, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::sub.Tensor", lower_sub, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::sub.Scalar", lower_sub, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::rsub.Tensor", lower_rsub, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::rsub.Scalar", lower_rsub, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::mul.Tensor", lower_mul, reads({"self", "other"}));
TPU_LOWERING("aten::mul.Scalar", lower_mul, reads({"self", "other"}));
TPU_LOWERING("aten::div.Tensor", lower_div, reads({"self", "other"}));
TPU_LOWERING("aten::div.Scalar", lower_div, reads({"self", "other"}));
TPU_LOWERING("aten::div.Tensor_mode", lower_div_mode, reads({"self", "other", "rounding_mode"}));
TPU_LOWERING("aten::div.Scalar_mode", lower_div_mode, reads({"self", "other", "rounding_mode"}));
TPU_LOWERING("aten::floor_divide", lower_floor_divide, reads({"self", "other"}));
TPU_LOWERING("aten::floor_divide.Scalar", lower_floor_divide, reads({"self", "other"}));
TPU_LOWERING("aten::pow.Tensor_Tensor", lower_pow, reads({"self", "exponent"}));
TPU_LOWERING("aten::pow.Tensor_Scalar", lower_pow_tensor_scalar, reads({"self", "exponent"}));
TPU_LOWERING("aten::pow.Scalar", lower_pow, reads({"self", "exponent"}));
TPU_LOWERING("aten::remainder.Tensor", lower_remainder, reads({"self", "other"}));
TPU_LOWERING("aten::remainder.Scalar", lower_remainder, reads({"self", "other"}));
TPU_LOWERING("aten::remainder.Scalar_Tensor", lower_remainder, reads({"self", "other"}));
TPU_LOWERING("aten::fmod.Tensor", lower_fmod, reads({"self", "other"}));
TPU_LOWERING("aten::fmod.Scalar", lower_fmod, reads({"self", "other"}));
TPU_LOWERING("aten::maximum", lower_maximum, reads({"self", "other"}));
TPU_LOWERING("aten::minimum", lower_minimum, reads({"self", "other"}));
TPU_LOWERING("aten::fmax", lower_fmax, reads({"self", "other"}));
TPU_LOWERING("aten::fmin", lower_fmin, reads({"self", "other"}));
TPU_LOWERING("aten::atan2", lower_atan2, reads({"self", "other"}));
TPU_LOWERING("aten::hypot", lower_hypot, reads({"self", "other"}));
TPU_LOWERING("aten::copysign.Tensor", lower_copysign, reads({"self", "other"}));
TPU_LOWERING("aten::copysign.Scalar", lower_copysign, reads({"self", "other"}));
TPU_LOWERING("aten::xlogy.Tensor", lower_xlogy, reads({"self", "other"}));
TPU_LOWERING("aten::xlogy.Scalar_Self", lower_xlogy, reads({"self", "other"}));
TPU_LOWERING("aten::xlogy.Scalar_Other", lower_xlogy, reads({"self", "other"}));
TPU_LOWERING("aten::logaddexp", lower_logaddexp, reads({"self", "other"}));
TPU_LOWERING("aten::logaddexp2", lower_logaddexp2, reads({"self", "other"}));

}  // namespace tpu::lowering
