// LU with partial pivoting as a stablehlo.while over the columns (right-looking, unblocked):
// at step i the pivot is the first row r >= i of largest |A[r, i]| (LAPACK's isamax; for
// complex dtypes |Re| + |Im|, izamax's measure), rows i and r are swapped, the column below
// the pivot is scaled by 1/pivot and the trailing block gets the rank-1 update. A zero pivot leaves the
// column unscaled and records info, as getrf.
#include "lowering/linalg/lu.h"

#include "lowering/core/reduce_util.h"

namespace tpu::lowering::linalg {

namespace {

// x[..., i] for a 0-d i64 i shared by the whole batch: [..., n] -> [...].
Value take_last(Builder& b, const Value& x, const Value& i) {
  std::vector<Value> starts(x.rank(), hlo::constant_int(b, DType::I64, 0));
  starts.back() = i;
  Shape sizes = x.shape();
  sizes.back() = 1;
  return hlo::reshape(b, hlo::dynamic_slice(b, x, starts, sizes), batch_of(x.shape(), 1));
}

// Column i of x [..., m, n] -> [..., m].
Value column(Builder& b, const Value& x, const Value& i) {
  std::vector<Value> starts(x.rank(), hlo::constant_int(b, DType::I64, 0));
  starts.back() = i;
  Shape sizes = x.shape();
  sizes.back() = 1;
  Shape out = batch_of(x.shape(), 1);
  return hlo::reshape(b, hlo::dynamic_slice(b, x, starts, sizes), out);
}

// v [..., k] broadcast along a new dimension `at` (rank-1 or rank-2 of the matrix shape).
Value spread(Builder& b, const Value& v, const Shape& shape, int new_dim) {
  std::vector<int64_t> dims;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d != new_dim) dims.push_back(d);
  return hlo::broadcast_in_dim(b, v, shape, dims);
}

Value scalar_to(Builder& b, const Value& s, const Shape& shape) {
  return hlo::broadcast_in_dim(b, s, shape, {});
}

}  // namespace

LuResult lu_factor(Builder& b, const Value& a) {
  int r = a.rank();
  int64_t m = a.dim(-2), n = a.dim(-1), k = std::min(m, n);
  Shape batch = batch_of(a.shape());
  Shape piv_shape = batch;
  piv_shape.push_back(k);
  Value piv0 = hlo::iota(b, Type{DType::I32, piv_shape}, r - 2);
  piv0 = hlo::add(b, piv0, hlo::full(b, piv0.type, 1));
  Value info0 = hlo::full(b, Type{DType::I32, batch}, 0);
  if (a.type.numel() == 0 || k == 0) return {a, piv0, info0};
  std::vector<int64_t> prefix;  // the batch dimensions, to broadcast [...] to [..., m, n]
  for (int d = 0; d < r - 2; ++d) prefix.push_back(d);
  auto body = [&, prefix](Builder& rb, const Value& i, const std::vector<Value>& s) -> std::vector<Value> {
    Value lu = s[0], piv = s[1], info = s[2];
    Shape col_shape = batch_of(lu.shape(), 1);  // [..., m]
    Type rows_t{DType::I64, col_shape};
    Value row_ids = hlo::iota(rb, rows_t, r - 2);
    // Pivot row: first max |A[r, i]| over r >= i (rows above get -1, below every |x|).
    Value col = column(rb, lu, i);
    Value below = hlo::compare(rb, row_ids, scalar_to(rb, i, col_shape), "GE");
    Value mag = cabs1(rb, col);  // |re| + |im| for complex, as izamax
    Value cand = hlo::select(rb, below, mag, hlo::full(rb, mag.type, -1));
    Value p = reduce::arg_reduce(rb, cand, r - 2, true).second;  // [...] i64
    // Swap rows i and p.
    Value row_i = row_at(rb, lu, hlo::broadcast_in_dim(rb, i, batch, {}));
    Value row_p = row_at(rb, lu, p);
    Type mat_i{DType::I64, lu.shape()};
    Value rid = hlo::iota(rb, mat_i, r - 2), cid = hlo::iota(rb, mat_i, r - 1);
    Value is_i = hlo::compare(rb, rid, scalar_to(rb, i, lu.shape()), "EQ");
    Value is_p = hlo::compare(rb, rid, hlo::broadcast_in_dim(rb, p, lu.shape(), prefix), "EQ");
    lu = hlo::select(rb, is_i, spread(rb, row_p, lu.shape(), r - 2),
                     hlo::select(rb, is_p, spread(rb, row_i, lu.shape(), r - 2), lu));
    // Scale the column below the pivot by its reciprocal (unless the pivot is zero).
    Value d = take_last(rb, row_p, i);  // [...]
    Value dz = hlo::compare(rb, d, hlo::full(rb, d.type, 0), "EQ");
    Value recip = hlo::div(rb, hlo::full(rb, d.type, 1), hlo::select(rb, dz, hlo::full(rb, d.type, 1), d));
    Value l = column(rb, lu, i);
    l = hlo::select(rb, spread(rb, dz, col_shape, r - 2), l,
                    hlo::mul(rb, l, spread(rb, recip, col_shape, r - 2)));
    // Trailing update A[r, c] -= l[r] * u[c] for r, c > i; the scaled column for c == i.
    Value lb = spread(rb, l, lu.shape(), r - 1), ub = spread(rb, row_p, lu.shape(), r - 2);
    Value isb = scalar_to(rb, i, lu.shape());
    Value r_gt = hlo::compare(rb, rid, isb, "GT");
    Value c_gt = hlo::compare(rb, cid, isb, "GT");
    Value c_eq = hlo::compare(rb, cid, isb, "EQ");
    Value updated = hlo::sub(rb, lu, hlo::mul(rb, lb, ub));
    lu = hlo::select(rb, r_gt, hlo::select(rb, c_gt, updated, hlo::select(rb, c_eq, lb, lu)), lu);
    // Record the pivot (1-based) and the first zero pivot.
    Type piv_i{DType::I64, piv.shape()};
    Value at = hlo::compare(rb, hlo::iota(rb, piv_i, r - 2), scalar_to(rb, i, piv.shape()), "EQ");
    Value p1 = hlo::convert(rb, hlo::add(rb, p, hlo::full(rb, p.type, 1)), DType::I32);
    piv = hlo::select(rb, at, spread(rb, p1, piv.shape(), r - 2), piv);
    Value i1 = hlo::convert(rb, hlo::add(rb, i, hlo::constant_int(rb, DType::I64, 1)), DType::I32);
    Value first = hlo::and_(rb, dz, hlo::compare(rb, info, hlo::full(rb, info.type, 0), "EQ"));
    info = hlo::select(rb, first, scalar_to(rb, i1, info.shape()), info);
    return {lu, piv, info};
  };
  std::vector<Value> out = fori_loop(b, k, {a, piv0, info0}, body);
  return {out[0], out[1], out[2]};
}

