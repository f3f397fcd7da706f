// Cholesky factorization and the solves built on it: cholesky, linalg_cholesky_ex,
// _cholesky_solve_helper (cholesky_solve) and cholesky_inverse: the factorization as a loop
// (for LAPACK's info), the solves on stablehlo.triangular_solve. Real dtypes (the transposes below are plain,
// not conjugating).
#include "lowering/core/hlo.h"
#include "lowering/core/linalg_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Type;
using ir::Value;

// x[..., j] / x[..., j, :] style picks for a 0-d i64 j shared by the batch.
Value column(ir::Builder& b, const Value& x, const Value& j) {
  std::vector<Value> starts(x.rank(), hlo::constant_int(b, DType::I64, 0));
  starts.back() = j;
  ir::Shape sizes = x.shape();
  sizes.back() = 1;
  return hlo::reshape(b, hlo::dynamic_slice(b, x, starts, sizes), linalg::batch_of(x.shape(), 1));
}

Value spread(ir::Builder& b, const Value& v, const ir::Shape& shape, int new_dim) {
  std::vector<int64_t> dims;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d != new_dim) dims.push_back(d);
  return hlo::broadcast_in_dim(b, v, shape, dims);
}

struct Potrf {
  Value factor;  // lower L (A = L L^T) or upper U (A = U^T U), the other triangle zero
  Value info;    // [...] int32
};

// LAPACK potrf as a right-looking loop over the columns, reading one triangle of `a`. At step
// j the pivot d = A[j, j] (after the earlier updates) must be > 0: then column j below it is
// scaled by 1/sqrt(d) and the trailing block gets the rank-1 update. The first step whose
// pivot is not > 0 (or NaN) sets info = j + 1 and freezes that batch element, as potrf stops
// there. (stablehlo.cholesky cannot give info: XLA fills the whole factor with NaN on failure.)
Potrf potrf(ir::Builder& b, const Value& a, bool upper, const Type& info_type) {
  Value info0 = hlo::full(b, info_type, 0);
  if (a.type.numel() == 0) return {a, info0};
  int r = a.rank();
  int64_t n = a.dim(-1);
  // Work on the lower triangle: for upper, U^T is the lower factor of A's upper triangle^T.
  Value src = upper ? linalg::mT(b, a) : a;
  std::vector<int64_t> prefix;
  for (int d = 0; d < r - 2; ++d) prefix.push_back(d);
  auto body = [&, prefix](ir::Builder& rb, const Value& j,
                          const std::vector<Value>& s) -> std::vector<Value> {
    Value l = s[0], info = s[1];
    ir::Shape col_shape = linalg::batch_of(l.shape(), 1);
    Value col = column(rb, l, j);  // [..., n]
    Type it{DType::I64, col_shape};
    Value rows = hlo::iota(rb, it, r - 2);
    Value jb = hlo::broadcast_in_dim(rb, j, col_shape, {});
    Value at_j = hlo::compare(rb, rows, jb, "EQ");
    Value d = reduce::sum(rb, hlo::select(rb, at_j, col, hlo::full(rb, col.type, 0)), {r - 2});  // [...]
    Value good = hlo::compare(rb, d, hlo::full(rb, d.type, 0), "GT");
    Value live = hlo::compare(rb, info, hlo::full(rb, info.type, 0), "EQ");
    Value step = hlo::and_(rb, good, live);
    Value root = hlo::sqrt(rb, hlo::select(rb, good, d, hlo::full(rb, d.type, 1)));
    Value lc = hlo::div(rb, col, spread(rb, root, col_shape, r - 2));
    lc = hlo::select(rb, at_j, spread(rb, root, col_shape, r - 2), lc);
    Type mt{DType::I64, l.shape()};
    Value rid = hlo::iota(rb, mt, r - 2), cid = hlo::iota(rb, mt, r - 1);
    Value jm = hlo::broadcast_in_dim(rb, j, l.shape(), {});
    Value lr = spread(rb, lc, l.shape(), r - 1), lcc = spread(rb, lc, l.shape(), r - 2);
    Value updated = hlo::sub(rb, l, hlo::mul(rb, lr, lcc));
    Value trailing = hlo::and_(rb, hlo::compare(rb, rid, jm, "GT"), hlo::compare(rb, cid, jm, "GT"));
    Value col_j = hlo::and_(rb, hlo::compare(rb, rid, jm, "GE"), hlo::compare(rb, cid, jm, "EQ"));
    Value next = hlo::select(rb, trailing, updated, hlo::select(rb, col_j, lr, l));
    l = hlo::select(rb, hlo::broadcast_in_dim(rb, step, l.shape(), prefix), next, l);
    Value j1 = hlo::convert(rb, hlo::add(rb, j, hlo::constant_int(rb, DType::I64, 1)), info.dtype());
    Value fail = hlo::and_(rb, live, hlo::logical_not(rb, good));
    info = hlo::select(rb, fail, hlo::broadcast_in_dim(rb, j1, info.shape(), {}), info);
    return {l, info};
  };
  std::vector<Value> out = linalg::fori_loop(b, n, {linalg::tril(b, src), info0}, body);
  Value l = linalg::tril(b, out[0]);
  return {upper ? linalg::mT(b, l) : l, out[1]};
}

