#include "lowering/core/elementwise_ops.h"

#include <limits>
#include <stdexcept>

namespace tpu::lowering::ew {

Value cst(Builder& b, const Value& like, double v) { return hlo::scalar_like(b, like, v); }

Value is_nan(Builder& b, const Value& x) {
  if (!ir::is_floating(x.dtype())) return hlo::full(b, hlo::with_dtype(x.type, DType::Bool), 0);
  return hlo::compare(b, x, x, "NE");
}

Value is_inf(Builder& b, const Value& x) {
  if (!ir::is_floating(x.dtype())) return hlo::full(b, hlo::with_dtype(x.type, DType::Bool), 0);
  return hlo::compare(b, abs(b, x), cst(b, x, std::numeric_limits<double>::infinity()), "EQ");
}

Value and_(Builder& b, const Value& x, const Value& y) { return hlo::and_(b, x, y); }
Value or_(Builder& b, const Value& x, const Value& y) { return hlo::or_(b, x, y); }
Value xor_(Builder& b, const Value& x, const Value& y) { return hlo::xor_(b, x, y); }
Value not_(Builder& b, const Value& x) { return hlo::not_(b, x); }

Value lt(Builder& b, const Value& x, double v) { return hlo::compare(b, x, cst(b, x, v), "LT"); }
Value le(Builder& b, const Value& x, double v) { return hlo::compare(b, x, cst(b, x, v), "LE"); }
Value gt(Builder& b, const Value& x, double v) { return hlo::compare(b, x, cst(b, x, v), "GT"); }
Value ge(Builder& b, const Value& x, double v) { return hlo::compare(b, x, cst(b, x, v), "GE"); }
Value eq(Builder& b, const Value& x, double v) { return hlo::compare(b, x, cst(b, x, v), "EQ"); }
Value add_c(Builder& b, const Value& x, double v) { return hlo::add(b, x, cst(b, x, v)); }
Value mul_c(Builder& b, const Value& x, double v) { return hlo::mul(b, x, cst(b, x, v)); }

Value to_bool(Builder& b, const Value& x) {
  if (x.dtype() == DType::Bool) return x;
  return hlo::compare(b, x, cst(b, x, 0), "NE");
}

Value trunc(Builder& b, const Value& x) {
  if (!ir::is_floating(x.dtype())) return x;
  // ceil for negatives keeps -0.0 for x in (-1, 0), as C trunc does.
  return hlo::select(b, lt(b, x, 0), hlo::ceil(b, x), hlo::floor(b, x));
}

namespace {

DType same_width_int(DType t) {
  switch (ir::itemsize(t)) {
    case 2:
      return DType::I16;
    case 4:
      return DType::I32;
    default:
      return DType::I64;
  }
}

}  // namespace

Value signbit(Builder& b, const Value& x) {
  DType t = x.dtype();
  if (ir::is_unsigned(t)) return hlo::full(b, hlo::with_dtype(x.type, DType::Bool), 0);
  if (ir::is_integral(t)) return lt(b, x, 0);
  // The sign bit of the IEEE encoding: a comparison would miss -0.0 and negative NaNs.
  Value bits = hlo::bitcast_convert(b, x, same_width_int(t));
  return lt(b, bits, 0);
}

Value copysign(Builder& b, const Value& mag, const Value& sgn) {
  Value a = abs(b, mag);
  return hlo::select(b, signbit(b, sgn), hlo::neg(b, a), a);
}

// XLA:CPU's maximum/minimum return the non-NaN operand when only `y` is NaN, despite the
// spec; the explicit selects make NaN win from either side.
Value propagate_nan(Builder& b, const Value& x, const Value& y, const Value& r) {
  if (!ir::is_floating(x.dtype())) return r;
  return hlo::select(b, is_nan(b, x), x, hlo::select(b, is_nan(b, y), y, r));
}
Value maximum(Builder& b, const Value& x, const Value& y) {
  return propagate_nan(b, x, y, hlo::max(b, x, y));
}
Value minimum(Builder& b, const Value& x, const Value& y) {
  return propagate_nan(b, x, y, hlo::min(b, x, y));
}

Value polynomial(Builder& b, const Value& x, const std::vector<double>& coeffs) {
  Value p = cst(b, x, coeffs.at(0));
  for (size_t i = 1; i < coeffs.size(); ++i) p = add_c(b, hlo::mul(b, p, x), coeffs[i]);
  return p;
}

Value exp(Builder& b, const Value& x) { return hlo::exp(b, x); }
Value log(Builder& b, const Value& x) { return hlo::log(b, x); }
Value log1p(Builder& b, const Value& x) { return hlo::log1p(b, x); }
Value expm1(Builder& b, const Value& x) { return hlo::expm1(b, x); }
Value sqrt(Builder& b, const Value& x) { return hlo::sqrt(b, x); }
Value tanh(Builder& b, const Value& x) { return hlo::tanh(b, x); }
Value sigmoid(Builder& b, const Value& x) { return hlo::logistic(b, x); }

double max_finite(DType t) {
  switch (t) {
    case DType::F16:
      return 65504.0;
    case DType::BF16:
      return 3.3895313892515355e38;
    case DType::F32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace tpu::lowering::ew
