// Jacobi plane rotations, shared by the eigh (two-sided) and SVD (one-sided) lowerings.
#pragma once
#include "lowering/core/hlo.h"

namespace tpu::lowering::linalg {

// Column j (a 0-d i64) of x [..., m, n] as [..., m, 1], and x with that column replaced.
ir::Value column(ir::Builder& b, const ir::Value& x, const ir::Value& j);
ir::Value set_column(ir::Builder& b, const ir::Value& x, const ir::Value& c, const ir::Value& j);
// A per-batch value [...] broadcast to `like` ([..., a, b]).
ir::Value per_matrix(ir::Builder& b, const ir::Value& v, const ir::Value& like);

// The rotation (c, s), t = s / c, that zeroes the off-diagonal of the symmetric 2x2 block
// [[app, apq], [apq, aqq]] (Golub & Van Loan's symmetric Schur step), per batch element; the
// identity (t = 0) where `active` is false.
struct Rotation {
  ir::Value c, s, t;
};
Rotation rotation(ir::Builder& b, const ir::Value& app, const ir::Value& aqq, const ir::Value& apq,
                  const ir::Value& active);
// Columns p and q of x rotated: (c x_p - s x_q, s x_p + c x_q).
ir::Value rotate_columns(ir::Builder& b, const ir::Value& x, const Rotation& r, const ir::Value& p,
                         const ir::Value& q);

}  // namespace tpu::lowering::linalg
