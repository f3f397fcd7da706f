// _linalg_svd (svd, svdvals, matrix norms, pinv, ...) by one-sided Jacobi (Hestenes): the
// columns of W (A, or A^T when A is wide) are orthogonalized pairwise by plane rotations,
// accumulated into V, over a fixed number of sweeps; then S holds the column norms, U the
// normalized columns, sorted by descending S. U is completed to an orthonormal basis (for
// full_matrices, and in place of the columns of zero singular values) with a Householder QR of
// U itself. Singular vectors are unique only up to sign, which PyTorch's comparisons allow for.
// Real dtypes.
#include <cmath>

#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"
#include "lowering/linalg/jacobi.h"
#include "lowering/linalg/qr.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// [..., m, 1] . [..., m, 1] -> [...]
Value dot_cols(Builder& b, const Value& x, const Value& y) {
  return reduce::sum(b, hlo::mul(b, x, y), {x.rank() - 2, x.rank() - 1});
}

// Rotates columns p < q of W (and V) so that they become orthogonal.
std::vector<Value> rotate(Builder& b, const Value& w, const Value& v, const Value& p, const Value& q) {
  Value wp = linalg::column(b, w, p), wq = linalg::column(b, w, q);
  Value alpha = dot_cols(b, wp, wp), beta = dot_cols(b, wq, wq), gamma = dot_cols(b, wp, wq);
  Type t = alpha.type;
  // Rotate unless the pair is already orthogonal to working precision.
  double eps = w.dtype() == DType::F64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  Value thresh = hlo::mul(b, hlo::full(b, t, eps), hlo::sqrt(b, hlo::mul(b, alpha, beta)));
  Value active = hlo::compare(b, hlo::abs(b, gamma), thresh, "GT");
  active = hlo::and_(b, active, hlo::broadcast_in_dim(b, hlo::compare(b, q, p, "GT"), t.shape, {}));
  // The rotation that diagonalizes the Gram block [[alpha, gamma], [gamma, beta]].
  linalg::Rotation r = linalg::rotation(b, alpha, beta, gamma, active);
  return {linalg::rotate_columns(b, w, r, p, q), linalg::rotate_columns(b, v, r, p, q)};
}

// Columns of x [..., r, k] reordered: column i of the result is column order[i] ([..., k]).
Value permute_cols(Builder& b, const Value& x, const Value& order) {
  int r = x.rank();
  int64_t k = order.dim(-1);
  Shape ms = linalg::batch_of(x.shape());
  ms.push_back(k);
  ms.push_back(k);
  std::vector<int64_t> dims;
  for (int d = 0; d < r - 2; ++d) dims.push_back(d);
  dims.push_back(r - 1);
  Value ob = hlo::broadcast_in_dim(b, order, ms, dims);
  Value sel = hlo::compare(b, ob, hlo::iota(b, Type{DType::I64, ms}, r - 2), "EQ");
  Type pt{x.dtype(), ms};
  return linalg::matmul(b, x, hlo::select(b, sel, hlo::full(b, pt, 1), hlo::full(b, pt, 0)));
}

