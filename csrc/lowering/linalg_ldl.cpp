// linalg_ldl_factor_ex by LAPACK sytf2's Bunch-Kaufman diagonal pivoting (lower storage), so LD
// and the pivots equal the CPU's: column k is eliminated with a 1x1 pivot (itself or row imax,
// the largest entry below the diagonal, swapped in) or with the 2x2 pivot of k and imax, by the
// alpha = (1 + sqrt(17)) / 8 tests on the column and row maxima. Pivots are 1-based; both rows of
// a 2x2 block get -(swapped row). As in LAPACK, an interchange only touches the trailing
// submatrix (earlier columns of L keep their rows), and an exactly zero column is left as it is
// and reported in info. The working matrix is kept fully symmetric so rows and columns of the
// trailing part read alike; only its lower triangle is ever computed. One matrix at a time in a
// loop over the flattened batch; each step eliminates 1 or 2 columns, so n steps suffice.
#include "lowering/hlo.h"
#include "lowering/linalg_util.h"
#include "lowering/reduce_util.h"
#include "lowering/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

Value i64(Builder& b, int64_t v) { return hlo::constant_int(b, DType::I64, v); }

Value at2(Builder& b, const Value& s, const Value& i, const Value& j) {
  return hlo::reshape(b, hlo::dynamic_slice(b, s, {i, j}, {1, 1}), {});
}
Value col(Builder& b, const Value& s, const Value& j) {
  int64_t n = s.dim(0);
  return hlo::reshape(b, hlo::dynamic_slice(b, s, {i64(b, 0), j}, {n, 1}), {n});
}
Value row(Builder& b, const Value& s, const Value& i) {
  int64_t n = s.dim(0);
  return hlo::reshape(b, hlo::dynamic_slice(b, s, {i, i64(b, 0)}, {1, n}), {n});
}
Value bcast(Builder& b, const Value& x, const Shape& shape) { return hlo::broadcast_in_dim(b, x, shape, {}); }
Value mask_and(Builder& b, const Value& x, const Value& y) { return hlo::binary(b, "stablehlo.and", x, y); }
Value mask_or(Builder& b, const Value& x, const Value& y) { return hlo::binary(b, "stablehlo.or", x, y); }

// The largest |v[i]| over `mask` (0 when empty) and its first index (LAPACK's i?amax).
std::pair<Value, Value> abs_max(Builder& b, const Value& v, const Value& mask, int64_t n) {
  Value a = hlo::select(b, mask, hlo::unary(b, "stablehlo.abs", v), hlo::full(b, v.type, -1));
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
  Value alpha = hlo::div(b, hlo::add(b, one_s, hlo::unary(b, "stablehlo.sqrt", hlo::constant(b, s.dtype(), 17))),
                         hlo::constant(b, s.dtype(), 8));

  Value absakk = hlo::unary(b, "stablehlo.abs", at2(b, s, kc, kc));
  auto [colmax, imax] = abs_max(b, col(b, s, kc), hlo::compare(b, idx, kb, "GT"), n);
  Value singular = hlo::compare(b, hlo::max(b, absakk, colmax), zero_s, "EQ");
  Value not_imax = hlo::compare(b, idx, bcast(b, imax, {n}), "NE");
  Value rowmax = abs_max(b, row(b, s, imax), mask_and(b, hlo::compare(b, idx, kb, "GE"), not_imax), n).first;
  Value c1 = hlo::compare(b, absakk, hlo::mul(b, alpha, colmax), "GE");
  Value c2 = hlo::compare(b, absakk, hlo::mul(b, hlo::mul(b, alpha, colmax), hlo::div(b, colmax, rowmax)), "GE");
  Value c3 = hlo::compare(b, hlo::unary(b, "stablehlo.abs", at2(b, s, imax, imax)), hlo::mul(b, alpha, rowmax), "GE");
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
  return {hlo::select(b, active, sn, st[0]), hlo::select(b, active, pn, piv), hlo::select(b, active, in, info),
          hlo::select(b, active, kn, k)};
}

// linalg_ldl_factor_ex(self, *, hermitian=False, check_errors=False) -> (LD, pivots, info)
std::vector<Value> lower_linalg_ldl_factor_ex(Ctx& c) {
  linalg::require_real(c.tensor(0), "linalg_ldl_factor_ex");
  Value a = c.tensor(0);
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
    std::vector<Value> init{m, hlo::full(b, Type{DType::I32, {n}}, 0), hlo::constant_int(b, DType::I32, 0), z};
    std::vector<Value> r = linalg::fori_loop(b, n, init, [](Builder& rb, const Value&, const std::vector<Value>& s) {
      return ldl_step(rb, s);
    });
    Value ld = linalg::tril(b, r[0]);
    return {st[0], hlo::dynamic_update_slice(b, st[1], hlo::reshape(b, ld, {1, n, n}), {i, z, z}),
            hlo::dynamic_update_slice(b, st[2], hlo::reshape(b, r[1], {1, n}), {i, z}),
            hlo::dynamic_update_slice(b, st[3], hlo::reshape(b, r[2], {1}), {i})};
  };
  std::vector<Value> out = linalg::fori_loop(c.b, count, {flat, ld0, piv0, info0}, body);
  Shape ps = batch;
  ps.push_back(n);
  return {hlo::reshape(c.b, out[1], a.shape()), hlo::reshape(c.b, out[2], ps), hlo::reshape(c.b, out[3], batch)};
}

}  // namespace

TPU_LOWERING("aten::linalg_ldl_factor_ex", lower_linalg_ldl_factor_ex);

}  // namespace tpu::lowering
