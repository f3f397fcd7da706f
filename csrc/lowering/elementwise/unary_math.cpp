// Unary math: aten::exp, sin, sqrt, floor, isnan, ... Float-only ops compute integer and bool
// inputs in the float output type; f16/bf16 compute in f32 and round once (CPU opmath).
// Functions without a StableHLO op (asin, sinh, asinh, ...) use formulas chosen for
// accuracy over the whole range, not the textbook ones that cancel or overflow early.
#include <cmath>
#include <limits>

#include "lowering/core/elementwise_ops.h"
#include "lowering/special/special_math.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT: the helpers are this file's vocabulary
using ir::Builder;
using ir::DType;
using ir::Value;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLn2 = 0.69314718055994530942;

// --- dtype-preserving exact ops --------------------------------------------------------------

Value neg_(Builder& b, const Value& x) {
  // negate is specified for signed types; unsigned wraps like C (0 - x).
  if (ir::is_unsigned(x.dtype())) return hlo::sub(b, cst(b, x, 0), x);
  return hlo::neg(b, x);
}

// torch.sign: (0 < x) - (x < 0), so NaN gives 0 (stablehlo.sign would give NaN).
Value sign_(Builder& b, const Value& x) {
  if (x.dtype() == DType::Bool) return x;
  Value one = cst(b, x, 1), zero = cst(b, x, 0);
  Value pos = hlo::select(b, gt(b, x, 0), one, zero);
  if (ir::is_unsigned(x.dtype())) return pos;
  return hlo::sub(b, pos, hlo::select(b, lt(b, x, 0), one, zero));
}

// torch.sgn: sign for real inputs, z / |z| (0 at 0) for complex ones.
Value sgn_(Builder& b, const Value& x) {
  if (!ir::is_complex(x.dtype())) return sign_(b, x);
  const ir::Type part = hlo::with_dtype(x.type, ir::real_type(x.dtype()));
  Value mag = hlo::abs(b, x);
  Value zero = hlo::full(b, part, 0);
  Value is_zero = hlo::compare(b, mag, zero, "EQ");
  auto scaled = [&](const Value& component) {
    return hlo::select(b, is_zero, zero, hlo::div(b, component, mag));
  };
  Value re = scaled(hlo::real(b, x));
  Value im = scaled(hlo::imag(b, x));
  return hlo::complex(b, re, im);
}
std::vector<Value> lower_sgn(Ctx& ctx) {
  return compute_exact(
      ctx, {"self"}, [](Builder& b, const std::vector<Value>& x) { return sgn_(b, x[0]); }, true);
}

template <Value (*Round)(Builder&, const Value&)>
Value float_or_id(Builder& b, const Value& x) {
  return ir::is_floating(x.dtype()) ? Round(b, x) : x;  // integers are already integral
}
Value floor_(Builder& b, const Value& x) { return float_or_id<hlo::floor>(b, x); }
Value ceil_(Builder& b, const Value& x) { return float_or_id<hlo::ceil>(b, x); }
Value round_(Builder& b, const Value& x) { return float_or_id<hlo::round_nearest_even>(b, x); }
Value trunc_(Builder& b, const Value& x) { return trunc(b, x); }
Value frac_(Builder& b, const Value& x) { return hlo::sub(b, x, trunc(b, x)); }
Value abs_(Builder& b, const Value& x) { return abs(b, x); }

// --- exponentials and logarithms -------------------------------------------------------------

Value exp_(Builder& b, const Value& x) { return exp(b, x); }
Value exp2_(Builder& b, const Value& x) {
  // pow(2, x) is exact at integers; exp(x * ln2) would carry x's rounding times |x|.
  return hlo::power(b, cst(b, x, 2), x);
}
Value expm1_(Builder& b, const Value& x) { return expm1(b, x); }
Value log_(Builder& b, const Value& x) { return log(b, x); }
Value log2_(Builder& b, const Value& x) { return mul_c(b, log(b, x), 1 / kLn2); }
Value log10_(Builder& b, const Value& x) { return mul_c(b, log(b, x), 1 / std::log(10.0)); }
Value log1p_(Builder& b, const Value& x) { return log1p(b, x); }
Value sqrt_(Builder& b, const Value& x) { return sqrt(b, x); }
Value rsqrt_(Builder& b, const Value& x) { return hlo::rsqrt(b, x); }
Value reciprocal_(Builder& b, const Value& x) { return hlo::div(b, cst(b, x, 1), x); }
Value sigmoid_(Builder& b, const Value& x) { return sigmoid(b, x); }

// --- trigonometric ---------------------------------------------------------------------------

