// Householder QR with LAPACK's conventions (geqrf / orgqr), shared by linalg_qr and the SVD
// (which completes U to a full orthonormal basis with it).
#pragma once
#include "lowering/core/linalg_util.h"

namespace tpu::lowering::linalg {

struct Householder {
  Value a;    // [..., m, n]: R on and above the diagonal, the reflectors below
  Value tau;  // [..., min(m, n)]
};
Householder geqrf(Builder& b, const Value& a);
// Q [..., m, cols] = H_0 ... H_{k-1} I[:, :cols] (cols >= k, at most m).
Value orgqr(Builder& b, const Householder& f, int64_t cols);

}  // namespace tpu::lowering::linalg
