// linalg_ldl_factor_ex by LAPACK sytf2's Bunch-Kaufman diagonal pivoting (lower storage), so LD
// and the pivots equal the CPU's: column k is eliminated with a 1x1 pivot (itself or row imax,
// the largest entry below the diagonal, swapped in) or with the 2x2 pivot of k and imax, by the
// alpha = (1 + sqrt(17)) / 8 tests on the column and row maxima. Pivots are 1-based; both rows of
// a 2x2 block get -(swapped row). As in LAPACK, an interchange only touches the trailing
// submatrix (earlier columns of L keep their rows), and an exactly zero column is left as it is
// and reported in info. The working matrix is kept fully symmetric so rows and columns of the
// trailing part read alike; only its lower triangle is ever computed. One matrix at a time in a
// loop over the flattened batch; each step eliminates 1 or 2 columns, so n steps suffice.
#include "lowering/core/hlo.h"
#include "lowering/core/linalg_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

using linalg::i64;

Value at2(Builder& b, const Value& s, const Value& i, const Value& j) {
  return hlo::reshape(b, hlo::dynamic_slice(b, s, {i, j}, {1, 1}), {});
}
Value col(Builder& b, const Value& s, const Value& j) {
  int64_t n = s.dim(0);
  return hlo::reshape(b, hlo::dynamic_slice(b, s, {i64(b, 0), j}, {n, 1}), {n});
}
Value row(Builder& b, const Value& s, const Value& i) {
  int64_t n = s.dim(1);
  return hlo::reshape(b, hlo::dynamic_slice(b, s, {i, i64(b, 0)}, {1, n}), {n});
}
Value bcast(Builder& b, const Value& x, const Shape& shape) { return hlo::broadcast_in_dim(b, x, shape, {}); }
Value mask_and(Builder& b, const Value& x, const Value& y) { return hlo::and_(b, x, y); }
Value mask_or(Builder& b, const Value& x, const Value& y) { return hlo::or_(b, x, y); }

// The largest |v[i]| over `mask` (0 when empty) and its first index (LAPACK's i?amax).
std::pair<Value, Value> abs_max(Builder& b, const Value& v, const Value& mask, int64_t n) {
  Value a = hlo::select(b, mask, hlo::abs(b, v), hlo::full(b, v.type, -1));
  Value m = reduce::max(b, a, {0});
  Value idx = hlo::iota(b, Type{DType::I64, {n}}, 0);
  Value hit = mask_and(b, mask, hlo::compare(b, a, bcast(b, m, {n}), "EQ"));
  Value first = reduce::min(b, hlo::select(b, hit, idx, hlo::full(b, idx.type, n)), {0});
  return {hlo::max(b, m, hlo::scalar_like(b, m, 0)), hlo::min(b, first, i64(b, n - 1))};
}

// Rows (and, on the transposed pass, columns) p and q of s swapped.
Value swap_rows(Builder& b, const Value& s, const Value& p, const Value& q) {
  int64_t n = s.dim(0);
  Value ri = hlo::iota(b, Type{DType::I64, s.shape()}, 0);
  Value rp = hlo::broadcast_in_dim(b, row(b, s, p), s.shape(), {1});
  Value rq = hlo::broadcast_in_dim(b, row(b, s, q), s.shape(), {1});
  (void)n;
  return hlo::select(b, hlo::compare(b, ri, bcast(b, p, s.shape()), "EQ"), rq,
                     hlo::select(b, hlo::compare(b, ri, bcast(b, q, s.shape()), "EQ"), rp, s));
}

Value outer(Builder& b, const Value& x, const Value& y) {
  Shape s{x.dim(0), y.dim(0)};
  return hlo::mul(b, hlo::broadcast_in_dim(b, x, s, {0}), hlo::broadcast_in_dim(b, y, s, {1}));
}

