// linalg_qr (modes reduced, complete, r) by Householder reflections in a stablehlo.while, with
// LAPACK geqrf's conventions so Q and R match the CPU's: the reflector of column j maps x to
// beta e_1 with beta = -sign(alpha) * ||x|| (R's diagonal may be negative), and a column whose
// part below the diagonal is already zero gets no reflection (tau = 0). Q is then accumulated
// from the stored reflectors (orgqr), last reflector first. Real dtypes.
#include "lowering/linalg/qr.h"
#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace linalg {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

Value scalar_to(Builder& b, const Value& s, const Shape& shape) {
  return hlo::broadcast_in_dim(b, s, shape, {});
}

// v [..., k] broadcast along the new dimension `new_dim` of `shape`.
Value spread(Builder& b, const Value& v, const Shape& shape, int new_dim) {
  std::vector<int64_t> dims;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d != new_dim) dims.push_back(d);
  return hlo::broadcast_in_dim(b, v, shape, dims);
}

// Column j ([..., m]) of x [..., m, n] for a 0-d i64 j.
Value column(Builder& b, const Value& x, const Value& j) {
  std::vector<Value> starts(x.rank(), hlo::constant_int(b, DType::I64, 0));
  starts.back() = j;
  Shape sizes = x.shape();
  sizes.back() = 1;
  return hlo::reshape(b, hlo::dynamic_slice(b, x, starts, sizes), linalg::batch_of(x.shape(), 1));
}

// w = v^T x: [..., m] x [..., m, n] -> [..., n].
Value vec_mat(Builder& b, const Value& v, const Value& x) {
  std::vector<int64_t> batch;
  for (int i = 0; i < x.rank() - 2; ++i) batch.push_back(i);
  return hlo::dot_general(b, v, x, batch, batch, {v.rank() - 1}, {x.rank() - 2}, x.dtype());
}

// x - tau v w^T over the whole matrix (tau [...], v [..., m], w [..., n]).
Value rank1_update(Builder& b, const Value& x, const Value& tau, const Value& v, const Value& w) {
  int r = x.rank();
  Value tv = hlo::mul(b, v, spread(b, tau, v.shape(), r - 2));
  return hlo::sub(b, x, hlo::mul(b, spread(b, tv, x.shape(), r - 1), spread(b, w, x.shape(), r - 2)));
}

// The reflector vector of step j from the factored matrix: 0 above row j, 1 at j, the stored
// entries below.
Value reflector(Builder& b, const Value& a, const Value& j) {
  Value col = column(b, a, j);
  Type it{DType::I64, col.shape()};
  Value rows = hlo::iota(b, it, col.rank() - 1);
  Value jb = scalar_to(b, j, col.shape());
  Value v = hlo::select(b, hlo::compare(b, rows, jb, "GT"), col, hlo::full(b, col.type, 0));
  return hlo::select(b, hlo::compare(b, rows, jb, "EQ"), hlo::full(b, col.type, 1), v);
}

}  // namespace

