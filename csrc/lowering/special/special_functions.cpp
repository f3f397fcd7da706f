// Special functions of torch and torch.special: the gamma family (lgamma, digamma, polygamma,
// zeta), Bessel functions, the error-function relatives (erfcx, ndtri, log_ndtr) and
// entr / xlog1py. The math lives in gamma_math / bessel_math / special_math; this file states
// the ATen semantics (edge values, argument order). Integer and bool inputs compute in the float output type,
// f16/bf16 in f32.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "lowering/core/elementwise_ops.h"
#include "lowering/special/bessel_math.h"
#include "lowering/special/gamma_math.h"
#include "lowering/special/special_math.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT: the helpers are this file's vocabulary
using ir::Builder;
using ir::Value;
using Vs = std::vector<Value>;

constexpr double kInf = std::numeric_limits<double>::infinity();

Value lgamma_(Builder& b, const Value& x) { return special::lgamma(b, x); }
Value digamma_(Builder& b, const Value& x) { return special::digamma(b, x); }
Value erfcx_(Builder& b, const Value& x) { return special::erfcx(b, x); }
Value ndtri_(Builder& b, const Value& x) { return special::ndtri(b, x); }

Value i0_(Builder& b, const Value& x) { return special::bessel_i0(b, x); }
Value i0e_(Builder& b, const Value& x) { return special::bessel_i0e(b, x); }
Value i1_(Builder& b, const Value& x) { return special::bessel_i1(b, x); }
Value i1e_(Builder& b, const Value& x) { return special::bessel_i1e(b, x); }
Value k0_(Builder& b, const Value& x) { return special::bessel_k0(b, x, false); }
Value k1_(Builder& b, const Value& x) { return special::bessel_k1(b, x, false); }
Value k0e_(Builder& b, const Value& x) { return special::bessel_k0(b, x, true); }
Value k1e_(Builder& b, const Value& x) { return special::bessel_k1(b, x, true); }
Value j0_(Builder& b, const Value& x) { return special::bessel_j0(b, x); }
Value j1_(Builder& b, const Value& x) { return special::bessel_j1(b, x); }
Value y0_(Builder& b, const Value& x) { return special::bessel_y0(b, x); }
Value y1_(Builder& b, const Value& x) { return special::bessel_y1(b, x); }
Value airy_ai_(Builder& b, const Value& x) { return special::airy_ai(b, x); }

// sin(x) / x: 1 at 0 and 0 at +-inf.
Value spherical_j0_(Builder& b, const Value& x) {
  Value r = hlo::div(b, hlo::sin(b, x), x);
  r = hlo::select(b, eq(b, x, 0), cst(b, x, 1), r);
  return hlo::select(b, is_inf(b, x), cst(b, x, 0), r);
}

// log Phi(x): log1p(-erfc(x / sqrt 2) / 2) while Phi is not small, and through erfcx in the
// lower tail, where Phi itself would underflow: log(erfcx(-t) / 2) - t^2.
Value log_ndtr_(Builder& b, const Value& x) {
  Value t = mul_c(b, x, M_SQRT1_2);
  Value upper = log1p(b, mul_c(b, special::erfc(b, t), -0.5));
  Value lower = hlo::sub(b, log(b, mul_c(b, special::erfcx(b, hlo::neg(b, t)), 0.5)), hlo::mul(b, t, t));
  return hlo::select(b, lt(b, x, -1), lower, upper);
}

// entr(x) = -x log x, 0 at 0 and -inf for x < 0 (NaN stays NaN).
Value entr_(Builder& b, const Value& x) {
  Value r = hlo::neg(b, hlo::mul(b, x, log(b, x)));
  r = hlo::select(b, eq(b, x, 0), cst(b, x, 0), r);
  return hlo::select(b, lt(b, x, 0), cst(b, x, -kInf), r);
}

// polygamma(int n, Tensor self)
// Elements with q < -64 (zeta's arguments), where its fixed shift does not reach q >= 0.
void require_zeta_domain(Ctx& ctx, const Value& unsupported, const char* name) {
  std::vector<int64_t> dims;
  for (int i = 0; i < unsupported.rank(); ++i) dims.push_back(i);
  Value any =
      hlo::reduce(ctx.b, unsupported, hlo::constant(ctx.b, ir::DType::Bool, 0), dims, hlo::Combiner::Or);
  ctx.require(not_(ctx.b, any), std::string("torch_tpu: ") + name + " supports arguments >= -64 on tpu");
}

Vs lower_polygamma(Ctx& ctx) {
  int64_t n = ctx.int_arg("n");
  Value unsupported;
  Vs out = compute(ctx, {"self"}, [&](Builder& b, const Vs& x) {
    unsupported = special::zeta_unsupported(b, x[0]);
    return special::polygamma(b, n, x[0]);
  });
  if (n >= 2) require_zeta_domain(ctx, unsupported, "polygamma");
  return out;
}

// mvlgamma(self, int p) = p (p - 1) / 4 log(pi) + sum_i lgamma(self - i / 2), i < p, summed
// in CPU's order (i from p - 1 down to 0). Lowered directly (not through CPU's composite, which
// builds the offsets with arange), with the composite's argument checks.
Vs lower_mvlgamma(Ctx& ctx) {
  int64_t p = ctx.int_arg("p");
  if (p < 1) throw std::invalid_argument("p has to be greater than or equal to 1");
  Value domain;
  Vs out = compute(ctx, {"self"}, [&](Builder& b, const Vs& x) {
    Value sum;
    for (int64_t i = p - 1; i >= 0; --i) {
      Value term = special::lgamma(b, add_c(b, x[0], -0.5 * static_cast<double>(i)));
      sum = sum.valid() ? hlo::add(b, sum, term) : term;
    }
    domain = gt(b, x[0], 0.5 * static_cast<double>(p - 1));
    return add_c(b, sum, static_cast<double>(p * (p - 1)) * std::log(M_PI) / 4);
  });
  std::vector<int64_t> dims;
  for (int i = 0; i < domain.rank(); ++i) dims.push_back(i);
  Value all = hlo::reduce(ctx.b, domain, hlo::constant(ctx.b, ir::DType::Bool, 1), dims, hlo::Combiner::And);
  ctx.require(all, "All elements must be greater than (p-1)/2");
  return out;
}

