#include "lowering/core/reduce_util.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tpu::lowering::reduce {

std::vector<int64_t> dims_or_all(const std::vector<int64_t>& dims, int rank) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    int64_t w = hlo::wrap_dim(d, rank);
    // A 0-d tensor accepts dim 0 / -1 but has nothing to reduce.
    if (rank > 0) out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int64_t> dims_arg(const Ctx& c, std::string_view name, int rank) {
  if (!c.has(name)) return dims_or_all({}, rank);
  const Arg& a = c.arg(name);
  if (a.kind == Arg::Kind::Int) return dims_or_all({a.i}, rank);
  return dims_or_all(a.ints, rank);
}

int64_t count(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  return n;
}

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) out.push_back(shape[i]);
  return out;
}

Shape kept_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape out = shape;
  for (int64_t d : dims) out[d] = 1;
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) throw std::invalid_argument("shapes do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Value lowest(Builder& b, DType t) {
  switch (t) {
    case DType::Bool:
      return hlo::constant_int(b, t, 0);
    case DType::I8:
      return hlo::constant_int(b, t, std::numeric_limits<int8_t>::min());
    case DType::I16:
      return hlo::constant_int(b, t, std::numeric_limits<int16_t>::min());
    case DType::I32:
      return hlo::constant_int(b, t, std::numeric_limits<int32_t>::min());
    case DType::I64:
      return hlo::constant_int(b, t, std::numeric_limits<int64_t>::min());
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64:
      return hlo::constant_int(b, t, 0);
    default:
      return hlo::constant(b, t, -INFINITY);
  }
}

Value highest(Builder& b, DType t) {
  switch (t) {
    case DType::Bool:
      return hlo::constant_int(b, t, 1);
    case DType::I8:
      return hlo::constant_int(b, t, std::numeric_limits<int8_t>::max());
    case DType::I16:
      return hlo::constant_int(b, t, std::numeric_limits<int16_t>::max());
    case DType::I32:
      return hlo::constant_int(b, t, std::numeric_limits<int32_t>::max());
    case DType::I64:
      return hlo::constant_int(b, t, std::numeric_limits<int64_t>::max());
    case DType::U8:
      return hlo::constant_int(b, t, std::numeric_limits<uint8_t>::max());
    case DType::U16:
      return hlo::constant_int(b, t, std::numeric_limits<uint16_t>::max());
    case DType::U32:
      return hlo::constant_int(b, t, std::numeric_limits<uint32_t>::max());
    case DType::U64:
      return hlo::constant_int(b, t, -1);  // printed as 2^64 - 1
    default:
      return hlo::constant(b, t, INFINITY);
  }
}

Value sum(Builder& b, const Value& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  // Bool sums count: or would be wrong, so callers convert first; keep a guard here.
  hlo::Combiner op = x.dtype() == DType::Bool ? hlo::Combiner::Or : hlo::Combiner::Add;
  return hlo::reduce(b, x, hlo::constant(b, x.dtype(), 0), dims, op);
}

Value running_sum(Builder& b, const Value& x, int64_t dim) {
  const int64_t n = x.dim(dim);
  std::vector<int64_t> low(x.rank(), 0), high(x.rank(), 0);
  Value zero = hlo::constant(b, x.dtype(), 0);
  Value acc = x;
  for (int64_t shift = 1; shift < n; shift *= 2) {
    low[dim] = shift;
    acc = hlo::add(b, acc,
                   hlo::pad(b, hlo::slice_dim(b, acc, static_cast<int>(dim), 0, n - shift), zero, low, high));
  }
  return acc;
}

Value prod(Builder& b, const Value& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  hlo::Combiner op = x.dtype() == DType::Bool ? hlo::Combiner::And : hlo::Combiner::Mul;
  return hlo::reduce(b, x, hlo::constant(b, x.dtype(), 1), dims, op);
}

// NaN-propagating max/min. XLA:CPU's reduce does not propagate NaN through
// stablehlo.maximum/minimum, so the float body selects a NaN operand explicitly.
Value extreme(Builder& b, const Value& x, const std::vector<int64_t>& dims, bool is_max) {
  if (dims.empty()) return x;
  DType t = x.dtype();
  Value init = is_max ? lowest(b, t) : highest(b, t);
  if (t == DType::Bool) return hlo::reduce(b, x, init, dims, is_max ? hlo::Combiner::Or : hlo::Combiner::And);
  if (!ir::is_floating(t))
    return hlo::reduce(b, x, init, dims, is_max ? hlo::Combiner::Max : hlo::Combiner::Min);
  return hlo::reduce_multi(b, {x}, {init}, dims,
                           [&](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                             Value m = is_max ? hlo::max(rb, a[0], a[1]) : hlo::min(rb, a[0], a[1]);
                             m = hlo::select(rb, hlo::compare(rb, a[1], a[1], "NE"), a[1], m);
                             return {hlo::select(rb, hlo::compare(rb, a[0], a[0], "NE"), a[0], m)};
                           })[0];
}

Value max(Builder& b, const Value& x, const std::vector<int64_t>& dims) { return extreme(b, x, dims, true); }
Value min(Builder& b, const Value& x, const std::vector<int64_t>& dims) { return extreme(b, x, dims, false); }

Value isnan(Builder& b, const Value& x) {
  if (!ir::is_floating(x.dtype())) return hlo::full(b, hlo::with_dtype(x.type, DType::Bool), 0);
  return hlo::compare(b, x, x, "NE");
}

std::pair<Value, Value> arg_reduce(Builder& b, const Value& x_in, int64_t dim, bool is_max) {
  Value x = x_in;
  if (x.rank() == 0) {
    x = hlo::reshape(b, x, {1});
    dim = 0;
  }
  Value idx = hlo::iota(b, hlo::with_dtype(x.type, DType::I64), dim);
  Value init_v = is_max ? lowest(b, x.dtype()) : highest(b, x.dtype());
  Value init_i = hlo::constant_int(b, DType::I64, 0);
  bool fp = ir::is_floating(x.dtype());
  auto body = [&](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    const Value &av = a[0], &ai = a[1], &bv = a[2], &bi = a[3];
    // a wins when strictly better, or when it is NaN and b is not (NaN beats everything).
    Value a_wins = hlo::compare(rb, av, bv, is_max ? "GT" : "LT");
    Value eq = hlo::compare(rb, av, bv, "EQ");
    if (fp) {
      Value a_nan = hlo::compare(rb, av, av, "NE");
      Value b_nan = hlo::compare(rb, bv, bv, "NE");
      a_wins = hlo::or_(rb, a_wins, hlo::and_(rb, a_nan, hlo::logical_not(rb, b_nan)));
      eq = hlo::or_(rb, eq, hlo::and_(rb, a_nan, b_nan));
    }
    // Ties keep the smaller index, which makes the body associative and commutative.
    Value tie_i = hlo::min(rb, ai, bi);
    Value v = hlo::select(rb, a_wins, av, bv);
    Value i = hlo::select(rb, a_wins, ai, hlo::select(rb, eq, tie_i, bi));
    return {v, i};
  };
  std::vector<Value> r = hlo::reduce_multi(b, {x, idx}, {init_v, init_i}, {dim}, body);
  return {r[0], r[1]};
}

Value expand_back(Builder& b, const Value& r, const Shape& shape, const std::vector<int64_t>& dims) {
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) kept.push_back(i);
  Value v = hlo::reshape(b, r, reduced_shape(shape, dims));
  return hlo::broadcast_in_dim(b, v, shape, kept);
}

}  // namespace tpu::lowering::reduce