Value sin_(Builder& b, const Value& x) { return hlo::sin(b, x); }
Value cos_(Builder& b, const Value& x) { return hlo::cos(b, x); }
// sin/cos rather than stablehlo.tan, which only newer StableHLO versions (and plugins) have.
Value tan_(Builder& b, const Value& x) { return hlo::div(b, sin_(b, x), cos_(b, x)); }
Value atan_(Builder& b, const Value& x) { return hlo::atan2(b, x, cst(b, x, 1)); }
// sqrt(1 - x^2) as sqrt((1 - x)(1 + x)): 1 - x is exact near 1, where asin/acos are steep.
Value cos_of_asin(Builder& b, const Value& x) {
  Value one = cst(b, x, 1);
  return sqrt(b, hlo::mul(b, hlo::sub(b, one, x), hlo::add(b, one, x)));
}
Value asin_(Builder& b, const Value& x) { return hlo::atan2(b, x, cos_of_asin(b, x)); }
Value acos_(Builder& b, const Value& x) { return hlo::atan2(b, cos_of_asin(b, x), x); }

// --- hyperbolic --------------------------------------------------------------------------------

// Where exp(a) overflows but cosh/sinh do not (a in (88.7, 89.4] for f32), e^a / 2 is computed
// as (e^(a/2) / 2) * e^(a/2).
Value half_exp_wide(Builder& b, const Value& a) {
  Value h = exp(b, mul_c(b, a, 0.5));
  return hlo::mul(b, mul_c(b, h, 0.5), h);
}

Value sinh_(Builder& b, const Value& x) {
  Value a = abs(b, x);
  // |x| < 1: from expm1, since e^a - e^-a cancels: sinh = (e + e / (e + 1)) / 2, e = expm1(a).
  Value e = expm1(b, a);
  Value small = mul_c(b, hlo::add(b, e, hlo::div(b, e, add_c(b, e, 1))), 0.5);
  Value ea = exp(b, a);
  Value big = hlo::sub(b, mul_c(b, ea, 0.5), hlo::div(b, cst(b, a, 0.5), ea));
  big = hlo::select(b, is_inf(b, ea), half_exp_wide(b, a), big);
  return copysign(b, hlo::select(b, lt(b, a, 1), small, big), x);
}

Value cosh_(Builder& b, const Value& x) {
  Value a = abs(b, x);
  Value ea = exp(b, a);
  Value r = hlo::add(b, mul_c(b, ea, 0.5), hlo::div(b, cst(b, a, 0.5), ea));
  return hlo::select(b, is_inf(b, ea), half_exp_wide(b, a), r);
}

Value tanh_(Builder& b, const Value& x) { return tanh(b, x); }

// Beyond 1/sqrt(eps), sqrt(x^2 + 1) == |x| and x^2 may overflow: asinh ~ acosh ~ log(2x).
double big_arg(const Value& x) { return x.dtype() == DType::F64 ? 1e8 : 4096; }

Value asinh_(Builder& b, const Value& x) {
  Value a = abs(b, x);
  Value a2 = hlo::mul(b, a, a);
  // log1p(a + a^2 / (1 + sqrt(1 + a^2))) = log(a + sqrt(a^2 + 1)) without cancellation near 0.
  Value small = log1p(b, hlo::add(b, a, hlo::div(b, a2, add_c(b, sqrt(b, add_c(b, a2, 1)), 1))));
  Value big = add_c(b, log(b, a), kLn2);
  return copysign(b, hlo::select(b, gt(b, a, big_arg(x)), big, small), x);
}

Value acosh_(Builder& b, const Value& x) {
  // log1p(t + sqrt(2t + t^2)) with t = x - 1 (exact near 1, where acosh is steep).
  Value t = add_c(b, x, -1);
  Value small = log1p(b, hlo::add(b, t, sqrt(b, hlo::add(b, mul_c(b, t, 2), hlo::mul(b, t, t)))));
  Value big = add_c(b, log(b, x), kLn2);
  return hlo::select(b, gt(b, x, big_arg(x)), big, small);
}

Value atanh_(Builder& b, const Value& x) {
  // atanh(a) = log1p(2a / (1 - a)) / 2: exact 1 - a, no cancellation near 0; inf at 1, NaN past.
  Value a = abs(b, x);
  Value r = mul_c(b, log1p(b, hlo::div(b, mul_c(b, a, 2), hlo::sub(b, cst(b, a, 1), a))), 0.5);
  return copysign(b, r, x);
}

Value erf_(Builder& b, const Value& x) { return special::erf(b, x); }
Value erfc_(Builder& b, const Value& x) { return special::erfc(b, x); }
Value erfinv_(Builder& b, const Value& x) { return special::erfinv(b, x); }