Householder geqrf(Builder& b, const Value& a0) {
  int r = a0.rank();
  int64_t m = a0.dim(-2), n = a0.dim(-1), k = std::min(m, n);
  Shape tau_shape = linalg::batch_of(a0.shape());
  tau_shape.push_back(k);
  Value tau0 = hlo::full(b, Type{a0.dtype(), tau_shape}, 0);
  auto body = [&](Builder& rb, const Value& j, const std::vector<Value>& s) -> std::vector<Value> {
    Value a = s[0], taus = s[1];
    Value col = column(rb, a, j);
    Type it{DType::I64, col.shape()};
    Value rows = hlo::iota(rb, it, r - 2);
    Value jb = scalar_to(rb, j, col.shape());
    Value below = hlo::compare(rb, rows, jb, "GT");
    Value zero_col = hlo::full(rb, col.type, 0);
    Value tail = hlo::select(rb, below, col, zero_col);
    Value alpha = reduce::sum(rb, hlo::select(rb, hlo::compare(rb, rows, jb, "EQ"), col, zero_col), {r - 2});
    Value xnorm2 = reduce::sum(rb, hlo::mul(rb, tail, tail), {r - 2});
    Value zero = hlo::full(rb, alpha.type, 0);
    Value skip = hlo::compare(rb, xnorm2, zero, "EQ");
    Value norm = hlo::sqrt(rb, hlo::add(rb, hlo::mul(rb, alpha, alpha), xnorm2));
    Value neg = hlo::compare(rb, alpha, zero, "LT");
    Value beta = hlo::select(rb, neg, norm, hlo::neg(rb, norm));
    Value one = hlo::full(rb, alpha.type, 1);
    Value tau = hlo::select(rb, skip, zero, hlo::div(rb, hlo::sub(rb, beta, alpha), beta));
    Value scale = hlo::select(rb, skip, one, hlo::div(rb, one, hlo::sub(rb, alpha, beta)));
    Value v = hlo::mul(rb, tail, spread(rb, scale, col.shape(), r - 2));
    v = hlo::select(rb, hlo::compare(rb, rows, jb, "EQ"), hlo::full(rb, col.type, 1), v);
    // Apply H = I - tau v v^T to the columns right of j.
    Value w = vec_mat(rb, v, a);
    Value updated = rank1_update(rb, a, tau, v, w);
    Type mt{DType::I64, a.shape()};
    Value cid = hlo::iota(rb, mt, r - 1), rid = hlo::iota(rb, mt, r - 2);
    Value jm = scalar_to(rb, j, a.shape());
    Value right = hlo::compare(rb, cid, jm, "GT");
    Value at_col = hlo::compare(rb, cid, jm, "EQ");
    // Column j: beta on the diagonal, the reflector below (unchanged when skipped).
    Value newcol = hlo::select(rb, spread(rb, skip, col.shape(), r - 2), col,
                               hlo::select(rb, below, v, spread(rb, beta, col.shape(), r - 2)));
    newcol = hlo::select(rb, hlo::compare(rb, rows, jb, "LT"), col, newcol);
    Value colm = spread(rb, newcol, a.shape(), r - 1);
    (void)rid;
    a = hlo::select(rb, right, updated, hlo::select(rb, at_col, colm, a));
    Type tt{DType::I64, taus.shape()};
    Value at = hlo::compare(rb, hlo::iota(rb, tt, r - 2), scalar_to(rb, j, taus.shape()), "EQ");
    taus = hlo::select(rb, at, spread(rb, tau, taus.shape(), r - 2), taus);
    return {a, taus};
  };
  std::vector<Value> out = linalg::fori_loop(b, k, {a0, tau0}, body);
  return {out[0], out[1]};
}

// Q [..., m, cols] = H_0 ... H_{k-1} I.
Value orgqr(Builder& b, const Householder& f, int64_t cols) {
  int r = f.a.rank();
  int64_t k = f.tau.dim(-1);
  Shape qs = f.a.shape();
  qs[r - 1] = cols;
  Value q0 = linalg::eye(b, Type{f.a.dtype(), qs});
  auto body = [&](Builder& rb, const Value& i, const std::vector<Value>& s) -> std::vector<Value> {
    Value q = s[0], a = s[1], taus = s[2];
    Value j = hlo::sub(rb, hlo::constant_int(rb, DType::I64, k - 1), i);
    Value v = reflector(rb, a, j);
    Value tau = column(rb,
                       hlo::reshape(rb, taus,
                                    [&] {
                                      Shape t = taus.shape();
                                      t.insert(t.end() - 1, 1);
                                      return t;
                                    }()),
                       j);
    tau = hlo::reshape(rb, tau, linalg::batch_of(taus.shape(), 1));
    return {rank1_update(rb, q, tau, v, vec_mat(rb, v, q)), a, taus};
  };
  return linalg::fori_loop(b, k, {q0, f.a, f.tau}, body)[0];
}

}  // namespace linalg