// One elimination step at column k of the symmetric working matrix s.
std::vector<Value> ldl_step(Builder& b, const std::vector<Value>& st) {
  Value s = st[0], piv = st[1], info = st[2], k = st[3];
  int64_t n = s.dim(0);
  const Type& ft = s.type;
  Type vt{s.dtype(), {n}};
  Value active = hlo::compare(b, k, i64(b, n), "LT");
  Value kc = hlo::min(b, k, i64(b, n - 1));
  Value idx = hlo::iota(b, Type{DType::I64, {n}}, 0);
  Value kb = bcast(b, kc, {n});
  Value zero_s = hlo::constant(b, s.dtype(), 0);
  Value one_s = hlo::constant(b, s.dtype(), 1);
  Value alpha = hlo::div(b, hlo::add(b, one_s, hlo::sqrt(b, hlo::constant(b, s.dtype(), 17))),
                         hlo::constant(b, s.dtype(), 8));

  Value absakk = hlo::abs(b, at2(b, s, kc, kc));
  auto [colmax, imax] = abs_max(b, col(b, s, kc), hlo::compare(b, idx, kb, "GT"), n);
  Value singular = hlo::compare(b, hlo::max(b, absakk, colmax), zero_s, "EQ");
  Value not_imax = hlo::compare(b, idx, bcast(b, imax, {n}), "NE");
  Value rowmax = abs_max(b, row(b, s, imax), mask_and(b, hlo::compare(b, idx, kb, "GE"), not_imax), n).first;
  Value c1 = hlo::compare(b, absakk, hlo::mul(b, alpha, colmax), "GE");
  Value c2 =
      hlo::compare(b, absakk, hlo::mul(b, hlo::mul(b, alpha, colmax), hlo::div(b, colmax, rowmax)), "GE");
  Value c3 = hlo::compare(b, hlo::abs(b, at2(b, s, imax, imax)), hlo::mul(b, alpha, rowmax), "GE");
  Value keep_k = mask_or(b, singular, mask_or(b, c1, c2));
  Value kp = hlo::select(b, keep_k, kc, imax);
  Value two = hlo::logical_not(b, mask_or(b, keep_k, c3));
  Value kstep = hlo::select(b, two, i64(b, 2), i64(b, 1));
  Value kk = hlo::sub(b, hlo::add(b, kc, kstep), i64(b, 1));

  // Interchange kk and kp within the trailing submatrix (rows and columns >= k).
  Type mt{DType::I64, s.shape()};
  Value ri = hlo::iota(b, mt, 0), ci = hlo::iota(b, mt, 1);
  Value km = bcast(b, kc, s.shape());
  Value trailing = mask_and(b, hlo::compare(b, ri, km, "GE"), hlo::compare(b, ci, km, "GE"));
  Value swapped = linalg::mT(b, swap_rows(b, linalg::mT(b, swap_rows(b, s, kk, kp)), kk, kp));
  s = hlo::select(b, trailing, swapped, s);

  // 1x1 pivot: A22 -= x (x / d)^T, column k below the diagonal becomes x / d.
  Value below1 = hlo::compare(b, idx, kb, "GT");
  Value x = hlo::select(b, below1, col(b, s, kc), hlo::full(b, vt, 0));
  Value r1 = hlo::div(b, one_s, at2(b, s, kc, kc));
  Value s1 = hlo::add(b, s, outer(b, x, hlo::mul(b, bcast(b, hlo::neg(b, r1), {n}), x)));
  Value col1 = hlo::mul(b, bcast(b, r1, {n}), x);
  Value at_k = hlo::compare(b, ci, km, "EQ");
  Value rows_below1 = hlo::compare(b, ri, km, "GT");
  s1 = hlo::select(b, mask_and(b, at_k, rows_below1), hlo::broadcast_in_dim(b, col1, s.shape(), {0}), s1);
  s1 = hlo::select(b, singular, s, s1);

  // 2x2 pivot on rows k, k+1 (LAPACK's scaled form of D^-1).
  Value k1 = hlo::min(b, hlo::add(b, kc, i64(b, 1)), i64(b, n - 1));
  Value d21 = at2(b, s, k1, kc);
  Value d11 = hlo::div(b, at2(b, s, k1, k1), d21);
  Value d22 = hlo::div(b, at2(b, s, kc, kc), d21);
  Value t = hlo::div(b, one_s, hlo::sub(b, hlo::mul(b, d11, d22), one_s));
  Value d21t = hlo::div(b, t, d21);
  Value below2 = hlo::compare(b, idx, bcast(b, k1, {n}), "GT");
  Value ak = hlo::select(b, below2, col(b, s, kc), hlo::full(b, vt, 0));
  Value ak1 = hlo::select(b, below2, col(b, s, k1), hlo::full(b, vt, 0));
  Value wk = hlo::mul(b, bcast(b, d21t, {n}), hlo::sub(b, hlo::mul(b, bcast(b, d11, {n}), ak), ak1));
  Value wk1 = hlo::mul(b, bcast(b, d21t, {n}), hlo::sub(b, hlo::mul(b, bcast(b, d22, {n}), ak1), ak));
  Value s2 = hlo::sub(b, hlo::sub(b, s, outer(b, ak, wk)), outer(b, ak1, wk1));
  Value k1m = bcast(b, k1, s.shape());
  Value rows_below2 = hlo::compare(b, ri, k1m, "GT");
  s2 = hlo::select(b, mask_and(b, at_k, rows_below2), hlo::broadcast_in_dim(b, wk, s.shape(), {0}), s2);
  s2 = hlo::select(b, mask_and(b, hlo::compare(b, ci, k1m, "EQ"), rows_below2),
                   hlo::broadcast_in_dim(b, wk1, s.shape(), {0}), s2);
  (void)ft;

  Value sn = hlo::select(b, two, s2, s1);
  // Keep the matrix symmetric: the lower triangle is the computed one.
  sn = hlo::select(b, hlo::compare(b, ri, ci, "GE"), sn, linalg::mT(b, sn));

  Value p1 = hlo::convert(b, hlo::add(b, kp, i64(b, 1)), DType::I32);
  Value pv = hlo::select(b, two, hlo::neg(b, p1), p1);
  Value at_pos = mask_or(b, hlo::compare(b, idx, kb, "EQ"),
                         mask_and(b, bcast(b, two, {n}), hlo::compare(b, idx, bcast(b, k1, {n}), "EQ")));
  Value pn = hlo::select(b, at_pos, bcast(b, pv, {n}), piv);
  Value first_zero = mask_and(b, singular, hlo::compare(b, info, hlo::constant_int(b, DType::I32, 0), "EQ"));
  Value in = hlo::select(b, first_zero, hlo::convert(b, hlo::add(b, kc, i64(b, 1)), DType::I32), info);
  Value kn = hlo::add(b, kc, kstep);
  return {hlo::select(b, active, sn, st[0]), hlo::select(b, active, pn, piv),
          hlo::select(b, active, in, info), hlo::select(b, active, kn, k)};
}