// angle of a real number: pi for negatives, 0 otherwise, NaN stays NaN.
Value angle_(Builder& b, const Value& x) {
  Value r = hlo::select(b, lt(b, x, 0), cst(b, x, M_PI), cst(b, x, 0));
  return hlo::select(b, is_nan(b, x), x, r);
}

Value deg2rad_(Builder& b, const Value& x) { return mul_c(b, x, M_PI / 180); }
Value rad2deg_(Builder& b, const Value& x) { return mul_c(b, x, 180 / M_PI); }

// abs and angle of a complex input have a real result (the out dtype), computed on the input
// itself: the generic path would first convert the input to that dtype, dropping the imaginary
// part.
// |z| as hypot(re, im): inf when either part is infinite, else NaN when either is NaN (XLA's
// complex abs returns a finite value for a NaN imaginary part).
Value complex_abs(Builder& b, const Value& z) {
  Value re = hlo::real(b, z);
  Value im = hlo::imag(b, z);
  Value r = hlo::abs(b, z);
  r = hlo::select(b, or_(b, is_nan(b, re), is_nan(b, im)), cst(b, r, std::nan("")), r);
  return hlo::select(b, or_(b, is_inf(b, re), is_inf(b, im)), cst(b, r, kInf), r);
}
Value complex_angle(Builder& b, const Value& z) {
  Value re = hlo::real(b, z);
  Value im = hlo::imag(b, z);
  return hlo::atan2(b, im, re);
}
template <Value (*Complex)(Builder&, const Value&), std::vector<Value> (*Real)(Ctx&)>
std::vector<Value> complex_to_real(Ctx& ctx) {
  if (!ir::is_complex(ctx.tensor("self").dtype())) return Real(ctx);
  return {finish(ctx, Complex(ctx.b, ctx.tensor("self")))};
}

// --- lowerings with non-tensor arguments or bool results --------------------------------------

std::vector<Value> lower_neg(Ctx& ctx) {
  return compute_exact(
      ctx, {"self"}, [](Builder& b, const std::vector<Value>& x) { return neg_(b, x[0]); }, true);
}

// round(x, decimals): as CPU, scale by 10^d, round half to even, scale back (dividing by
// 10^-d for negative d keeps the scale factor exact).
std::vector<Value> lower_round_decimals(Ctx& ctx) {
  int64_t d = ctx.int_arg("decimals");
  return compute(ctx, {"self"}, [d](Builder& b, const std::vector<Value>& x) {
    if (!ir::is_floating(x[0].dtype())) return x[0];
    Value scale = cst(b, x[0], std::pow(10.0, static_cast<double>(d < 0 ? -d : d)));
    if (d >= 0) return hlo::div(b, round_(b, hlo::mul(b, x[0], scale)), scale);
    return hlo::mul(b, round_(b, hlo::div(b, x[0], scale)), scale);
  });
}

// Predicates: computed on the input as is, bool result.
template <Value (*F)(Builder&, const Value&)>
std::vector<Value> predicate(Ctx& ctx) {
  const Value& x = ctx.tensor("self");
  if (ir::is_complex(x.dtype())) {
    // isnan / isinf of a complex number: of either part (PyTorch rejects the other predicates
    // for complex inputs before they get here).
    Value re = hlo::real(ctx.b, x);
    Value im = hlo::imag(ctx.b, x);
    return {finish(ctx, or_(ctx.b, F(ctx.b, re), F(ctx.b, im)))};
  }
  return {finish(ctx, F(ctx.b, x))};
}
Value isnan_(Builder& b, const Value& x) { return is_nan(b, x); }
Value isinf_(Builder& b, const Value& x) { return is_inf(b, x); }
Value isposinf_(Builder& b, const Value& x) {
  if (!ir::is_floating(x.dtype())) return is_nan(b, x);  // all false
  return eq(b, x, kInf);
}
Value isneginf_(Builder& b, const Value& x) {
  if (!ir::is_floating(x.dtype())) return is_nan(b, x);
  return eq(b, x, -kInf);
}
Value signbit_(Builder& b, const Value& x) { return signbit(b, x); }

// nan_to_num(self, nan=None, posinf=None, neginf=None): defaults 0, max and lowest finite.
std::vector<Value> lower_nan_to_num(Ctx& ctx) {
  Builder& b = ctx.b;
  Value x = ctx.tensor("self");
  require_real(x.dtype());
  if (!ir::is_floating(x.dtype())) return {finish(ctx, x)};
  DType t = x.dtype();
  auto replacement = [&](std::string_view name, double fallback) {
    return ctx.has(name) ? operand_like_out(ctx, name, t) : cst(b, x, fallback);
  };
  Value r = hlo::select(b, is_nan(b, x), replacement("nan", 0), x);
  r = hlo::select(b, eq(b, x, kInf), replacement("posinf", max_finite(t)), r);
  r = hlo::select(b, eq(b, x, -kInf), replacement("neginf", -max_finite(t)), r);
  return {finish(ctx, r)};
}

}  // namespace