// _linalg_svd(A, full_matrices=False, compute_uv=True, *, driver=None) -> (U, S, Vh)
std::vector<Value> lower_linalg_svd(Ctx& c) {
  require_real(c.tensor("A").dtype(), "linalg_svd");
  Value a = c.tensor("A");
  bool full = c.bool_arg("full_matrices");
  bool compute_uv = c.bool_arg("compute_uv");
  int r = a.rank();
  int64_t m = a.dim(-2), n = a.dim(-1);
  auto ident_or_zero = [&](int k) {
    return c.out(k).numel() && full ? linalg::eye(c.b, c.out(k)) : hlo::full(c.b, c.out(k), 0);
  };
  if (a.type.numel() == 0) return {ident_or_zero(0), hlo::full(c.b, c.out(1), 0), ident_or_zero(2)};
  bool wide = m < n;
  Value w0 = wide ? linalg::mT(c.b, a) : a;
  int64_t big = w0.dim(-2), k = w0.dim(-1);
  Shape vs = linalg::batch_of(a.shape());
  vs.push_back(k);
  vs.push_back(k);
  Value v0 = linalg::eye(c.b, Type{a.dtype(), vs});
  int sweeps = a.dtype() == DType::F64 ? 15 : 10;
  auto sweep = [&](Builder& b, const Value&, const std::vector<Value>& s) {
    return linalg::fori_loop(b, k, s, [&](Builder& b2, const Value& p, const std::vector<Value>& s2) {
      std::vector<Value> in{s2[0], s2[1], p};
      std::vector<Value> o =
          linalg::fori_loop(b2, k, in, [](Builder& b3, const Value& q, const std::vector<Value>& s3) {
            std::vector<Value> rv = rotate(b3, s3[0], s3[1], s3[2], q);
            return std::vector<Value>{rv[0], rv[1], s3[2]};
          });
      return std::vector<Value>{o[0], o[1]};
    });
  };
  std::vector<Value> st = linalg::fori_loop(c.b, k > 1 ? sweeps : 0, {w0, v0}, sweep);
  Value w = st[0], v = st[1];
  Value norms = hlo::sqrt(c.b, reduce::sum(c.b, hlo::mul(c.b, w, w), {r - 2}));  // [..., k]
  // Sort descending by S, carrying the column indices.
  Value idx = hlo::iota(c.b, Type{DType::I64, norms.shape()}, r - 2);
  auto greater = [](Builder& rb, const std::vector<Value>& x) -> std::vector<Value> {
    return {hlo::compare(rb, x[0], x[1], "GT")};
  };
  std::vector<Value> sorted = hlo::sort(c.b, {norms, idx}, r - 2, /*stable=*/true, greater);
  Value sv = sorted[0];
  if (!compute_uv) return {hlo::full(c.b, c.out(0), 0), sv, hlo::full(c.b, c.out(2), 0)};
  w = permute_cols(c.b, w, sorted[1]);
  v = permute_cols(c.b, v, sorted[1]);
  std::vector<int64_t> keep;
  for (int d = 0; d < r - 1; ++d) keep.push_back(d);
  Value sb = hlo::broadcast_in_dim(c.b, sv, w.shape(), [&] {
    std::vector<int64_t> d;
    for (int i = 0; i < r - 2; ++i) d.push_back(i);
    d.push_back(r - 1);
    return d;
  }());
  Value pos = hlo::compare(c.b, sb, hlo::full(c.b, sb.type, 0), "GT");
  Value u = hlo::div(c.b, w, hlo::select(c.b, pos, sb, hlo::full(c.b, sb.type, 1)));
  u = hlo::select(c.b, pos, u, hlo::full(c.b, u.type, 0));
  // Complete U: the QR of U has U's columns (up to sign) first, then an orthonormal complement;
  // it also stands in for the columns of zero singular values.
  int64_t ucols = full ? big : k;
  linalg::Householder h = linalg::geqrf(c.b, u);
  Value q = linalg::orgqr(c.b, h, ucols);
  if (ucols > k) {
    Shape lim = q.shape();
    lim[r - 1] = k;
    Shape start(r, 0);
    start[r - 1] = k;
    Value head = hlo::select(c.b, pos, u, hlo::slice(c.b, q, Shape(r, 0), lim));
    u = hlo::concatenate(c.b, {head, hlo::slice(c.b, q, start, q.shape())}, r - 1);
  } else {
    u = hlo::select(c.b, pos, u, q);
  }
  // A = U S V^T (tall) or A^T = U S V^T, i.e. A = V S U^T (wide).
  Value uo = wide ? v : u;
  Value vh = wide ? linalg::mT(c.b, u) : linalg::mT(c.b, v);
  return {uo, sv, vh};
}

}  // namespace

TPU_LOWERING("aten::_linalg_svd", lower_linalg_svd, reads({"A", "full_matrices", "compute_uv"}));

}  // namespace tpu::lowering
