#include "lowering/core/hlo_elementwise.h"

#include <stdexcept>

namespace tpu::lowering::hlo {

namespace {

using ir::Type;

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

void require_same_types(const char* op, const Value& x, const Value& y) {
  if (!(x.type == y.type)) fail(op, "operand types " + x.type.str() + " and " + y.type.str() + " differ");
}

// An op whose result has its operand's type.
Value unary(Builder& b, const char* op, const Value& x) { return b.op1(op, {x}, x.type); }

// An op whose operands and result have one type.
Value binary(Builder& b, const char* op, const Value& x, const Value& y) {
  require_same_types(op, x, y);
  return b.op1(op, {x, y}, x.type);
}

// An op from a complex value to its real element type (identity on the type of a real one).
Value to_real_part(Builder& b, const char* op, const Value& x) {
  return b.op1(op, {x}, Type{ir::real_type(x.dtype()), x.shape()});
}

}  // namespace

Value neg(Builder& b, const Value& x) { return unary(b, "stablehlo.negate", x); }
Value not_(Builder& b, const Value& x) { return unary(b, "stablehlo.not", x); }
Value logical_not(Builder& b, const Value& x) { return not_(b, x); }
Value sign(Builder& b, const Value& x) { return unary(b, "stablehlo.sign", x); }
Value floor(Builder& b, const Value& x) { return unary(b, "stablehlo.floor", x); }
Value ceil(Builder& b, const Value& x) { return unary(b, "stablehlo.ceil", x); }
Value round_nearest_even(Builder& b, const Value& x) { return unary(b, "stablehlo.round_nearest_even", x); }
Value exp(Builder& b, const Value& x) { return unary(b, "stablehlo.exponential", x); }
Value expm1(Builder& b, const Value& x) { return unary(b, "stablehlo.exponential_minus_one", x); }
Value log(Builder& b, const Value& x) { return unary(b, "stablehlo.log", x); }
Value log1p(Builder& b, const Value& x) { return unary(b, "stablehlo.log_plus_one", x); }
Value sqrt(Builder& b, const Value& x) { return unary(b, "stablehlo.sqrt", x); }
Value rsqrt(Builder& b, const Value& x) { return unary(b, "stablehlo.rsqrt", x); }
Value sin(Builder& b, const Value& x) { return unary(b, "stablehlo.sine", x); }
Value cos(Builder& b, const Value& x) { return unary(b, "stablehlo.cosine", x); }
Value tan(Builder& b, const Value& x) { return unary(b, "stablehlo.tan", x); }
Value tanh(Builder& b, const Value& x) { return unary(b, "stablehlo.tanh", x); }
Value logistic(Builder& b, const Value& x) { return unary(b, "stablehlo.logistic", x); }
Value count_leading_zeros(Builder& b, const Value& x) { return unary(b, "stablehlo.count_leading_zeros", x); }

Value abs(Builder& b, const Value& x) { return to_real_part(b, "stablehlo.abs", x); }
Value real(Builder& b, const Value& x) { return to_real_part(b, "stablehlo.real", x); }
Value imag(Builder& b, const Value& x) { return to_real_part(b, "stablehlo.imag", x); }

Value is_finite(Builder& b, const Value& x) {
  if (!ir::is_floating(x.dtype()) || ir::is_complex(x.dtype()))
    fail("stablehlo.is_finite", "operand type " + x.type.str() + " is not a real floating-point type");
  return b.op1("stablehlo.is_finite", {x}, Type{DType::Bool, x.shape()});
}

Value add(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.add", x, y); }
Value sub(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.subtract", x, y); }
Value mul(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.multiply", x, y); }
Value div(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.divide", x, y); }
Value rem(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.remainder", x, y); }
Value power(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.power", x, y); }
Value max(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.maximum", x, y); }
Value min(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.minimum", x, y); }
Value atan2(Builder& b, const Value& y, const Value& x) { return binary(b, "stablehlo.atan2", y, x); }
Value and_(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.and", x, y); }
Value or_(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.or", x, y); }
Value xor_(Builder& b, const Value& x, const Value& y) { return binary(b, "stablehlo.xor", x, y); }
Value shift_left(Builder& b, const Value& x, const Value& y) {
  return binary(b, "stablehlo.shift_left", x, y);
}
Value shift_right_logical(Builder& b, const Value& x, const Value& y) {
  return binary(b, "stablehlo.shift_right_logical", x, y);
}
Value shift_right_arithmetic(Builder& b, const Value& x, const Value& y) {
  return binary(b, "stablehlo.shift_right_arithmetic", x, y);
}

Value complex(Builder& b, const Value& re, const Value& im) {
  constexpr const char* op = "stablehlo.complex";
  require_same_types(op, re, im);
  if (re.dtype() != DType::F32 && re.dtype() != DType::F64)
    fail(op, "operand type " + re.type.str() + " is not f32 or f64");
  const DType t = re.dtype() == DType::F64 ? DType::C128 : DType::C64;
  return b.op1(op, {re, im}, Type{t, re.shape()});
}

Value compare(Builder& b, const Value& x, const Value& y, const std::string& dir) {
  constexpr const char* op = "stablehlo.compare";
  require_same_types(op, x, y);
  DType t = x.dtype();
  const char* type = ir::is_floating(t) || ir::is_complex(t) ? "FLOAT"
                     : ir::is_unsigned(t)                    ? "UNSIGNED"
                                                             : "SIGNED";
  return b.op1(op, {x, y}, Type{DType::Bool, x.shape()},
               "comparison_direction = #stablehlo<comparison_direction " + dir +
                   ">, compare_type = #stablehlo<comparison_type " + type + ">");
}

Value select(Builder& b, const Value& pred, const Value& on_true, const Value& on_false) {
  constexpr const char* op = "stablehlo.select";
  require_same_types(op, on_true, on_false);
  if (pred.dtype() != DType::Bool || (pred.rank() != 0 && pred.shape() != on_true.shape()))
    fail(op, "predicate type " + pred.type.str() + " is not i1 of the operands' shape " + on_true.type.str() +
                 " or 0-d");
  return b.op1(op, {pred, on_true, on_false}, on_true.type);
}

Value bitcast_convert(Builder& b, const Value& x, DType dtype) {
  constexpr const char* op = "stablehlo.bitcast_convert";
  const int from = ir::itemsize(x.dtype()), to = ir::itemsize(dtype);
  ir::Shape shape = x.shape();
  if (from > to) {
    shape.push_back(from / to);
  } else if (from < to) {
    if (shape.empty() || shape.back() != to / from)
      fail(op, "operand type " + x.type.str() + " does not end in a dimension of " +
                   std::to_string(to / from) + " elements of one " + ir::mlir_name(dtype));
    shape.pop_back();
  }
  return b.op1(op, {x}, Type{dtype, shape});
}

Value xla_convert(Builder& b, const Value& x, DType dtype) {
  return b.op1("stablehlo.convert", {x}, Type{dtype, x.shape()});
}

Value reduce_precision(Builder& b, const Value& x, int exponent_bits, int mantissa_bits) {
  return b.op1("stablehlo.reduce_precision", {x}, x.type,
               "exponent_bits = " + std::to_string(exponent_bits) +
                   " : i32, mantissa_bits = " + std::to_string(mantissa_bits) + " : i32");
}

Value combine(Builder& b, Combiner c, const Value& x, const Value& y) {
  switch (c) {
    case Combiner::Add:
      return add(b, x, y);
    case Combiner::Mul:
      return mul(b, x, y);
    case Combiner::Max:
      return max(b, x, y);
    case Combiner::Min:
      return min(b, x, y);
    case Combiner::And:
      return and_(b, x, y);
    case Combiner::Or:
      return or_(b, x, y);
    case Combiner::Xor:
      return xor_(b, x, y);
  }
  throw std::invalid_argument("unknown combiner " + std::to_string(static_cast<int>(c)));
}

Builder::RegionBody combiner_body(Combiner c) {
  return [c](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    return {combine(rb, c, a[0], a[1])};
  };
}

}  // namespace tpu::lowering::hlo
