// Cholesky factorization and the solves built on it: cholesky, linalg_cholesky_ex,
// _cholesky_solve_helper (cholesky_solve) and cholesky_inverse, on stablehlo.cholesky and
// stablehlo.triangular_solve. Real dtypes (the transposes below are plain, not conjugating).
#include "lowering/hlo.h"
#include "lowering/linalg_util.h"
#include "lowering/reduce_util.h"
#include "lowering/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Type;
using ir::Value;

// The triangular factor (lower L with A = L L^T, or upper U with A = U^T U) read from the same
// triangle of `a`, the other triangle zeroed.
Value cholesky_factor(ir::Builder& b, const Value& a, bool upper) {
  if (a.type.numel() == 0) return a;
  std::string attrs = std::string("lower = ") + (upper ? "false" : "true");
  Value f = b.op1("stablehlo.cholesky", {a}, a.type, attrs);
  return upper ? linalg::triu(b, f) : linalg::tril(b, f);
}

// LAPACK's potrf info: 0, or the order (1-based) of the first leading minor that is not
// positive-definite, seen as the first diagonal element of the factor that is not > 0 (the
// factorization turns NaN from the failing pivot on).
Value cholesky_info(ir::Builder& b, const Value& factor, const Type& info_type) {
  int64_t n = factor.dim(-1);
  if (n == 0 || factor.type.numel() == 0) return hlo::full(b, info_type, 0);
  Value d = linalg::diagonal(b, factor);
  Value ok = hlo::compare(b, d, hlo::full(b, d.type, 0), "GT");
  Type it{DType::I64, d.shape()};
  Value pos = hlo::select(b, ok, hlo::full(b, it, static_cast<double>(n)), hlo::iota(b, it, d.rank() - 1));
  Value first = reduce::min(b, pos, {d.rank() - 1});
  Value none = hlo::compare(b, first, hlo::full(b, first.type, static_cast<double>(n)), "EQ");
  Value info = hlo::select(b, none, hlo::full(b, first.type, 0), hlo::add(b, first, hlo::full(b, first.type, 1)));
  return hlo::reshape(b, hlo::convert(b, info, info_type.dtype), info_type.shape);
}

Value all_zero(ir::Builder& b, const Value& info) {
  Value z = hlo::compare(b, info, hlo::full(b, info.type, 0), "EQ");
  if (info.rank() == 0) return z;
  std::vector<int64_t> dims;
  for (int i = 0; i < info.rank(); ++i) dims.push_back(i);
  return hlo::reduce(b, z, hlo::constant_int(b, DType::Bool, 1), dims, "stablehlo.and");
}

const char* kNotPd =
    "linalg.cholesky: The factorization could not be completed because the input is not "
    "positive-definite.";

// cholesky(self, upper=False)
std::vector<Value> lower_cholesky(Ctx& c) {
  Value f = cholesky_factor(c.b, c.tensor(0), c.bool_arg(1));
  Value info = cholesky_info(c.b, f, Type{DType::I32, linalg::batch_of(f.shape())});
  c.require(all_zero(c.b, info), kNotPd);
  return {f};
}

// linalg_cholesky_ex(self, *, upper=False, check_errors=False) -> (L, info)
std::vector<Value> lower_linalg_cholesky_ex(Ctx& c) {
  Value f = cholesky_factor(c.b, c.tensor(0), c.bool_arg(1));
  Value info = cholesky_info(c.b, f, c.out(1));
  if (c.bool_arg(2)) c.require(all_zero(c.b, info), kNotPd);
  return {f, info};
}

// X with A X = rhs for A = L L^T (lower) or U^T U (upper), given the factor.
Value cholesky_solve(ir::Builder& b, const Value& factor, const Value& rhs, bool upper) {
  Value y = linalg::triangular_solve(b, factor, rhs, true, !upper, false, upper);
  return linalg::triangular_solve(b, factor, y, true, !upper, false, !upper);
}

// _cholesky_solve_helper(self, A, upper): self is the right-hand side, A the factor.
std::vector<Value> lower_cholesky_solve_helper(Ctx& c) {
  ir::Shape batch = linalg::batch_of(c.out().shape);
  Value rhs = linalg::broadcast_batch(c.b, c.tensor(0), batch);
  Value factor = linalg::broadcast_batch(c.b, c.tensor(1), batch);
  return {cholesky_solve(c.b, factor, rhs, c.bool_arg(2))};
}

// cholesky_inverse(self, upper=False): (L L^T)^-1 as a Cholesky solve of the identity.
std::vector<Value> lower_cholesky_inverse(Ctx& c) {
  Value factor = c.tensor(0);
  return {cholesky_solve(c.b, factor, linalg::eye(c.b, c.out()), c.bool_arg(1))};
}

}  // namespace

TPU_LOWERING("aten::cholesky", lower_cholesky);
TPU_LOWERING("aten::linalg_cholesky_ex", lower_linalg_cholesky_ex);
TPU_LOWERING("aten::_cholesky_solve_helper", lower_cholesky_solve_helper);
TPU_LOWERING("aten::cholesky_inverse", lower_cholesky_inverse);

}  // namespace tpu::lowering
