// float8 <-> other dtypes, as c10 converts (c10/util/Float8_*.h via torch/headeronly/util).
//
// To float8: the source becomes float32 first (exact for f16/bf16; f64, integers and complex
// real parts round to float32 as a C++ cast does, which is c10's double rounding), then
// c10's fp8*_from_fp32_value is replayed on the float32 bits with integer ops, including its
// one float32 addition for subnormal results. From float8: XLA's convert is exact for every
// non-NaN value (checked over all 256 patterns by tests/test_float8.py), so only NaN inputs get
// c10's bit patterns: those of its float32 result, carried to f64/f16 the way x86 converts a
// NaN (quiet bit set, payload kept), and bfloat16's single 0x7FC0. Other targets (integers,
// bool, complex, another float8) start from that float32 value, as c10 does.
#include "lowering/core/float8.h"

#include <stdexcept>

#include "lowering/core/hlo.h"

namespace tpu::lowering::float8 {
namespace {

using ir::Builder;
using ir::DType;
using ir::Value;

// Integer helpers on values of one unsigned dtype; constants take the operand's shape.
struct Bits {
  Builder& b;
  Value k(const Value& like, uint64_t v) const {
    return hlo::broadcast_to(b, hlo::constant_int(b, like.dtype(), static_cast<int64_t>(v)), like.shape());
  }
  using Op = Value (*)(Builder&, const Value&, const Value&);
  Value op(Op f, const Value& x, const Value& y) const { return f(b, x, y); }
  Value op(Op f, const Value& x, uint64_t y) const { return op(f, x, k(x, y)); }
  Value cmp(const Value& x, uint64_t y, const char* dir) const { return hlo::compare(b, x, k(x, y), dir); }
  Value sel(const Value& p, const Value& x, uint64_t y) const { return hlo::select(b, p, x, k(x, y)); }
  Value sel(const Value& p, uint64_t x, const Value& y) const { return hlo::select(b, p, k(y, x), y); }
};

Value raw_convert(Builder& b, const Value& x, DType t) { return hlo::xla_convert(b, x, t); }

// c10's fp8e4m3fn / fp8e5m2 / fp8e4m3fnuz / fp8e5m2fnuz _from_fp32_value: round to nearest
// even on the bits; below the smallest normal, one float32 addition of a power of two puts the
// value on the subnormal grid.
struct Format {
  uint32_t max_bits;     // first float32 (bits, sign cleared) that overflows
  uint32_t denorm_mask;  // the power of two of the subnormal addition
  uint32_t min_normal;   // smallest normal, as float32 bits
  int shift;             // float32 mantissa bits dropped
  int bias;              // exponent bias of the float8 type
};

Format format(DType t) {
  switch (t) {
    case DType::F8E4M3FN:
      return {1087u << 20, 141u << 23, 121u << 23, 20, 7};
    case DType::F8E5M2:
      return {143u << 23, 134u << 23, 113u << 23, 21, 15};
    case DType::F8E4M3FNUZ:
      return {0x87u << 23, 0x8Cu << 23, 0x78u << 23, 20, 8};
    case DType::F8E5M2FNUZ:
      return {0x8Fu << 23, 0x85u << 23, 0x70u << 23, 21, 16};
    default:
      throw std::invalid_argument("torch_tpu: not a float8 type with a sign");
  }
}

Value from_f32_signed(Builder& b, const Value& x, DType t) {
  const Format f = format(t);
  Bits u{b};
  Value bits = hlo::bitcast_convert(b, x, DType::U32);
  Value sign = u.op(hlo::and_, bits, 0x80000000u);
  Value a = u.op(hlo::xor_, bits, sign);
  // Subnormal results: float(a) + float(denorm_mask), minus the mask's bits.
  Value sum = hlo::add(b, hlo::bitcast_convert(b, a, DType::F32),
                       hlo::bitcast_convert(b, u.k(a, f.denorm_mask), DType::F32));
  Value denorm = u.op(hlo::sub, hlo::bitcast_convert(b, sum, DType::U32), f.denorm_mask);
  // Normal results: rebias the exponent (mod 2^32), round half to even, drop the low bits.
  const uint32_t rebias = static_cast<uint32_t>(f.bias - 127) << 23;
  Value odd = u.op(hlo::and_, u.op(hlo::shift_right_logical, a, f.shift), 1);
  Value rounded = u.op(hlo::add, u.op(hlo::add, a, rebias + ((1u << (f.shift - 1)) - 1)), odd);
  Value normal = u.op(hlo::shift_right_logical, rounded, f.shift);
  Value r = hlo::select(b, u.cmp(a, f.min_normal, "LT"), denorm, normal);
  Value overflow = u.cmp(a, f.max_bits, "GE");
  Value is_nan = u.cmp(a, 0x7F800000u, "GT");
  Value sign8 = u.op(hlo::shift_right_logical, sign, 24);
  if (t == DType::F8E4M3FN || t == DType::F8E5M2) {
    if (t == DType::F8E4M3FN) r = u.sel(u.cmp(r, 0x7F, "EQ"), 0x7E, r);  // a carry into NaN saturates
    Value big = u.sel(is_nan, 0x7F, u.k(a, t == DType::F8E4M3FN ? 0x7E : 0x7C));
    r = u.op(hlo::or_, hlo::select(b, overflow, big, r), sign8);
  } else {
    // fnuz: one NaN (0x80) for NaN, inf and overflow; no negative zero.
    r = u.sel(u.cmp(r, 0, "EQ"), 0, u.op(hlo::or_, r, sign8));
    r = u.sel(overflow, 0x80, r);
  }
  return hlo::bitcast_convert(b, raw_convert(b, r, DType::U8), t);
}

// c10's fp8e8m0fnu_from_fp32_value: the float32 exponent, rounded up when the dropped mantissa
// is above half, or exactly half with a nonzero exponent; the sign is ignored; inf/NaN -> NaN.
Value from_f32_e8m0(Builder& b, const Value& x) {
  Bits u{b};
  Value bits = hlo::bitcast_convert(b, x, DType::U32);
  Value e = u.op(hlo::and_, u.op(hlo::shift_right_logical, bits, 23), 0xFF);
  auto set = [&](uint32_t mask) { return u.cmp(u.op(hlo::and_, bits, mask), 0, "NE"); };
  Value rest = hlo::or_(b, hlo::or_(b, set(0x200000), set(0x1FFFFF)), u.cmp(e, 0, "GT"));
  Value up = hlo::and_(b, set(0x400000), rest);
  Value r = hlo::add(b, e, raw_convert(b, up, DType::U32));
  r = u.sel(u.cmp(e, 0xFF, "EQ"), 0xFF, r);
  return hlo::bitcast_convert(b, raw_convert(b, r, DType::U8), DType::F8E8M0FNU);
}

Value from_f32(Builder& b, const Value& x, DType t) {
  return t == DType::F8E8M0FNU ? from_f32_e8m0(b, x) : from_f32_signed(b, x, t);
}

// Whether float8 bits `b8` (ui8) are a NaN, and the float32 bits c10 gives that NaN.
std::pair<Value, Value> nan_of(Builder& b, const Value& b8, DType t) {
  Bits u{b};
  Value w = raw_convert(b, b8, DType::U32);
  Value magnitude = u.op(hlo::and_, w, 0x7F);
  Value sign = u.op(hlo::shift_left, u.op(hlo::and_, w, 0x80), 24);
  switch (t) {
    case DType::F8E4M3FN:
      return {u.cmp(magnitude, 0x7F, "EQ"), u.op(hlo::or_, sign, 0x7FF00000u)};
    case DType::F8E5M2: {
      // Through float16 with the hardware's quieting: 0x7C00 | m << 8 -> 0x7FC00000 | m << 21.
      Value payload = u.op(hlo::shift_left, u.op(hlo::and_, w, 3), 21);
      return {u.cmp(magnitude, 0x7C, "GT"), u.op(hlo::or_, u.op(hlo::or_, sign, 0x7FC00000u), payload)};
    }
    case DType::F8E8M0FNU:
      return {u.cmp(w, 0xFF, "EQ"), u.k(w, 0x7F800001u)};
    default:  // fnuz: the single NaN 0x80 becomes a signalling float32 NaN
      return {u.cmp(w, 0x80, "EQ"), u.k(w, 0x7F800001u)};
  }
}

// float32 NaN bits `n` as the NaN a conversion to `t` gives on x86 (c10 for bfloat16).
Value nan_as(Builder& b, const Value& n, DType t) {
  Bits u{b};
  switch (t) {
    case DType::F32:
      return hlo::bitcast_convert(b, n, DType::F32);
    case DType::F64: {
      Value w = raw_convert(b, n, DType::U64);
      Value sign = u.op(hlo::shift_left, u.op(hlo::and_, w, 0x80000000u), 32);
      Value payload = u.op(hlo::shift_left, u.op(hlo::and_, w, 0x7FFFFFu), 29);
      return hlo::bitcast_convert(b, u.op(hlo::or_, u.op(hlo::or_, sign, 0x7FF8000000000000u), payload),
                                  DType::F64);
    }
    case DType::F16: {
      Value sign = u.op(hlo::shift_right_logical, u.op(hlo::and_, n, 0x80000000u), 16);
      Value payload = u.op(hlo::shift_right_logical, u.op(hlo::and_, n, 0x7FFFFFu), 13);
      Value h = u.op(hlo::or_, u.op(hlo::or_, sign, 0x7E00u), payload);
      return hlo::bitcast_convert(b, raw_convert(b, h, DType::U16), DType::F16);
    }
    default:  // BF16: c10::BFloat16 maps every NaN to 0x7FC0
      return hlo::bitcast_convert(b, u.k(raw_convert(b, n, DType::U16), 0x7FC0u), DType::BF16);
  }
}

Value from_float8(Builder& b, const Value& x, DType t) {
  if (t != DType::F32 && t != DType::F64 && t != DType::F16 && t != DType::BF16)
    return hlo::convert(b, from_float8(b, x, DType::F32), t);
  auto [nan, bits] = nan_of(b, hlo::bitcast_convert(b, x, DType::U8), x.dtype());
  return hlo::select(b, nan, nan_as(b, bits, t), raw_convert(b, x, t));
}

// float64 -> float32 as the CPU rounds it, subnormal results included: XLA:CPU flushes those to
// zero, which c10's float8_e8m0fnu (whose smallest value is 2^-127) would see. In that range the
// float32 bits are the sign and round_half_even(|x| * 2^149), computed exactly in float64.
Value f64_to_f32(Builder& b, const Value& x) {
  Bits u{b};
  Value flushed = raw_convert(b, x, DType::F32);
  Value mag = hlo::abs(b, x);
  Value tiny = hlo::compare(b, mag, hlo::full(b, mag.type, 0x1p-126), "LT");
  Value steps = hlo::round_nearest_even(b, hlo::mul(b, mag, hlo::full(b, mag.type, 0x1p149)));
  Value sign = u.op(hlo::and_, hlo::bitcast_convert(b, flushed, DType::U32), 0x80000000u);
  Value sub = u.op(hlo::or_, sign, raw_convert(b, steps, DType::U32));
  return hlo::select(b, tiny, hlo::bitcast_convert(b, sub, DType::F32), flushed);
}

}  // namespace

Value convert(Builder& b, const Value& v, DType dtype) {
  if (v.dtype() == dtype) return v;
  if (!ir::is_float8(dtype)) return from_float8(b, v, dtype);
  Value f32 = ir::is_float8(v.dtype())  ? from_float8(b, v, DType::F32)
              : v.dtype() == DType::F64 ? f64_to_f32(b, v)
                                        : hlo::convert(b, v, DType::F32);
  return from_f32(b, f32, dtype);
}

}  // namespace tpu::lowering::float8
