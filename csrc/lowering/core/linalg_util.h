// Shared pieces of the torch.linalg lowerings: batched matrix helpers over the last two
// dimensions ([..., m, n]) and a counted stablehlo.while loop, the building block of the
// column-by-column factorizations (LU, QR, Jacobi sweeps).
#pragma once
#include <functional>
#include <vector>

#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"

namespace tpu::lowering::linalg {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// A 0-d int64 constant (loop counters and dynamic-slice starts).
Value i64(Builder& b, int64_t v);

// Swaps the last two dimensions (x.mT).
Value mT(Builder& b, const Value& x);
// The conjugate transpose x.mH (the conjugate itself: kit.h's conj).
Value mH(Builder& b, const Value& x);
// |Re x| + |Im x| for complex x (|x| when real), in x's real dtype: the magnitude LAPACK's
// i?amax compares, so pivots are chosen as getrf chooses them.
Value cabs1(Builder& b, const Value& x);
// Batched matrix product [..., m, k] @ [..., k, n] (identical batch dimensions), in x's dtype.
Value matmul(Builder& b, const Value& x, const Value& y);
// x broadcast to `batch` + its own last `keep` dimensions.
Value broadcast_batch(Builder& b, const Value& x, const Shape& batch, int keep = 2);
// The leading (batch) dimensions of `shape`, all but the last `keep`.
Shape batch_of(const Shape& shape, int keep = 2);

// i1 mask of `shape` ([..., m, n]): col - row <= k for lower, col - row >= k for upper.
Value tri_mask(Builder& b, const Shape& shape, int64_t k, bool lower);
// x with the elements outside the triangle set to zero (torch.tril / torch.triu).
Value tril(Builder& b, const Value& x, int64_t k = 0);
Value triu(Builder& b, const Value& x, int64_t k = 0);
// Identity matrices of type `t` ([..., m, n], ones where row == col).
Value eye(Builder& b, const Type& t);
// The diagonal [..., min(m, n)] of x.
Value diagonal(Builder& b, const Value& x);
// Row `idx` ([...], any integer dtype, one per batch element) of x [..., m, n] -> [..., n],
// picked exactly by a select and a sum (no multiplication, so inf/NaN elsewhere stay out).
Value row_at(Builder& b, const Value& x, const Value& idx);
// Element `idx` of the last dimension of x [..., n] -> [...], picked the same way.
Value elem_at(Builder& b, const Value& x, const Value& idx);

// stablehlo.triangular_solve: op(a) x = rhs (left) or x op(a) = rhs (right); a is square with
// the batch dimensions of rhs. Only the named triangle of `a` is read. op is the transpose when
// `transpose_a`, conjugated as well (the adjoint) when `conjugate` and a is complex.
Value triangular_solve(Builder& b, const Value& a, const Value& rhs, bool left, bool lower,
                       bool unit_diagonal, bool transpose_a, bool conjugate = false);

// A counted loop: for i in [0, n): state = body(i, state). `i` is a 0-d i64. Every value the
// body uses must be passed in `state` (or created inside it): regions capture nothing.
using LoopBody = std::function<std::vector<Value>(Builder&, const Value& i, const std::vector<Value>& state)>;
std::vector<Value> fori_loop(Builder& b, int64_t n, const std::vector<Value>& init, const LoopBody& body);
// The same loop with a trip count known only at run time: `n` is a 0-d i64 value.
std::vector<Value> fori_loop(Builder& b, const Value& n, const std::vector<Value>& init,
                             const LoopBody& body);

}  // namespace tpu::lowering::linalg