namespace {

using ir::DType;
using ir::Shape;
using ir::Value;

// linalg_qr(A, mode='reduced') -> (Q, R)
std::vector<Value> lower_linalg_qr(Ctx& c) {
  require_real(c.tensor("A").dtype(), "linalg_qr");
  Value a = c.tensor("A");
  const std::string& mode = c.arg("mode").s;
  int64_t m = a.dim(-2), n = a.dim(-1), k = std::min(m, n);
  if (a.type.numel() == 0) {
    // The identity is a valid Q for an empty A (e.g. 3x0 in complete mode), as on the CPU.
    Value q = c.out(0).numel() ? linalg::eye(c.b, c.out(0)) : hlo::full(c.b, c.out(0), 0);
    return {q, hlo::full(c.b, c.out(1), 0)};
  }
  linalg::Householder f = linalg::geqrf(c.b, a);
  int r = a.rank();
  bool complete = mode == "complete";
  int64_t r_rows = complete ? m : k;
  Shape lim = a.shape();
  lim[r - 2] = r_rows;
  Value rr = linalg::triu(c.b, hlo::slice(c.b, f.a, std::vector<int64_t>(r, 0), lim));
  Value q = c.out(0).numel() == 0 ? hlo::full(c.b, c.out(0), 0) : linalg::orgqr(c.b, f, complete ? m : k);
  (void)n;
  return {q, rr};
}

// linalg_householder_product(input, tau): the first n columns of H_0 ... H_{k-1}, the
// reflectors stored below the diagonal of input as geqrf leaves them (orgqr).
std::vector<Value> lower_linalg_householder_product(Ctx& c) {
  require_real(c.tensor("input").dtype(), "linalg_householder_product");
  Value a = c.tensor("input"), tau = c.tensor("tau");
  if (c.out().numel() == 0) return {hlo::full(c.b, c.out(), 0)};
  ir::Shape batch = linalg::batch_of(c.out().shape);
  a = linalg::broadcast_batch(c.b, a, batch);
  tau = linalg::broadcast_batch(c.b, tau, batch, 1);
  return {linalg::orgqr(c.b, linalg::Householder{a, tau}, a.dim(-1))};
}

// ormqr(self, input2, input3, left=True, transpose=False): op(Q) C (left) or C op(Q), Q the
// product of the reflectors in self / tau (input2), applied one by one without forming Q.
std::vector<Value> lower_ormqr(Ctx& c) {
  require_real(c.tensor("self").dtype(), "ormqr");
  if (c.out().numel() == 0) return {hlo::full(c.b, c.out(), 0)};
  ir::Shape batch = linalg::batch_of(c.out().shape);
  Value a = linalg::broadcast_batch(c.b, c.tensor("self"), batch);
  Value tau = linalg::broadcast_batch(c.b, c.tensor("input2"), batch, 1);
  Value x = linalg::broadcast_batch(c.b, c.tensor("input3"), batch);
  bool left = c.bool_arg("left"), trans = c.bool_arg("transpose");
  int64_t k = tau.dim(-1);
  int r = x.rank();
  // Q = H_0 ... H_{k-1}: Q C and C Q^T apply the last reflector first.
  bool backwards = left != trans;
  auto body = [&, k, r, left, backwards](ir::Builder& rb, const Value& i, const std::vector<Value>& s) {
    Value cx = s[0], refl = s[1], taus = s[2];
    Value j = backwards ? hlo::sub(rb, hlo::constant_int(rb, DType::I64, k - 1), i) : i;
    Value v = linalg::reflector(rb, refl, j);  // [..., nq]
    Value tau_j =
        linalg::elem_at(rb, taus, hlo::broadcast_in_dim(rb, j, linalg::batch_of(taus.shape(), 1), {}));
    std::vector<int64_t> bd;
    for (int d = 0; d < r - 2; ++d) bd.push_back(d);
    if (left) {
      Value w = linalg::vec_mat(rb, v, cx);  // v^T C: [..., n]
      cx = linalg::rank1_update(rb, cx, tau_j, v, w);
    } else {
      Value w = hlo::dot_general(rb, cx, v, bd, bd, {r - 1}, {r - 2}, cx.dtype());  // C v: [..., p]
      cx = linalg::rank1_update(rb, cx, tau_j, w, v);
    }
    return std::vector<Value>{cx, refl, taus};
  };
  return {linalg::fori_loop(c.b, k, {x, a, tau}, body)[0]};
}

// geqrf(self) -> (a, tau): LAPACK's compact QR, R on and above the diagonal and the Householder
// reflectors below it, exactly what linalg::geqrf keeps.
std::vector<Value> lower_geqrf(Ctx& c) {
  require_real(c.tensor("self").dtype(), "geqrf");
  Value a = c.tensor("self");
  if (a.type.numel() == 0) return {a, hlo::full(c.b, c.out(1), 0)};
  linalg::Householder f = linalg::geqrf(c.b, a);
  return {f.a, f.tau};
}

}  // namespace

TPU_LOWERING("aten::linalg_qr", lower_linalg_qr, reads({"A", "mode"}));
TPU_LOWERING("aten::geqrf", lower_geqrf, reads({"self"}));
TPU_LOWERING("aten::ormqr", lower_ormqr, reads({"self", "input2", "input3", "left", "transpose"}));
TPU_LOWERING("aten::linalg_householder_product", lower_linalg_householder_product, reads({"input", "tau"}));

}  // namespace tpu::lowering
