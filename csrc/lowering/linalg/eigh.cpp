// _linalg_eigh (eigh, eigvalsh) by the cyclic Jacobi method: a fixed number of sweeps over
// every pair (p, q), each rotation zeroing A[p, q] (Golub & Van Loan's symmetric Schur step),
// the rotations accumulated into V. Jacobi is as accurate as LAPACK's syevd for these sizes;
// eigenvalues are then sorted ascending with their vectors. Eigenvectors are unique only up to
// sign, which PyTorch's own comparisons allow for. Real dtypes.
#include "lowering/core/hlo.h"
#include "lowering/core/linalg_util.h"
#include "lowering/core/registry.h"
#include "lowering/linalg/jacobi.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

using linalg::i64;

// x[..., i, j] for 0-d i64 i, j -> [...].
Value elem(Builder& b, const Value& x, const Value& i, const Value& j) {
  std::vector<Value> starts(x.rank(), i64(b, 0));
  starts[x.rank() - 2] = i;
  starts[x.rank() - 1] = j;
  Shape sizes = x.shape();
  sizes[x.rank() - 2] = sizes[x.rank() - 1] = 1;
  return hlo::reshape(b, hlo::dynamic_slice(b, x, starts, sizes), linalg::batch_of(x.shape()));
}

Value row(Builder& b, const Value& x, const Value& i) {
  std::vector<Value> starts(x.rank(), i64(b, 0));
  starts[x.rank() - 2] = i;
  Shape sizes = x.shape();
  sizes[x.rank() - 2] = 1;
  return hlo::dynamic_slice(b, x, starts, sizes);
}
Value set_row(Builder& b, const Value& x, const Value& r, const Value& i) {
  std::vector<Value> starts(x.rank(), i64(b, 0));
  starts[x.rank() - 2] = i;
  return hlo::dynamic_update_slice(b, x, r, starts);
}
Value set_elem(Builder& b, const Value& x, const Value& v, const Value& i, const Value& j) {
  std::vector<Value> starts(x.rank(), i64(b, 0));
  starts[x.rank() - 2] = i;
  starts[x.rank() - 1] = j;
  Shape s = v.shape();
  s.push_back(1);
  s.push_back(1);
  return hlo::dynamic_update_slice(b, x, hlo::reshape(b, v, s), starts);
}

// One Jacobi rotation on (p, q), p < q (a no-op when A[p, q] is zero or q <= p).
std::vector<Value> rotate(Builder& b, const Value& a, const Value& v, const Value& p, const Value& q) {
  Value apq = elem(b, a, p, q), app = elem(b, a, p, p), aqq = elem(b, a, q, q);
  Type t = apq.type;
  Value zero = hlo::full(b, t, 0);
  Value active = hlo::and_(b, hlo::compare(b, apq, zero, "NE"),
                           hlo::broadcast_in_dim(b, hlo::compare(b, q, p, "GT"), t.shape, {}));
  linalg::Rotation r = linalg::rotation(b, app, aqq, apq, active);
  Value a2 = linalg::rotate_columns(b, a, r, p, q);
  Value rp = row(b, a2, p), rq = row(b, a2, q);
  Value cb = linalg::per_matrix(b, r.c, rp), sb = linalg::per_matrix(b, r.s, rp);
  Value np = hlo::sub(b, hlo::mul(b, cb, rp), hlo::mul(b, sb, rq));
  Value nq = hlo::add(b, hlo::mul(b, sb, rp), hlo::mul(b, cb, rq));
  a2 = set_row(b, set_row(b, a2, np, p), nq, q);
  // The exact values of the rotated 2x2 block (better than the products above).
  Value tapq = hlo::mul(b, r.t, apq);
  Value new_pq = hlo::select(b, active, zero, apq);
  a2 = set_elem(b, a2, hlo::sub(b, app, tapq), p, p);
  a2 = set_elem(b, a2, hlo::add(b, aqq, tapq), q, q);
  a2 = set_elem(b, a2, new_pq, p, q);
  a2 = set_elem(b, a2, new_pq, q, p);
  return {a2, linalg::rotate_columns(b, v, r, p, q)};
}

// _linalg_eigh(A, UPLO="L", compute_v=True) -> (eigenvalues, eigenvectors)
std::vector<Value> lower_linalg_eigh(Ctx& c) {
  require_real(c.tensor("A").dtype(), "linalg_eigh");
  Value a = c.tensor("A");
  bool upper = c.arg("UPLO").s == "U";
  bool compute_v = c.bool_arg("compute_v");
  int64_t n = a.dim(-1);
  int r = a.rank();
  if (a.type.numel() == 0) return {hlo::full(c.b, c.out(0), 0), hlo::full(c.b, c.out(1), 0)};
  // The symmetric matrix the named triangle describes.
  Value tri = upper ? linalg::triu(c.b, a) : linalg::tril(c.b, a);
  Value strict = upper ? linalg::triu(c.b, a, 1) : linalg::tril(c.b, a, -1);
  Value sym = hlo::add(c.b, tri, linalg::mT(c.b, strict));
  Value v0 = linalg::eye(c.b, a.type);
  int sweeps = a.dtype() == DType::F64 ? 15 : 10;
  auto over_q = [&](Builder& b, const Value& p, const std::vector<Value>& s) {
    std::vector<Value> in{s[0], s[1], p};
    return linalg::fori_loop(b, n, in, [](Builder& b2, const Value& q, const std::vector<Value>& s2) {
      std::vector<Value> rv = rotate(b2, s2[0], s2[1], s2[2], q);
      return std::vector<Value>{rv[0], rv[1], s2[2]};
    });
  };
  auto sweep = [&](Builder& b, const Value&, const std::vector<Value>& s) {
    return linalg::fori_loop(b, n, s, [&](Builder& b2, const Value& p, const std::vector<Value>& s2) {
      std::vector<Value> o = over_q(b2, p, s2);
      return std::vector<Value>{o[0], o[1]};
    });
  };
  std::vector<Value> st = linalg::fori_loop(c.b, n > 1 ? sweeps : 0, {sym, v0}, sweep);
  Value w = linalg::diagonal(c.b, st[0]);
  // Sort ascending, carrying the column indices.
  Value idx = hlo::iota(c.b, Type{DType::I64, w.shape()}, r - 2);
  auto less = [](Builder& rb, const std::vector<Value>& x) -> std::vector<Value> {
    return {hlo::compare(rb, x[0], x[1], "LT")};
  };
  std::vector<Value> sorted = hlo::sort(c.b, {w, idx}, r - 2, /*stable=*/true, less);
  Value vals = hlo::convert(c.b, sorted[0], c.out(0).dtype);
  if (!compute_v || c.out(1).numel() == 0) return {vals, hlo::full(c.b, c.out(1), 0)};
  // Columns of V in sorted order: V @ S with S[j, i] = (order[i] == j).
  Shape ms = a.shape();
  std::vector<int64_t> dims;
  for (int d = 0; d < r - 2; ++d) dims.push_back(d);
  dims.push_back(r - 1);
  Value ob = hlo::broadcast_in_dim(c.b, sorted[1], ms, dims);
  Value sel = hlo::compare(c.b, ob, hlo::iota(c.b, Type{DType::I64, ms}, r - 2), "EQ");
  Value perm = hlo::select(c.b, sel, hlo::full(c.b, a.type, 1), hlo::full(c.b, a.type, 0));
  return {vals, linalg::matmul(c.b, st[1], perm)};
}

}  // namespace

TPU_LOWERING("aten::_linalg_eigh", lower_linalg_eigh, reads({"A", "UPLO", "compute_v"}));

}  // namespace tpu::lowering