Value all_zero(ir::Builder& b, const Value& info) {
  Value z = hlo::compare(b, info, hlo::full(b, info.type, 0), "EQ");
  if (info.rank() == 0) return z;
  std::vector<int64_t> dims;
  for (int i = 0; i < info.rank(); ++i) dims.push_back(i);
  return hlo::reduce(b, z, hlo::constant_int(b, DType::Bool, 1), dims, hlo::Combiner::And);
}

const char* kNotPd =
    "linalg.cholesky: The factorization could not be completed because the input is not "
    "positive-definite.";

// cholesky(self, upper=False)
std::vector<Value> lower_cholesky(Ctx& c) {
  require_real(c.tensor("self").dtype(), "cholesky");
  Potrf f =
      potrf(c.b, c.tensor("self"), c.bool_arg("upper"), Type{DType::I32, linalg::batch_of(c.out().shape)});
  c.require(all_zero(c.b, f.info), kNotPd, CheckError::LinAlg);
  return {f.factor};
}

// linalg_cholesky_ex(self, *, upper=False, check_errors=False) -> (L, info)
std::vector<Value> lower_linalg_cholesky_ex(Ctx& c) {
  require_real(c.tensor("self").dtype(), "linalg_cholesky_ex");
  Potrf f = potrf(c.b, c.tensor("self"), c.bool_arg("upper"), c.out(1));
  if (c.bool_arg("check_errors")) c.require(all_zero(c.b, f.info), kNotPd, CheckError::LinAlg);
  return {f.factor, f.info};
}

// X with A X = rhs for A = L L^T (lower) or U^T U (upper), given the factor.
Value cholesky_solve(ir::Builder& b, const Value& factor, const Value& rhs, bool upper) {
  Value y = linalg::triangular_solve(b, factor, rhs, true, !upper, false, upper);
  return linalg::triangular_solve(b, factor, y, true, !upper, false, !upper);
}

// _cholesky_solve_helper(self, A, upper): self is the right-hand side, A the factor.
std::vector<Value> lower_cholesky_solve_helper(Ctx& c) {
  require_real(c.tensor("self").dtype(), "cholesky_solve_helper");
  ir::Shape batch = linalg::batch_of(c.out().shape);
  Value rhs = linalg::broadcast_batch(c.b, c.tensor("self"), batch);
  Value factor = linalg::broadcast_batch(c.b, c.tensor("A"), batch);
  return {cholesky_solve(c.b, factor, rhs, c.bool_arg("upper"))};
}

// cholesky_inverse(self, upper=False): (L L^T)^-1 as a Cholesky solve of the identity.
std::vector<Value> lower_cholesky_inverse(Ctx& c) {
  require_real(c.tensor("self").dtype(), "cholesky_inverse");
  Value factor = c.tensor("self");
  return {cholesky_solve(c.b, factor, linalg::eye(c.b, c.out()), c.bool_arg("upper"))};
}

}  // namespace

TPU_LOWERING("aten::cholesky", lower_cholesky, reads({"self", "upper"}));
TPU_LOWERING("aten::linalg_cholesky_ex", lower_linalg_cholesky_ex, reads({"self", "upper", "check_errors"}));
TPU_LOWERING("aten::_cholesky_solve_helper", lower_cholesky_solve_helper, reads({"self", "A", "upper"}));
TPU_LOWERING("aten::cholesky_inverse", lower_cholesky_inverse, reads({"self", "upper"}));

}  // namespace tpu::lowering
