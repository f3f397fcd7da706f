// Triangular solves: linalg_solve_triangular and the older triangular_solve, on
// stablehlo.triangular_solve with the batch dimensions broadcast first (as PyTorch does).
#include "lowering/core/hlo.h"
#include "lowering/core/linalg_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Value;

// linalg_solve_triangular(self, B, *, upper, left=True, unitriangular=False): self X = B
// (left) or X self = B.
std::vector<Value> lower_linalg_solve_triangular(Ctx& c) {
  ir::Shape batch = linalg::batch_of(c.out().shape);
  Value a = linalg::broadcast_batch(c.b, c.tensor("self"), batch);
  Value rhs = linalg::broadcast_batch(c.b, c.tensor("B"), batch);
  return {linalg::triangular_solve(c.b, a, rhs, c.bool_arg("left"), !c.bool_arg("upper"),
                                   c.bool_arg("unitriangular"), false)};
}

// triangular_solve(self, A, upper=True, transpose=False, unitriangular=False)
//   -> (solution, cloned_coefficient): op(A) X = self.
std::vector<Value> lower_triangular_solve(Ctx& c) {
  ir::Shape batch = linalg::batch_of(c.out(0).shape);
  Value rhs = linalg::broadcast_batch(c.b, c.tensor("self"), batch);
  Value a = linalg::broadcast_batch(c.b, c.tensor("A"), batch);
  Value x = linalg::triangular_solve(c.b, a, rhs, true, !c.bool_arg("upper"), c.bool_arg("unitriangular"),
                                     c.bool_arg("transpose"));
  return {x, linalg::broadcast_batch(c.b, c.tensor("A"), linalg::batch_of(c.out(1).shape))};
}

}  // namespace

TPU_LOWERING("aten::linalg_solve_triangular", lower_linalg_solve_triangular,
             reads({"self", "B", "upper", "left", "unitriangular"}));
TPU_LOWERING("aten::triangular_solve", lower_triangular_solve,
             reads({"self", "A", "upper", "transpose", "unitriangular"}));

}  // namespace tpu::lowering
