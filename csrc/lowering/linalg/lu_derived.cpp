// Ops PyTorch computes from an LU factorization: linalg_inv_ex, _linalg_solve_ex, _linalg_det
// and _linalg_slogdet.
//
// _linalg_solve_ex, _linalg_det and _linalg_slogdet also return the LU and pivots, which their
// backward formulas reuse, so they must factor the same matrix as PyTorch: solve_ex factors A;
// det and slogdet factor A^T when A is real and contiguous (a cheaper layout for LAPACK,
// det(A^T) = det(A)) and their backward solves accordingly (adjoint = !use_A_T). A lowering
// only sees values, so det and slogdet always factor A^T for real dtypes (the contiguous case)
// and A itself for complex ones, as PyTorch does for every complex A.
#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"
#include "lowering/linalg/lu.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Type;
using ir::Value;

Value all_zero(ir::Builder& b, const Value& info) {
  Value z = hlo::compare(b, info, hlo::full(b, info.type, 0), "EQ");
  std::vector<int64_t> dims;
  for (int i = 0; i < z.rank(); ++i) dims.push_back(i);
  if (dims.empty()) return z;
  return hlo::reduce(b, z, hlo::constant_int(b, DType::Bool, 1), dims, hlo::Combiner::And);
}

// linalg_inv_ex(A, *, check_errors=False) -> (inverse, info)
std::vector<Value> lower_linalg_inv_ex(Ctx& c) {
  Value a = c.tensor("A");
  linalg::LuResult f = linalg::lu_factor(c.b, a);
  Value x = linalg::lu_solve(c.b, f.lu, f.pivots, linalg::eye(c.b, a.type), true, false);
  if (c.bool_arg("check_errors"))
    c.require(all_zero(c.b, f.info),
              "linalg.inv: The diagonal element is zero, the inversion could not be completed "
              "because the input matrix is singular.",
              CheckError::LinAlg);
  return {x, f.info};
}

// _linalg_solve_ex(A, B, *, left=True, check_errors=False) -> (result, LU, pivots, info)
std::vector<Value> lower_linalg_solve_ex(Ctx& c) {
  Value a = c.tensor("A"), rhs = c.tensor("B");
  bool left = c.bool_arg("left");
  // B is a (batch of) vector(s) when 1-d or shaped like A without its last dimension.
  ir::Shape a_vec(a.shape().begin(), a.shape().end() - 1);
  bool vector_case = rhs.rank() == 1 || (rhs.rank() == a.rank() - 1 && rhs.shape() == a_vec);
  if (vector_case) {
    ir::Shape s = rhs.shape();
    s.push_back(1);
    rhs = hlo::reshape(c.b, rhs, s);
  }
  linalg::LuResult f = linalg::lu_factor(c.b, a);
  ir::Shape out_shape = c.out(0).shape;
  if (vector_case) out_shape.push_back(1);
  ir::Shape batch = linalg::batch_of(out_shape);
  Value lu = linalg::broadcast_batch(c.b, f.lu, batch);
  Value piv = linalg::broadcast_batch(c.b, f.pivots, batch, 1);
  rhs = linalg::broadcast_batch(c.b, rhs, batch);
  Value x = linalg::lu_solve(c.b, lu, piv, rhs, left, false);
  x = hlo::reshape(c.b, x, c.out(0).shape);
  if (c.bool_arg("check_errors"))
    c.require(all_zero(c.b, f.info),
              "torch.linalg.solve: The solver failed because the input matrix is singular.",
              CheckError::LinAlg);
  return {x, f.lu, f.pivots, f.info};
}

// (-1)^(number of actual row swaps) of the pivots [..., k], in `dtype`.
Value pivots_sign(ir::Builder& b, const Value& pivots, DType dtype) {
  Value expect = hlo::add(b, hlo::iota(b, pivots.type, pivots.rank() - 1), hlo::full(b, pivots.type, 1));
  Value swapped = hlo::compare(b, pivots, expect, "NE");
  Type t{dtype, pivots.shape()};
  Value f = hlo::select(b, swapped, hlo::full(b, t, -1), hlo::full(b, t, 1));
  return reduce::prod(b, f, {pivots.rank() - 1});
}

// The matrix PyTorch's det and slogdet factor (see the top of the file).
Value factored(ir::Builder& b, const Value& a) { return ir::is_complex(a.dtype()) ? a : linalg::mT(b, a); }

// _linalg_det(A) -> (result, LU, pivots): det = sign(P) * prod(diag(U)).
std::vector<Value> lower_linalg_det(Ctx& c) {
  Value a = c.tensor("A");
  linalg::LuResult f = linalg::lu_factor(c.b, factored(c.b, a));
  Value d = linalg::diagonal(c.b, f.lu);
  Value det = hlo::mul(c.b, pivots_sign(c.b, f.pivots, a.dtype()), reduce::prod(c.b, d, {d.rank() - 1}));
  return {det, f.lu, f.pivots};
}

// _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots)
std::vector<Value> lower_linalg_slogdet(Ctx& c) {
  Value a = c.tensor("A");
  linalg::LuResult f = linalg::lu_factor(c.b, factored(c.b, a));
  Value d = linalg::diagonal(c.b, f.lu);
  int last = d.rank() - 1;
  // sign(d) is d / |d| (0 at 0) for complex d as well; |d| is real, the logabsdet's dtype.
  Value sgn =
      hlo::mul(c.b, pivots_sign(c.b, f.pivots, a.dtype()), reduce::prod(c.b, hlo::sign(c.b, d), {last}));
  Value abs = hlo::abs(c.b, d);
  Value logabs = reduce::sum(c.b, hlo::log(c.b, abs), {last});
  return {sgn, logabs, f.lu, f.pivots};
}

}  // namespace

TPU_LOWERING("aten::linalg_inv_ex", lower_linalg_inv_ex, reads({"A", "check_errors"}));
TPU_LOWERING("aten::_linalg_solve_ex", lower_linalg_solve_ex, reads({"A", "B", "left", "check_errors"}));
TPU_LOWERING("aten::_linalg_det", lower_linalg_det, reads({"A"}));
TPU_LOWERING("aten::_linalg_slogdet", lower_linalg_slogdet, reads({"A"}));

}  // namespace tpu::lowering