TPU_LOWERING("aten::neg", lower_neg, reads({"self"}));
TPU_LOWERING("aten::abs", complex_to_real<complex_abs, ew::unary_exact<abs_>>, reads({"self"}));
TPU_LOWERING("aten::sign", ew::unary_exact<sign_>, reads({"self"}));
TPU_LOWERING("aten::sgn", lower_sgn, reads({"self"}));
TPU_LOWERING("aten::floor", ew::unary_exact<floor_>, reads({"self"}));
TPU_LOWERING("aten::ceil", ew::unary_exact<ceil_>, reads({"self"}));
TPU_LOWERING("aten::round", ew::unary_exact<round_>, reads({"self"}));
TPU_LOWERING("aten::round.decimals", lower_round_decimals, reads({"self", "decimals"}));
TPU_LOWERING("aten::trunc", ew::unary_exact<trunc_>, reads({"self"}));
TPU_LOWERING("aten::frac", ew::unary<frac_>, reads({"self"}));

TPU_LOWERING("aten::exp", ew::unary_complex<exp_>, reads({"self"}));
TPU_LOWERING("aten::exp2", ew::unary<exp2_>, reads({"self"}));
TPU_LOWERING("aten::expm1", ew::unary_complex<expm1_>, reads({"self"}));
TPU_LOWERING("aten::log", ew::unary_complex<log_>, reads({"self"}));
TPU_LOWERING("aten::log2", ew::unary<log2_>, reads({"self"}));
TPU_LOWERING("aten::log10", ew::unary<log10_>, reads({"self"}));
TPU_LOWERING("aten::log1p", ew::unary_complex<log1p_>, reads({"self"}));
TPU_LOWERING("aten::sqrt", ew::unary_complex<sqrt_>, reads({"self"}));
TPU_LOWERING("aten::rsqrt", ew::unary_complex<rsqrt_>, reads({"self"}));
TPU_LOWERING("aten::reciprocal", ew::unary_complex<reciprocal_>, reads({"self"}));
TPU_LOWERING("aten::sigmoid", ew::unary_complex<sigmoid_>, reads({"self"}));

TPU_LOWERING("aten::sin", ew::unary_complex<sin_>, reads({"self"}));
TPU_LOWERING("aten::cos", ew::unary_complex<cos_>, reads({"self"}));
TPU_LOWERING("aten::tan", ew::unary<tan_>, reads({"self"}));
TPU_LOWERING("aten::asin", ew::unary<asin_>, reads({"self"}));
TPU_LOWERING("aten::acos", ew::unary<acos_>, reads({"self"}));
TPU_LOWERING("aten::atan", ew::unary<atan_>, reads({"self"}));
TPU_LOWERING("aten::sinh", ew::unary<sinh_>, reads({"self"}));
TPU_LOWERING("aten::cosh", ew::unary<cosh_>, reads({"self"}));
TPU_LOWERING("aten::tanh", ew::unary_complex<tanh_>, reads({"self"}));
TPU_LOWERING("aten::asinh", ew::unary<asinh_>, reads({"self"}));
TPU_LOWERING("aten::acosh", ew::unary<acosh_>, reads({"self"}));
TPU_LOWERING("aten::atanh", ew::unary<atanh_>, reads({"self"}));
TPU_LOWERING("aten::erf", ew::unary<erf_>, reads({"self"}));
TPU_LOWERING("aten::erfc", ew::unary<erfc_>, reads({"self"}));
TPU_LOWERING("aten::erfinv", ew::unary<erfinv_>, reads({"self"}));
TPU_LOWERING("aten::angle", complex_to_real<complex_angle, ew::unary<angle_>>, reads({"self"}));
TPU_LOWERING("aten::deg2rad", ew::unary<deg2rad_>, reads({"self"}));
TPU_LOWERING("aten::rad2deg", ew::unary<rad2deg_>, reads({"self"}));

TPU_LOWERING("aten::isnan", predicate<isnan_>, reads({"self"}));
TPU_LOWERING("aten::isinf", predicate<isinf_>, reads({"self"}));
TPU_LOWERING("aten::isposinf", predicate<isposinf_>, reads({"self"}));
TPU_LOWERING("aten::isneginf", predicate<isneginf_>, reads({"self"}));
TPU_LOWERING("aten::signbit", predicate<signbit_>, reads({"self"}));
TPU_LOWERING("aten::nan_to_num", lower_nan_to_num, reads({"self", "nan", "posinf", "neginf"}));

}  // namespace tpu::lowering