// linalg_ldl_factor_ex(self, *, hermitian=False, check_errors=False) -> (LD, pivots, info)
std::vector<Value> lower_linalg_ldl_factor_ex(Ctx& c) {
  require_real(c.tensor("self").dtype(), "linalg_ldl_factor_ex");
  Value a = c.tensor("self");
  if (a.type.numel() == 0)
    return {hlo::full(c.b, c.out(0), 0), hlo::full(c.b, c.out(1), 0), hlo::full(c.b, c.out(2), 0)};
  int64_t n = a.dim(-1);
  Shape batch = linalg::batch_of(a.shape());
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  Value flat = hlo::reshape(c.b, a, {count, n, n});
  Value ld0 = hlo::full(c.b, flat.type, 0);
  Value piv0 = hlo::full(c.b, Type{DType::I32, {count, n}}, 0);
  Value info0 = hlo::full(c.b, Type{DType::I32, {count}}, 0);
  auto body = [n](Builder& b, const Value& i, const std::vector<Value>& st) -> std::vector<Value> {
    Value z = i64(b, 0);
    Value m = hlo::reshape(b, hlo::dynamic_slice(b, st[0], {i, z, z}, {1, n, n}), {n, n});
    // The lower triangle is the input (sytrf never reads the upper one).
    Type mt{DType::I64, m.shape()};
    m = hlo::select(b, hlo::compare(b, hlo::iota(b, mt, 0), hlo::iota(b, mt, 1), "GE"), m, linalg::mT(b, m));
    std::vector<Value> init{m, hlo::full(b, Type{DType::I32, {n}}, 0), hlo::constant_int(b, DType::I32, 0),
                            z};
    std::vector<Value> r = linalg::fori_loop(
        b, n, init, [](Builder& rb, const Value&, const std::vector<Value>& s) { return ldl_step(rb, s); });
    Value ld = linalg::tril(b, r[0]);
    return {st[0], hlo::dynamic_update_slice(b, st[1], hlo::reshape(b, ld, {1, n, n}), {i, z, z}),
            hlo::dynamic_update_slice(b, st[2], hlo::reshape(b, r[1], {1, n}), {i, z}),
            hlo::dynamic_update_slice(b, st[3], hlo::reshape(b, r[2], {1}), {i})};
  };
  std::vector<Value> out = linalg::fori_loop(c.b, count, {flat, ld0, piv0, info0}, body);
  Shape ps = batch;
  ps.push_back(n);
  if (c.bool_arg("check_errors")) {
    // check_errors: every matrix factored without an exactly zero pivot column.
    Value worst = reduce::max(c.b, out[3], {0});
    c.require(hlo::compare(c.b, worst, hlo::constant_int(c.b, DType::I32, 0), "EQ"),
              "torch.linalg.ldl_factor_ex: the factorization could not be completed: the block diagonal D "
              "is exactly singular (info > 0)",
              CheckError::LinAlg);
  }
  return {hlo::reshape(c.b, out[1], a.shape()), hlo::reshape(c.b, out[2], ps),
          hlo::reshape(c.b, out[3], batch)};
}

