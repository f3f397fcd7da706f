#include "lowering/linalg/jacobi.h"

namespace tpu::lowering::linalg {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Value;

namespace {

std::vector<Value> column_starts(Builder& b, const Value& x, const Value& j) {
  std::vector<Value> starts(x.rank(), hlo::constant_int(b, DType::I64, 0));
  starts.back() = j;
  return starts;
}

}  // namespace

Value column(Builder& b, const Value& x, const Value& j) {
  Shape sizes = x.shape();
  sizes.back() = 1;
  return hlo::dynamic_slice(b, x, column_starts(b, x, j), sizes);
}

Value set_column(Builder& b, const Value& x, const Value& c, const Value& j) {
  return hlo::dynamic_update_slice(b, x, c, column_starts(b, x, j));
}

Value per_matrix(Builder& b, const Value& v, const Value& like) {
  std::vector<int64_t> dims;
  for (int i = 0; i < v.rank(); ++i) dims.push_back(i);
  return hlo::broadcast_in_dim(b, v, like.shape(), dims);
}

Rotation rotation(Builder& b, const Value& app, const Value& aqq, const Value& apq, const Value& active) {
  const ir::Type& t = apq.type;
  Value zero = hlo::full(b, t, 0), one = hlo::full(b, t, 1);
  Value safe = hlo::select(b, active, apq, one);
  Value theta = hlo::div(b, hlo::sub(b, aqq, app), hlo::mul(b, hlo::full(b, t, 2), safe));
  Value root = hlo::sqrt(b, hlo::add(b, one, hlo::mul(b, theta, theta)));
  Value tt = hlo::div(b, one, hlo::add(b, hlo::abs(b, theta), root));
  tt = hlo::select(b, hlo::compare(b, theta, zero, "LT"), hlo::neg(b, tt), tt);
  tt = hlo::select(b, active, tt, zero);
  Value c = hlo::div(b, one, hlo::sqrt(b, hlo::add(b, one, hlo::mul(b, tt, tt))));
  return {c, hlo::mul(b, tt, c), tt};
}

Value rotate_columns(Builder& b, const Value& x, const Rotation& r, const Value& p, const Value& q) {
  Value xp = column(b, x, p), xq = column(b, x, q);
  Value c = per_matrix(b, r.c, xp), s = per_matrix(b, r.s, xp);
  Value np = hlo::sub(b, hlo::mul(b, c, xp), hlo::mul(b, s, xq));
  Value nq = hlo::add(b, hlo::mul(b, s, xp), hlo::mul(b, c, xq));
  return set_column(b, set_column(b, x, np, p), nq, q);
}

}  // namespace tpu::lowering::linalg