// special_zeta(self = s, other = q)
Vs lower_zeta(Ctx& ctx) {
  Value unsupported;
  Vs out = compute(ctx, {"self", "other"}, [&](Builder& b, const Vs& x) {
    // Only integer s are defined for q < 0.
    Value s_int = hlo::compare(b, x[0], hlo::floor(b, x[0]), "EQ");
    unsupported = and_(b, special::zeta_unsupported(b, x[1]), s_int);
    return special::zeta(b, x[0], x[1]);
  });
  require_zeta_domain(ctx, unsupported, "zeta");
  return out;
}

// igamma(self = a, other = x) and igammac.
template <bool Upper>
Vs lower_incomplete_gamma(Ctx& ctx) {
  Value unsupported;
  Vs out = compute(ctx, {"self", "other"}, [&](Builder& b, const Vs& x) {
    unsupported = special::incomplete_gamma_unsupported(b, x[0], x[1]);
    return special::incomplete_gamma(b, x[0], x[1], Upper);
  });
  std::vector<int64_t> dims;
  for (int i = 0; i < unsupported.rank(); ++i) dims.push_back(i);
  Value any =
      hlo::reduce(ctx.b, unsupported, hlo::constant(ctx.b, ir::DType::Bool, 0), dims, hlo::Combiner::Or);
  ctx.require(not_(ctx.b, any), std::string("torch_tpu: ") + (Upper ? "igammac" : "igamma") +
                                    " supports a > 150 on tpu only away from x ~ a (x < a/2 or x > 2a)");
  return out;
}

// xlog1py(x, y) = x * log1p(y), 0 where x == 0 unless y is NaN.
Vs lower_xlog1py(Ctx& ctx) {
  return compute(ctx, {"self", "other"}, [](Builder& b, const Vs& x) {
    Value r = hlo::mul(b, x[0], log1p(b, x[1]));
    r = hlo::select(b, eq(b, x[0], 0), cst(b, r, 0), r);
    return hlo::select(b, is_nan(b, x[1]), x[1], r);
  });
}

}  // namespace

TPU_LOWERING("aten::lgamma", ew::unary<lgamma_>, reads({"self"}));
TPU_LOWERING("aten::digamma", ew::unary<digamma_>, reads({"self"}));
TPU_LOWERING("aten::polygamma", lower_polygamma, reads({"n", "self"}));
TPU_LOWERING("aten::mvlgamma", lower_mvlgamma, reads({"self", "p"}));
TPU_LOWERING("aten::special_zeta", lower_zeta, reads({"self", "other"}));
TPU_LOWERING("aten::igamma", lower_incomplete_gamma<false>, reads({"self", "other"}));
TPU_LOWERING("aten::igammac", lower_incomplete_gamma<true>, reads({"self", "other"}));
TPU_LOWERING("aten::i0", ew::unary<i0_>, reads({"self"}));
TPU_LOWERING("aten::special_i0e", ew::unary<i0e_>, reads({"self"}));
TPU_LOWERING("aten::special_i1", ew::unary<i1_>, reads({"self"}));
TPU_LOWERING("aten::special_i1e", ew::unary<i1e_>, reads({"self"}));
TPU_LOWERING("aten::special_modified_bessel_i0", ew::unary<i0_>, reads({"self"}));
TPU_LOWERING("aten::special_modified_bessel_i1", ew::unary<i1_>, reads({"self"}));
TPU_LOWERING("aten::special_modified_bessel_k0", ew::unary<k0_>, reads({"self"}));
TPU_LOWERING("aten::special_modified_bessel_k1", ew::unary<k1_>, reads({"self"}));
TPU_LOWERING("aten::special_scaled_modified_bessel_k0", ew::unary<k0e_, ew::kX>, reads({"x"}));
TPU_LOWERING("aten::special_scaled_modified_bessel_k1", ew::unary<k1e_, ew::kX>, reads({"x"}));
TPU_LOWERING("aten::special_bessel_j0", ew::unary<j0_>, reads({"self"}));
TPU_LOWERING("aten::special_bessel_j1", ew::unary<j1_>, reads({"self"}));
TPU_LOWERING("aten::special_bessel_y0", ew::unary<y0_>, reads({"self"}));
TPU_LOWERING("aten::special_bessel_y1", ew::unary<y1_>, reads({"self"}));
TPU_LOWERING("aten::special_spherical_bessel_j0", ew::unary<spherical_j0_, ew::kX>, reads({"x"}));
TPU_LOWERING("aten::special_airy_ai", ew::unary<airy_ai_, ew::kX>, reads({"x"}));
TPU_LOWERING("aten::special_erfcx", ew::unary<erfcx_>, reads({"self"}));
TPU_LOWERING("aten::special_ndtri", ew::unary<ndtri_>, reads({"self"}));
TPU_LOWERING("aten::special_log_ndtr", ew::unary<log_ndtr_>, reads({"self"}));
TPU_LOWERING("aten::special_entr", ew::unary<entr_>, reads({"self"}));
TPU_LOWERING("aten::special_xlog1py", lower_xlog1py, reads({"self", "other"}));

}  // namespace tpu::lowering