// --- linalg_ldl_solve: LAPACK sytrs (lower) on the factorization above ---------------------------

Value elem(Builder& b, const Value& v, const Value& i) {
  return hlo::reshape(b, hlo::dynamic_slice(b, v, {i}, {1}), {});
}

// x^T y over rows: [n] x [n, r] -> [r].
Value vec_mat(Builder& b, const Value& x, const Value& y) {
  return hlo::dot_general(b, x, y, {}, {}, {0}, {0}, y.dtype());
}

Value set_row(Builder& b, const Value& x, const Value& i, const Value& r) {
  Type mt{DType::I64, x.shape()};
  return hlo::select(b, hlo::compare(b, hlo::iota(b, mt, 0), bcast(b, i, x.shape()), "EQ"),
                     hlo::broadcast_in_dim(b, r, x.shape(), {1}), x);
}

// Column j of ld, zero on and above row `from`.
Value l_col(Builder& b, const Value& ld, const Value& j, const Value& from) {
  int64_t n = ld.dim(0);
  Value idx = hlo::iota(b, Type{DType::I64, {n}}, 0);
  return hlo::select(b, hlo::compare(b, idx, bcast(b, from, {n}), "GT"), col(b, ld, j),
                     hlo::full(b, Type{ld.dtype(), {n}}, 0));
}

// Forward pass: B := D^-1 L^-1 P^T B, one block of D per step.
std::vector<Value> ldl_solve_forward(Builder& b, const std::vector<Value>& st) {
  Value x = st[0], ld = st[1], piv = st[2], k = st[3];
  int64_t n = ld.dim(0);
  Value active = hlo::compare(b, k, i64(b, n), "LT");
  Value kc = hlo::min(b, k, i64(b, n - 1));
  Value k1 = hlo::min(b, hlo::add(b, kc, i64(b, 1)), i64(b, n - 1));
  Value p = hlo::convert(b, elem(b, piv, kc), DType::I64);
  Value two = hlo::compare(b, p, i64(b, 0), "LT");
  Value one_s = hlo::constant(b, x.dtype(), 1);
  // 1x1 block.
  Value x1 = swap_rows(b, x, kc, hlo::sub(b, p, i64(b, 1)));
  x1 = hlo::sub(b, x1, outer(b, l_col(b, ld, kc, kc), row(b, x1, kc)));
  Value r1 = hlo::div(b, one_s, at2(b, ld, kc, kc));
  x1 = set_row(b, x1, kc, hlo::mul(b, bcast(b, r1, {x.dim(1)}), row(b, x1, kc)));
  // 2x2 block.
  Value x2 = swap_rows(b, x, k1, hlo::sub(b, hlo::neg(b, p), i64(b, 1)));
  x2 = hlo::sub(b, x2, outer(b, l_col(b, ld, kc, k1), row(b, x2, kc)));
  x2 = hlo::sub(b, x2, outer(b, l_col(b, ld, k1, k1), row(b, x2, k1)));
  Value akm1k = at2(b, ld, k1, kc);
  Value akm1 = hlo::div(b, at2(b, ld, kc, kc), akm1k);
  Value ak = hlo::div(b, at2(b, ld, k1, k1), akm1k);
  Value denom = hlo::sub(b, hlo::mul(b, akm1, ak), one_s);
  Shape rs{x.dim(1)};
  Value bkm1 = hlo::div(b, row(b, x2, kc), bcast(b, akm1k, rs));
  Value bk = hlo::div(b, row(b, x2, k1), bcast(b, akm1k, rs));
  Value dn = bcast(b, denom, rs);
  Value nk = hlo::div(b, hlo::sub(b, hlo::mul(b, bcast(b, ak, rs), bkm1), bk), dn);
  Value nk1 = hlo::div(b, hlo::sub(b, hlo::mul(b, bcast(b, akm1, rs), bk), bkm1), dn);
  x2 = set_row(b, set_row(b, x2, kc, nk), k1, nk1);
  Value xn = hlo::select(b, two, x2, x1);
  Value kn = hlo::add(b, kc, hlo::select(b, two, i64(b, 2), i64(b, 1)));
  return {hlo::select(b, active, xn, x), ld, piv, hlo::select(b, active, kn, k)};
}

