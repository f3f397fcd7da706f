#include "lowering/creation/random_bits.h"

#include <algorithm>
#include <cmath>

#include "lowering/core/hlo.h"

namespace tpu::lowering {

using ir::DType;
using ir::Type;
using ir::Value;

namespace {

thread_local const PaddedDraws* g_padded_draws = nullptr;

int64_t element_count(const ir::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// For a draw of `shape` inside a PaddedDraws whose bounds end `shape`: each element's position
// in the flat draw of the real extent (i64 of `shape`; gather clamps those of padding in range).
// Invalid otherwise.
Value real_positions(ir::Builder& b, const ir::Shape& shape) {
  const PaddedDraws* p = g_padded_draws;
  if (p == nullptr || !any_dynamic(p->dims) || shape.size() < p->bounds.size() ||
      !std::equal(p->bounds.begin(), p->bounds.end(), shape.end() - static_cast<long>(p->bounds.size())))
    return {};
  const size_t lead = shape.size() - p->bounds.size();
  const ir::Type index{DType::I64, shape};
  Value position = hlo::full(b, index, 0), stride = hlo::constant_int(b, DType::I64, 1);
  for (size_t d = shape.size(); d-- > 0;) {
    Value coordinate = hlo::iota(b, index, static_cast<int64_t>(d));
    position = hlo::add(b, position, hlo::mul(b, coordinate, hlo::broadcast_in_dim(b, stride, shape, {})));
    Value size = d >= lead && p->dims.size() > d - lead && p->dims[d - lead].valid()
                     ? p->dims[d - lead]
                     : hlo::constant_int(b, DType::I64, shape[d]);
    stride = hlo::mul(b, stride, size);
  }
  return position;
}

// Random bits of `shape`; `state` becomes the generator's state after them.
Value bits(ir::Builder& b, Value& state, const ir::Shape& shape, DType bits_type) {
  const int64_t n = element_count(shape);
  auto [next, flat] = hlo::rng_bit_generator(b, state, bits_type, {n});
  state = next;
  Value positions = real_positions(b, shape);
  if (!positions.valid()) return hlo::reshape(b, flat, shape);
  hlo::GatherDims dims;
  dims.collapsed_slice_dims = {0};
  dims.start_index_map = {0};
  dims.index_vector_dim = static_cast<int64_t>(shape.size());
  dims.slice_sizes = {1};
  return hlo::gather(b, flat, positions, dims);
}

// Values m * 2^-p in [0, 1) from the top p mantissa bits of each draw (p = 23 for f32, 52 for
// f64): the mantissa under the exponent of 1.0 gives a value in [1, 2), less 1 exactly.
Value mantissa_fraction(ir::Builder& b, Value& state, const ir::Shape& shape, DType dtype) {
  if (dtype == DType::F64) {
    Value r = bits(b, state, shape, DType::U64);
    Type t{DType::U64, shape};
    Value mant = hlo::shift_right_logical(b, r, hlo::full(b, t, 12));
    Value one_bits = hlo::or_(b, mant, hlo::full_int(b, t, 0x3FF0000000000000));  // 1.0's exponent
    Value f = hlo::bitcast_convert(b, one_bits, DType::F64);
    return hlo::sub(b, f, hlo::full(b, f.type, 1.0));
  }
  Value r = bits(b, state, shape, DType::U32);
  Type t{DType::U32, shape};
  Value mant = hlo::shift_right_logical(b, r, hlo::full(b, t, 9));
  Value one_bits = hlo::or_(b, mant, hlo::full(b, t, 1065353216.0));
  Value f = hlo::bitcast_convert(b, one_bits, DType::F32);
  return hlo::sub(b, f, hlo::full(b, f.type, 1.0));
}

}  // namespace

PaddedDraws::PaddedDraws(const ir::Shape& bounds_, const Dims& dims_)
    : previous_(g_padded_draws), bounds(bounds_), dims(dims_) {
  g_padded_draws = this;
}

PaddedDraws::~PaddedDraws() { g_padded_draws = previous_; }

Value random_u64(ir::Builder& b, const Value& state, const ir::Shape& shape) {
  Value s = state;
  return bits(b, s, shape, DType::U64);
}

Value uniform01(ir::Builder& b, const Value& state, const ir::Shape& shape, DType dtype) {
  Value s = state;
  return mantissa_fraction(b, s, shape, dtype);
}

Value standard_normal(ir::Builder& b, const Value& state, const ir::Shape& shape, DType dtype) {
  // Box-Muller draws two values per result: more than the call reserved in f64 (one counter per
  // 64-bit value), so it draws from the op's own stream.
  Value s = private_state(b, state);
  return next_normal(b, s, shape, dtype);
}

Value private_state(ir::Builder& b, const Value& state) {
  Value s = state;
  Value key = bits(b, s, {1}, DType::U64);
  return hlo::concatenate(b, {key, hlo::full(b, key.type, 0)}, 0);
}

Value next_uniform01(ir::Builder& b, Value& state, const ir::Shape& shape, DType dtype) {
  return mantissa_fraction(b, state, shape, dtype);
}

Value next_uniform_open(ir::Builder& b, Value& state, const ir::Shape& shape, DType dtype) {
  // m * 2^-p + 2^-(p+1) = (2m + 1) * 2^-(p+1): exact, symmetric about 1/2, never 0 or 1.
  Value f = mantissa_fraction(b, state, shape, dtype);
  return hlo::add(b, f,
                  hlo::full(b, f.type, dtype == DType::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24)));
}

Value next_normal(ir::Builder& b, Value& state, const ir::Shape& shape, DType dtype) {
  // Box-Muller on two independent uniform halves of one draw.
  ir::Shape doubled = shape;
  doubled.insert(doubled.begin(), 2);
  Value u = mantissa_fraction(b, state, doubled, dtype);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  Value flat = hlo::reshape(b, u, {2, n});
  Value u1 = hlo::reshape(b, hlo::slice(b, flat, {0, 0}, {1, n}), shape);
  Value u2 = hlo::reshape(b, hlo::slice(b, flat, {1, 0}, {2, n}), shape);
  u1 = hlo::sub(b, hlo::full(b, u1.type, 1.0), u1);  // (0, 1]: log stays finite
  Value radius = hlo::sqrt(b, hlo::mul(b, hlo::full(b, u1.type, -2.0), hlo::log(b, u1)));
  Value angle = hlo::mul(b, hlo::full(b, u2.type, 2.0 * M_PI), u2);
  return hlo::mul(b, radius, hlo::cos(b, angle));
}

}  // namespace tpu::lowering
