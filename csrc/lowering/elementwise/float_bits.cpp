// Ops defined on the IEEE encoding of floats: nextafter and frexp, computed on the bits
// (bitcast to the same-width integer), so they are exact for every floating dtype and need no
// arithmetic on subnormals (which XLA may flush to zero).
#include <cstdint>
#include <stdexcept>

#include "lowering/core/elementwise_ops.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using ir::Builder;
using ir::DType;
using ir::Value;
using Vs = std::vector<Value>;

struct Layout {
  DType bits;    // same-width integer
  int mantissa;  // explicit mantissa bits
  int exponent;  // exponent field bits
  int width() const { return ir::itemsize(bits) * 8; }
  int64_t bias() const { return (int64_t{1} << (exponent - 1)) - 1; }
};

Layout layout(DType t) {
  switch (t) {
    case DType::F16:
      return {DType::I16, 10, 5};
    case DType::BF16:
      return {DType::I16, 7, 8};
    case DType::F32:
      return {DType::I32, 23, 8};
    case DType::F64:
      return {DType::I64, 52, 11};
    default:
      throw std::invalid_argument("torch_tpu: expected a floating point tensor");
  }
}

// An integer constant of like's type (exact for 64-bit masks, which doubles are not).
Value icst(Builder& b, const Value& like, int64_t v) {
  return hlo::broadcast_to(b, hlo::constant_int(b, like.dtype(), v), like.shape());
}
Value band(Builder& b, const Value& x, int64_t m) { return hlo::and_(b, x, icst(b, x, m)); }
Value bor(Builder& b, const Value& x, const Value& y) { return hlo::or_(b, x, y); }
Value shl(Builder& b, const Value& x, const Value& n) { return hlo::shift_left(b, x, n); }
Value shr(Builder& b, const Value& x, int64_t n) { return hlo::shift_right_logical(b, x, icst(b, x, n)); }

// nextafter(x, y): the neighbouring float of x in y's direction. Stepping the magnitude's bits
// by one crosses binades and reaches inf correctly; from zero the step is the smallest
// subnormal carrying y's sign.
Value nextafter_(Builder& b, const Value& x, const Value& y) {
  Layout l = layout(x.dtype());
  Value bits = hlo::bitcast_convert(b, x, l.bits);
  Value away_from_zero = hlo::compare(b, hlo::compare(b, y, x, "GT"), gt(b, x, 0), "EQ");
  Value stepped = hlo::add(b, bits, hlo::select(b, away_from_zero, icst(b, bits, 1), icst(b, bits, -1)));
  int64_t sign_bit = static_cast<int64_t>(uint64_t{1} << (l.width() - 1));
  if (l.width() < 64) sign_bit = -(int64_t{1} << (l.width() - 1));  // the same bit, sign-extended
  Value tiny = hlo::select(b, signbit(b, y), icst(b, bits, sign_bit | 1), icst(b, bits, 1));
  Value r = hlo::bitcast_convert(b, hlo::select(b, eq(b, x, 0), tiny, stepped), x.dtype());
  r = hlo::select(b, hlo::compare(b, x, y, "EQ"), y, r);
  return hlo::select(b, or_(b, is_nan(b, x), is_nan(b, y)), hlo::add(b, x, y), r);
}

Vs lower_nextafter(Ctx& ctx) {
  return compute_exact(ctx, {"self", "other"},
                       [](Builder& b, const Vs& x) { return nextafter_(b, x[0], x[1]); });
}

// frexp(x) = (m, e) with x = m 2^e, |m| in [0.5, 1); (x, 0) for zeros, infinities and NaN.
// Subnormals are normalised by the position of their leading mantissa bit.
Vs lower_frexp(Ctx& ctx) {
  Builder& b = ctx.b;
  Value x = ctx.tensor("self");
  Layout l = layout(x.dtype());
  Value bits = hlo::bitcast_convert(b, x, l.bits);
  int64_t mant_mask = (int64_t{1} << l.mantissa) - 1;
  int64_t exp_mask = (int64_t{1} << l.exponent) - 1;
  Value field = band(b, shr(b, bits, l.mantissa), exp_mask);
  Value sign = band(b, bits, l.width() == 64 ? INT64_MIN : -(int64_t{1} << (l.width() - 1)));
  Value mant = band(b, bits, mant_mask);
  Value half_exp = icst(b, bits, (l.bias() - 1) << l.mantissa);  // the exponent field of 0.5
  // Normal numbers: exponent field - (bias - 1), mantissa with the exponent field of 0.5.
  Value e_normal = hlo::sub(b, field, icst(b, field, l.bias() - 1));
  Value m_normal = bor(b, bor(b, sign, mant), half_exp);
  // Subnormals: mant = m, L its bit length; x = (m / 2^L) 2^(L - bias + 1 - mantissa).
  Value len = hlo::sub(b, icst(b, mant, l.width()), hlo::count_leading_zeros(b, mant));
  Value e_sub = hlo::sub(b, len, icst(b, len, l.bias() - 1 + l.mantissa));
  Value shifted = shl(b, mant, hlo::sub(b, icst(b, len, l.mantissa + 1), len));
  Value m_sub = bor(b, bor(b, sign, band(b, shifted, mant_mask)), half_exp);
  Value subnormal = hlo::compare(b, field, icst(b, field, 0), "EQ");
  Value e = hlo::select(b, subnormal, e_sub, e_normal);
  Value m = hlo::bitcast_convert(b, hlo::select(b, subnormal, m_sub, m_normal), x.dtype());
  // Zero from the bits: a comparison could treat subnormals as zero.
  Value zero = hlo::compare(b, hlo::sub(b, bits, sign), icst(b, bits, 0), "EQ");
  Value special = or_(b, zero, or_(b, is_inf(b, x), is_nan(b, x)));
  m = hlo::select(b, special, x, m);
  e = hlo::select(b, special, icst(b, e, 0), e);
  return {finish(ctx, m, 0), finish(ctx, hlo::convert(b, e, ctx.out(1).dtype), 1)};
}

}  // namespace

TPU_LOWERING("aten::nextafter", lower_nextafter, reads({"self", "other"}));
TPU_LOWERING("aten::frexp.Tensor", lower_frexp, reads({"self"}));

}  // namespace tpu::lowering
