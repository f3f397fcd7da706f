// Emitters for StableHLO's elementwise ops, one function per op. Each infers its result type as
// StableHLO defines it (the operand's type, except: real / imag / abs of a complex value -> its
// real element type; is_finite and compare -> i1; complex -> the complex type of its parts), and
// throws std::invalid_argument naming the op when the operands' types do not fit together, so a
// wrong type fails where the lowering runs instead of when XLA parses the program.
// Included by lowering/core/hlo.h, the header lowerings use.
#pragma once
#include <optional>
#include <string>

#include "ir/builder.h"

namespace tpu::lowering::hlo {

using ir::Builder;
using ir::DType;
using ir::Value;

// --- unary: the result has the operand's type ----------------------------------------------
Value neg(Builder& b, const Value& x);          // stablehlo.negate
Value not_(Builder& b, const Value& x);         // bitwise; logical on i1
Value logical_not(Builder& b, const Value& x);  // not_ on an i1 value
Value sign(Builder& b, const Value& x);         // -1, 0, 1 (NaN stays NaN)
Value floor(Builder& b, const Value& x);
Value ceil(Builder& b, const Value& x);
Value round_nearest_even(Builder& b, const Value& x);
Value exp(Builder& b, const Value& x);    // stablehlo.exponential
Value expm1(Builder& b, const Value& x);  // stablehlo.exponential_minus_one
Value log(Builder& b, const Value& x);
Value log1p(Builder& b, const Value& x);  // stablehlo.log_plus_one
Value sqrt(Builder& b, const Value& x);
Value rsqrt(Builder& b, const Value& x);
Value sin(Builder& b, const Value& x);  // stablehlo.sine
Value cos(Builder& b, const Value& x);  // stablehlo.cosine
Value tan(Builder& b, const Value& x);
Value tanh(Builder& b, const Value& x);
Value logistic(Builder& b, const Value& x);             // 1 / (1 + e^-x)
Value count_leading_zeros(Builder& b, const Value& x);  // integers

// --- unary with a result type of its own ---------------------------------------------------
// |x|; of a complex x, its real element type.
Value abs(Builder& b, const Value& x);
// The real / imaginary part of x, in its real element type (imag of a real x is 0).
Value real(Builder& b, const Value& x);
Value imag(Builder& b, const Value& x);
// i1 of x's shape: neither inf nor NaN (x real floating point).
Value is_finite(Builder& b, const Value& x);

// --- binary: both operands and the result have one type ----------------------------------
Value add(Builder& b, const Value& x, const Value& y);
Value sub(Builder& b, const Value& x, const Value& y);  // stablehlo.subtract
Value mul(Builder& b, const Value& x, const Value& y);  // stablehlo.multiply
Value div(Builder& b, const Value& x, const Value& y);  // stablehlo.divide
Value rem(Builder& b, const Value& x, const Value& y);  // stablehlo.remainder (sign of x)
Value power(Builder& b, const Value& x, const Value& y);
Value max(Builder& b, const Value& x, const Value& y);  // stablehlo.maximum
Value min(Builder& b, const Value& x, const Value& y);  // stablehlo.minimum
Value atan2(Builder& b, const Value& y, const Value& x);
Value and_(Builder& b, const Value& x, const Value& y);  // bitwise; logical on i1
Value or_(Builder& b, const Value& x, const Value& y);
Value xor_(Builder& b, const Value& x, const Value& y);
Value shift_left(Builder& b, const Value& x, const Value& y);
Value shift_right_logical(Builder& b, const Value& x, const Value& y);
Value shift_right_arithmetic(Builder& b, const Value& x, const Value& y);

// --- binary with a result type of its own --------------------------------------------------
// re + i*im: re and im of one type, f32 or f64; the result is complex of it.
Value complex(Builder& b, const Value& re, const Value& im);
// dir: EQ NE LT LE GT GE; the comparison type follows the operands' dtype. The result is i1.
Value compare(Builder& b, const Value& x, const Value& y, const std::string& dir);
// pred (i1, x's shape or 0-d) ? on_true : on_false, elementwise.
Value select(Builder& b, const Value& pred, const Value& on_true, const Value& on_false);

// --- conversions ---------------------------------------------------------------------------
// x's bits as `dtype`. Same width: same shape. A narrower dtype adds a last dimension of the
// width ratio; a wider one consumes x's last dimension, which must be that ratio.
Value bitcast_convert(Builder& b, const Value& x, DType dtype);
// stablehlo.convert as XLA rounds it, always emitted. Lowerings use convert (lowering/core/hlo.h),
// which skips same-dtype conversions and rounds float8 as c10 does on top of this one.
Value xla_convert(Builder& b, const Value& x, DType dtype);
// x rounded to a float format of `exponent_bits` / `mantissa_bits`, keeping x's type.
Value reduce_precision(Builder& b, const Value& x, int exponent_bits, int mantissa_bits);

// --- combiners -----------------------------------------------------------------------------
// The binary op a reduce, reduce_window, scatter or collective region combines values with.
// (On i1, Add and Mul are not or / and: callers pick Or / And for bool themselves.)
enum class Combiner { Add, Mul, Max, Min, And, Or, Xor };
Value combine(Builder& b, Combiner c, const Value& x, const Value& y);
// A region body (acc, x) -> combine(acc, x), for reduce-like ops over one operand.
Builder::RegionBody combiner_body(Combiner c);
// What a scatter does with each update: combine it with the element, or replace the element.
using ScatterCombiner = std::optional<Combiner>;
inline constexpr std::nullopt_t kReplace = std::nullopt;

}  // namespace tpu::lowering::hlo