// Backward pass: B := P L^-T B, from the last block up.
std::vector<Value> ldl_solve_backward(Builder& b, const std::vector<Value>& st) {
  Value x = st[0], ld = st[1], piv = st[2], k = st[3];
  Value active = hlo::compare(b, k, i64(b, 0), "GE");
  Value kc = hlo::max(b, k, i64(b, 0));
  Value km1 = hlo::max(b, hlo::sub(b, kc, i64(b, 1)), i64(b, 0));
  Value p = hlo::convert(b, elem(b, piv, kc), DType::I64);
  Value two = hlo::compare(b, p, i64(b, 0), "LT");
  Value sub_k = hlo::sub(b, row(b, x, kc), vec_mat(b, l_col(b, ld, kc, kc), x));
  Value sub_km1 = hlo::sub(b, row(b, x, km1), vec_mat(b, l_col(b, ld, km1, kc), x));
  Value x1 = swap_rows(b, set_row(b, x, kc, sub_k), kc, hlo::sub(b, p, i64(b, 1)));
  Value x2 = swap_rows(b, set_row(b, set_row(b, x, kc, sub_k), km1, sub_km1), kc,
                       hlo::sub(b, hlo::neg(b, p), i64(b, 1)));
  Value xn = hlo::select(b, two, x2, x1);
  Value kn = hlo::sub(b, kc, hlo::select(b, two, i64(b, 2), i64(b, 1)));
  return {hlo::select(b, active, xn, x), ld, piv, hlo::select(b, active, kn, k)};
}

// linalg_ldl_solve(LD, pivots, B, *, hermitian=False): A X = B with A = L D L^T from
// ldl_factor (batch dimensions broadcast).
std::vector<Value> lower_linalg_ldl_solve(Ctx& c) {
  require_real(c.tensor("LD").dtype(), "linalg_ldl_solve");
  const Type& ot = c.out();
  if (ot.numel() == 0) return {hlo::full(c.b, ot, 0)};
  Shape batch = linalg::batch_of(ot.shape);
  Value ld = linalg::broadcast_batch(c.b, c.tensor("LD"), batch);
  Value piv = linalg::broadcast_batch(c.b, c.tensor("pivots"), batch, 1);
  Value rhs = linalg::broadcast_batch(c.b, c.tensor("B"), batch);
  int64_t n = ld.dim(-1), r = rhs.dim(-1), count = 1;
  for (int64_t d : batch) count *= d;
  ld = hlo::reshape(c.b, ld, {count, n, n});
  piv = hlo::reshape(c.b, piv, {count, n});
  rhs = hlo::reshape(c.b, rhs, {count, n, r});
  auto body = [n, r](Builder& b, const Value& i, const std::vector<Value>& st) -> std::vector<Value> {
    Value z = i64(b, 0);
    Value l = hlo::reshape(b, hlo::dynamic_slice(b, st[0], {i, z, z}, {1, n, n}), {n, n});
    Value p = hlo::reshape(b, hlo::dynamic_slice(b, st[1], {i, z}, {1, n}), {n});
    Value x = hlo::reshape(b, hlo::dynamic_slice(b, st[2], {i, z, z}, {1, n, r}), {n, r});
    x = linalg::fori_loop(b, n, {x, l, p, z}, [](Builder& rb, const Value&, const std::vector<Value>& s) {
      return ldl_solve_forward(rb, s);
    })[0];
    x = linalg::fori_loop(
        b, n, {x, l, p, i64(b, n - 1)},
        [](Builder& rb, const Value&, const std::vector<Value>& s) { return ldl_solve_backward(rb, s); })[0];
    return {st[0], st[1], hlo::dynamic_update_slice(b, st[2], hlo::reshape(b, x, {1, n, r}), {i, z, z})};
  };
  Value out = linalg::fori_loop(c.b, count, {ld, piv, rhs}, body)[2];
  return {hlo::reshape(c.b, out, ot.shape)};
}

}  // namespace

TPU_LOWERING("aten::linalg_ldl_factor_ex", lower_linalg_ldl_factor_ex, reads({"self", "check_errors"}));
TPU_LOWERING("aten::linalg_ldl_solve", lower_linalg_ldl_solve, reads({"LD", "pivots", "B"}));

}  // namespace tpu::lowering