Value pivots_to_permutation(Builder& b, const Value& pivots, int64_t m) {
  int r = pivots.rank();  // [..., k]
  Shape shape = batch_of(pivots.shape(), 1);
  Shape batch = shape;
  shape.push_back(m);
  Value perm0 = hlo::iota(b, Type{DType::I64, shape}, r - 1);
  int64_t k = pivots.dim(-1);
  if (m == 0 || Type{DType::I64, shape}.numel() == 0) return perm0;
  Value piv64 = hlo::convert(b, pivots, DType::I64);
  auto body = [&](Builder& rb, const Value& i, const std::vector<Value>& s) -> std::vector<Value> {
    Value perm = s[0], piv = s[1];
    Value pj = hlo::sub(rb, take_last(rb, piv, i), hlo::full(rb, Type{DType::I64, batch}, 1));
    Value a = take_last(rb, perm, i);
    Value c = elem_at(rb, perm, pj);
    Value ids = hlo::iota(rb, perm.type, r - 1);
    Value is_i = hlo::compare(rb, ids, scalar_to(rb, i, perm.shape()), "EQ");
    Value is_p = hlo::compare(rb, ids, spread(rb, pj, perm.shape(), r - 1), "EQ");
    perm = hlo::select(rb, is_i, spread(rb, c, perm.shape(), r - 1),
                       hlo::select(rb, is_p, spread(rb, a, perm.shape(), r - 1), perm));
    return {perm, piv};
  };
  return fori_loop(b, k, {perm0, piv64}, body)[0];
}

Value permutation_matrix(Builder& b, const Value& perm, DType dtype) {
  int r = perm.rank();
  int64_t m = perm.dim(-1);
  Shape shape = perm.shape();
  shape.push_back(m);
  Type it{DType::I64, shape};
  // P[row, i] = perm[i] == row
  std::vector<int64_t> dims;
  for (int d = 0; d < r - 1; ++d) dims.push_back(d);
  dims.push_back(r);
  Value pb = hlo::broadcast_in_dim(b, perm, shape, dims);
  Value on = hlo::compare(b, pb, hlo::iota(b, it, r - 1), "EQ");
  Type t{dtype, shape};
  return hlo::select(b, on, hlo::full(b, t, 1), hlo::full(b, t, 0));
}

namespace {

Value lu_solve_left(Builder& b, const Value& lu, const Value& pivots, const Value& rhs, bool adjoint) {
  if (rhs.type.numel() == 0) return hlo::full(b, rhs.type, 0);
  Value perm = pivots_to_permutation(b, pivots, lu.dim(-1));
  Value p = permutation_matrix(b, perm, rhs.dtype());
  if (!adjoint) {
    // L U X = P^T B
    Value y = matmul(b, mT(b, p), rhs);
    y = triangular_solve(b, lu, y, true, true, true, false);
    return triangular_solve(b, lu, y, true, false, false, false);
  }
  // U^H L^H P^T X = B
  Value y = triangular_solve(b, lu, rhs, true, false, false, true, true);
  y = triangular_solve(b, lu, y, true, true, true, true, true);
  return matmul(b, p, y);
}

}  // namespace

Value lu_solve(Builder& b, const Value& lu, const Value& pivots, const Value& rhs, bool left, bool adjoint) {
  if (left) return lu_solve_left(b, lu, pivots, rhs, adjoint);
  // X A = B  <=>  A^H X^H = B^H (and X A^H = B <=> A X^H = B^H); mH is mT for real dtypes.
  return mH(b, lu_solve_left(b, lu, pivots, mH(b, rhs), !adjoint));
}

}  // namespace tpu::lowering::linalg
