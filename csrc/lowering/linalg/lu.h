// LU factorization with partial pivoting (LAPACK getrf's pivots), shared by the LU family and
// the ops built on it (inv, solve, det, slogdet).
#pragma once
#include "lowering/core/linalg_util.h"

namespace tpu::lowering::linalg {

struct LuResult {
  Value lu;      // [..., m, n]: unit-lower L below the diagonal, U on and above it
  Value pivots;  // [..., min(m, n)] int32, 1-based row swapped with row i at step i
  Value info;    // [...] int32: 0, or 1 + the first step whose pivot is exactly zero
};
LuResult lu_factor(Builder& b, const Value& a);

// The row permutation perm [..., m] (int64) the pivots describe: row i of L U is row perm[i]
// of A.
Value pivots_to_permutation(Builder& b, const Value& pivots, int64_t m);
// The permutation matrix P [..., m, m] of A = P L U (P[perm[i], i] = 1) in `dtype`.
Value permutation_matrix(Builder& b, const Value& perm, DType dtype);

// X with op(A) X = rhs (left) or X op(A) = rhs, A = P L U given by (lu, pivots) of matching
// batch; op is the conjugate transpose when `adjoint`.
Value lu_solve(Builder& b, const Value& lu, const Value& pivots, const Value& rhs, bool left, bool adjoint);

}  // namespace tpu::lowering::linalg
