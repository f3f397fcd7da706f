// The LU family on linalg::lu_factor: linalg_lu_factor_ex, linalg_lu, lu_unpack and
// linalg_lu_solve, for real and complex dtypes.
#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"
#include "lowering/linalg/lu.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Type;
using ir::Value;

Value zeros(Ctx& c, int k) { return hlo::full(c.b, c.out(k), 0); }

// (P, L, U) of A = P L U from a factorization, for the outputs that are not empty.
std::vector<Value> unpack(Ctx& c, const Value& lu, const Value& pivots, int first_out) {
  int64_t m = lu.dim(-2), n = lu.dim(-1), k = std::min(m, n);
  const Type& pt = c.out(first_out);
  const Type& lt = c.out(first_out + 1);
  const Type& ut = c.out(first_out + 2);
  Value p = pt.numel() == 0
                ? zeros(c, first_out)
                : linalg::permutation_matrix(c.b, linalg::pivots_to_permutation(c.b, pivots, m), pt.dtype);
  if (p.type.shape != pt.shape && pt.numel() != 0) p = hlo::broadcast_to(c.b, p, pt.shape);
  Value l = zeros(c, first_out + 1), u = zeros(c, first_out + 2);
  int r = lu.rank();
  if (lt.numel() != 0) {
    std::vector<int64_t> lim = lu.shape();
    lim[r - 1] = k;
    Value part = hlo::slice(c.b, lu, std::vector<int64_t>(r, 0), lim);
    l = hlo::add(c.b, linalg::tril(c.b, part, -1), linalg::eye(c.b, part.type));
  }
  if (ut.numel() != 0) {
    std::vector<int64_t> lim = lu.shape();
    lim[r - 2] = k;
    u = linalg::triu(c.b, hlo::slice(c.b, lu, std::vector<int64_t>(r, 0), lim));
  }
  return {p, l, u};
}

// linalg_lu_factor_ex(A, *, pivot=True, check_errors=False) -> (LU, pivots, info)
std::vector<Value> lower_linalg_lu_factor_ex(Ctx& c) {
  linalg::LuResult f = linalg::lu_factor(c.b, c.tensor("A"));
  if (c.bool_arg("check_errors")) {
    Value ok = hlo::compare(c.b, f.info, hlo::full(c.b, f.info.type, 0), "EQ");
    std::vector<int64_t> dims;
    for (int i = 0; i < ok.rank(); ++i) dims.push_back(i);
    if (!dims.empty())
      ok = hlo::reduce(c.b, ok, hlo::constant_int(c.b, DType::Bool, 1), dims, hlo::Combiner::And);
    c.require(ok, "linalg.lu_factor: U[i, i] is zero, the factorization is singular.", CheckError::LinAlg);
  }
  return {f.lu, f.pivots, f.info};
}

// linalg_lu(A, *, pivot=True) -> (P, L, U)
std::vector<Value> lower_linalg_lu(Ctx& c) {
  linalg::LuResult f = linalg::lu_factor(c.b, c.tensor("A"));
  return unpack(c, f.lu, f.pivots, 0);
}

// lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True) -> (P, L, U)
std::vector<Value> lower_lu_unpack(Ctx& c) {
  return unpack(c, c.tensor("LU_data"), c.tensor("LU_pivots"), 0);
}

// linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False)
std::vector<Value> lower_linalg_lu_solve(Ctx& c) {
  ir::Shape batch = linalg::batch_of(c.out().shape);
  Value lu = linalg::broadcast_batch(c.b, c.tensor("LU"), batch);
  Value piv = linalg::broadcast_batch(c.b, c.tensor("pivots"), batch, 1);
  Value rhs = linalg::broadcast_batch(c.b, c.tensor("B"), batch);
  return {linalg::lu_solve(c.b, lu, piv, rhs, c.bool_arg("left"), c.bool_arg("adjoint"))};
}

}  // namespace

TPU_LOWERING("aten::linalg_lu_factor_ex", lower_linalg_lu_factor_ex, reads({"A", "check_errors"}));
TPU_LOWERING("aten::linalg_lu", lower_linalg_lu, reads({"A"}));
TPU_LOWERING("aten::lu_unpack", lower_lu_unpack, reads({"LU_data", "LU_pivots"}));
TPU_LOWERING("aten::linalg_lu_solve", lower_linalg_lu_solve, reads({"LU", "pivots", "B", "left", "adjoint"}));

}  // namespace tpu::lowering
