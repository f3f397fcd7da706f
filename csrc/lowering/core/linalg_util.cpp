#include "lowering/core/linalg_util.h"

#include <stdexcept>
#include <string>

#include "lowering/core/reduce_util.h"

namespace tpu::lowering::linalg {

Value i64(Builder& b, int64_t v) { return hlo::constant_int(b, DType::I64, v); }

Value mT(Builder& b, const Value& x) {
  std::vector<int64_t> perm;
  for (int i = 0; i < x.rank(); ++i) perm.push_back(i);
  std::swap(perm[x.rank() - 1], perm[x.rank() - 2]);
  return hlo::transpose(b, x, perm);
}

Value mH(Builder& b, const Value& x) { return conj(b, mT(b, x)); }

Value cabs1(Builder& b, const Value& x) {
  if (!ir::is_complex(x.dtype())) return hlo::abs(b, x);
  return hlo::add(b, hlo::abs(b, hlo::real(b, x)), hlo::abs(b, hlo::imag(b, x)));
}

Value matmul(Builder& b, const Value& x, const Value& y) {
  std::vector<int64_t> batch;
  for (int i = 0; i < x.rank() - 2; ++i) batch.push_back(i);
  return hlo::dot_general(b, x, y, batch, batch, {x.rank() - 1}, {y.rank() - 2}, x.dtype());
}

Shape batch_of(const Shape& shape, int keep) { return Shape(shape.begin(), shape.end() - keep); }

Value broadcast_batch(Builder& b, const Value& x, const Shape& batch, int keep) {
  Shape shape = batch;
  for (int i = x.rank() - keep; i < x.rank(); ++i) shape.push_back(x.dim(i));
  if (shape == x.shape()) return x;
  return hlo::broadcast_to(b, x, shape);
}

Value tri_mask(Builder& b, const Shape& shape, int64_t k, bool lower) {
  int r = static_cast<int>(shape.size());
  Type it{DType::I64, shape};
  Value diff = hlo::sub(b, hlo::iota(b, it, r - 1), hlo::iota(b, it, r - 2));
  return hlo::compare(b, diff, hlo::full(b, it, static_cast<double>(k)), lower ? "LE" : "GE");
}

Value tril(Builder& b, const Value& x, int64_t k) {
  return hlo::select(b, tri_mask(b, x.shape(), k, true), x, hlo::full(b, x.type, 0));
}

Value triu(Builder& b, const Value& x, int64_t k) {
  return hlo::select(b, tri_mask(b, x.shape(), k, false), x, hlo::full(b, x.type, 0));
}

Value eye(Builder& b, const Type& t) {
  Type it{DType::I64, t.shape};
  Value on = hlo::compare(b, hlo::iota(b, it, t.rank() - 1), hlo::iota(b, it, t.rank() - 2), "EQ");
  return hlo::select(b, on, hlo::full(b, t, 1), hlo::full(b, t, 0));
}

Value diagonal(Builder& b, const Value& x) {
  int r = x.rank();
  int64_t k = std::min(x.dim(-1), x.dim(-2));
  Value sq = hlo::slice(b, x, std::vector<int64_t>(r, 0), [&] {
    Shape lim = x.shape();
    lim[r - 1] = lim[r - 2] = k;
    return lim;
  }());
  Value on = hlo::compare(b, hlo::iota(b, Type{DType::I64, sq.shape()}, r - 1),
                          hlo::iota(b, Type{DType::I64, sq.shape()}, r - 2), "EQ");
  return reduce::sum(b, hlo::select(b, on, sq, hlo::full(b, sq.type, 0)), {r - 1});
}

namespace {
// Entry `idx` (one per batch element: the dimensions before `dim`) along dimension `dim` of x.
Value pick_at(Builder& b, const Value& x, const Value& idx, int dim) {
  std::vector<int64_t> kept;
  for (int i = 0; i < dim; ++i) kept.push_back(i);
  Type it{DType::I64, x.shape()};
  Value at = hlo::compare(b, hlo::iota(b, it, dim),
                          hlo::broadcast_in_dim(b, hlo::convert(b, idx, DType::I64), x.shape(), kept), "EQ");
  return reduce::sum(b, hlo::select(b, at, x, hlo::full(b, x.type, 0)), {dim});
}
}  // namespace

Value row_at(Builder& b, const Value& x, const Value& idx) { return pick_at(b, x, idx, x.rank() - 2); }

Value elem_at(Builder& b, const Value& x, const Value& idx) { return pick_at(b, x, idx, x.rank() - 1); }

Value triangular_solve(Builder& b, const Value& a, const Value& rhs, bool left, bool lower,
                       bool unit_diagonal, bool transpose_a, bool conjugate) {
  if (rhs.type.numel() == 0) return hlo::full(b, rhs.type, 0);
  // Zero the unused triangle so no implementation reads garbage from it.
  Value tri = lower ? tril(b, a) : triu(b, a);
  // Real matrices keep TRANSPOSE (their adjoint), complex ones ask for ADJOINT when conjugated.
  const hlo::TriangularOp op = !transpose_a                             ? hlo::TriangularOp::NoTranspose
                               : conjugate && ir::is_complex(a.dtype()) ? hlo::TriangularOp::Adjoint
                                                                        : hlo::TriangularOp::Transpose;
  return hlo::triangular_solve(b, tri, rhs, left, lower, unit_diagonal, op);
}

std::vector<Value> fori_loop(Builder& b, const Value& n, const std::vector<Value>& init,
                             const LoopBody& body) {
  // Loop state: (i, n, init...); the bound travels with the state because regions capture nothing.
  std::vector<Value> operands{hlo::constant_int(b, DType::I64, 0), n};
  operands.insert(operands.end(), init.begin(), init.end());
  auto cond = [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    return {hlo::compare(rb, a[0], a[1], "LT")};
  };
  auto step = [&body](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    std::vector<Value> state(a.begin() + 2, a.end());
    std::vector<Value> next = body(rb, a[0], state);
    next.insert(next.begin(), a[1]);
    next.insert(next.begin(), hlo::add(rb, a[0], hlo::constant_int(rb, DType::I64, 1)));
    return next;
  };
  std::vector<Value> out = hlo::while_loop(b, operands, cond, step);
  return std::vector<Value>(out.begin() + 2, out.end());
}

std::vector<Value> fori_loop(Builder& b, int64_t n, const std::vector<Value>& init, const LoopBody& body) {
  if (n <= 0) return init;
  return fori_loop(b, hlo::constant_int(b, DType::I64, n), init, body);
}

}  // namespace tpu::lowering::linalg
