// linalg_eig and _linalg_eigvals (torch.linalg.eig / eigvals) for general square matrices.
// StableHLO has no eigensolver, so this is LAPACK geev's algorithm written out, in complex
// arithmetic for every input (a real matrix is converted first; its eigenvalues are complex
// anyway):
//   0. scaling of a matrix whose largest element is tiny or huge (zgeev's zlascl step);
//   1. Householder reduction to upper Hessenberg form H = Q^H A Q (zgehrd + zunghr);
//   2. single-shift QR iterations on H (zlahqr): Wilkinson shifts, a bulge chased down by Givens
//      rotations, deflation of negligible subdiagonal entries, exceptional shifts after 10 and
//      20 iterations without deflation, at most 30 * max(10, n) iterations, giving the Schur
//      form T = Z^H A Z with Z accumulated;
//   3. eigenvectors of the triangular T by back substitution (ztrevc: a tiny divisor is raised
//      to eps |lambda|, columns rescaled so nothing overflows), mapped back by Z and
//      normalized as zgeev does: unit 2-norm, largest component real and positive.
// The data-dependent iteration runs one matrix at a time (a loop over the flattened batch), so
// every index in the QR sweep is a scalar and rotations touch two rows and two columns only.
// Eigenvalues come out in the order the deflation finds them, not necessarily LAPACK's; a real
// matrix's real eigenvalues carry imaginary parts of rounding size.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

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

// ---- scalar and vector helpers for one complex matrix [n, n] -------------------------------

// |Re x| + |Im x| (LAPACK's cheap magnitude, for convergence tests and pivots).
using linalg::cabs1;

using linalg::i64;

Value re(Builder& b, const Value& x) { return hlo::real(b, x); }
Value im(Builder& b, const Value& x) { return hlo::imag(b, x); }
Value make_complex(Builder& b, const Value& r, const Value& i) { return hlo::complex(b, r, i); }
// A real value as a complex one of the same shape.
Value to_complex(Builder& b, const Value& r) { return make_complex(b, r, hlo::full(b, r.type, 0)); }
// |x| of a complex x, real.
Value cabs(Builder& b, const Value& x) { return hlo::abs(b, x); }
// |x|^2, real.
Value abs2(Builder& b, const Value& x) {
  Value r = re(b, x), i = im(b, x);
  return hlo::add(b, hlo::mul(b, r, r), hlo::mul(b, i, i));
}
Value bcast(Builder& b, const Value& scalar, const Shape& shape) {
  return hlo::broadcast_in_dim(b, scalar, shape, {});
}
Value land(Builder& b, const Value& x, const Value& y) { return hlo::and_(b, x, y); }

// x[i, j] as a 0-d value, and x with it replaced.
Value elem(Builder& b, const Value& x, const Value& i, const Value& j) {
  return hlo::reshape(b, hlo::dynamic_slice(b, x, {i, j}, {1, 1}), {});
}
Value set_elem(Builder& b, const Value& x, const Value& v, const Value& i, const Value& j) {
  return hlo::dynamic_update_slice(b, x, hlo::reshape(b, v, {1, 1}), {i, j});
}
// The main diagonal [n] and the first subdiagonal [n - 1] (entry k - 1 is x[k, k - 1]).
Value diag(Builder& b, const Value& x) { return linalg::diagonal(b, x); }
Value subdiag(Builder& b, const Value& x) {
  int64_t n = x.dim(0);
  return linalg::diagonal(b, hlo::slice(b, x, {1, 0}, {n, n - 1}));
}
// v [n] as a column [n, 1] or a row [1, n].
Value as_col(Builder& b, const Value& v) { return hlo::reshape(b, v, {v.dim(0), 1}); }
Value as_row(Builder& b, const Value& v) { return hlo::reshape(b, v, {1, v.dim(0)}); }
Value mm(Builder& b, const Value& x, const Value& y) {
  return hlo::dot_general(b, x, y, {}, {}, {1}, {0}, x.dtype());
}

struct Limits {
  double ulp, safmin, smlnum;
};
Limits limits_of(DType real, int64_t n) {
  bool f64 = real == DType::F64;
  double eps = f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  double tiny = f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  // zlahqr's smlnum = safmin * (n / ulp): below this a subdiagonal entry is negligible outright.
  return {eps, tiny, tiny * (static_cast<double>(n) / eps)};
}

// ---- 1. Hessenberg reduction --------------------------------------------------------------

// H = P_{n-3} ... P_0 A P_0 ... P_{n-3} with Hermitian reflectors P_j = I - tau v v^H that zero
// column j below the subdiagonal; Z = P_0 ... P_{n-3} when `want_z`.
std::pair<Value, Value> hessenberg(Builder& b, const Value& a, bool want_z) {
  int64_t n = a.dim(0);
  Value z0 = want_z ? linalg::eye(b, a.type) : hlo::full(b, Type{a.dtype(), {1, 1}}, 0);
  auto body = [n, want_z](Builder& rb, const Value& j, const std::vector<Value>& s) -> std::vector<Value> {
    Value h = s[0], z = s[1];
    Type ct = Type{h.dtype(), {n}};
    Type rt = hlo::with_dtype(ct, ir::real_type(h.dtype()));
    Value col = hlo::reshape(rb, hlo::dynamic_slice(rb, h, {i64(rb, 0), j}, {n, 1}), {n});
    Value rows = hlo::iota(rb, Type{DType::I64, {n}}, 0);
    Value j1 = hlo::add(rb, j, i64(rb, 1));
    Value at = hlo::compare(rb, rows, bcast(rb, j1, {n}), "EQ");
    Value below = hlo::compare(rb, rows, bcast(rb, j1, {n}), "GT");
    Value zero_c = hlo::full(rb, ct, 0);
    // x = H[j+1:, j], scaled by its largest magnitude so no square overflows or underflows
    // (the reflector does not depend on the scale).
    Value x = hlo::select(rb, hlo::or_(rb, at, below), col, zero_c);
    Type r0{rt.dtype, {}};
    Value zero = hlo::full(rb, r0, 0), one = hlo::full(rb, r0, 1);
    Value amax = reduce::max(rb, cabs(rb, x), {0});
    amax = hlo::select(rb, hlo::compare(rb, amax, zero, "GT"), amax, one);
    x = hlo::div(rb, x, bcast(rb, to_complex(rb, amax), {n}));
    Value alpha = reduce::sum(rb, hlo::select(rb, at, x, zero_c), {0});
    Value tail2 = reduce::sum(rb, abs2(rb, hlo::select(rb, below, x, zero_c)), {0});
    Value abs_a = cabs(rb, alpha);
    Value norm = hlo::sqrt(rb, hlo::add(rb, hlo::mul(rb, abs_a, abs_a), tail2));
    // v = x + e^{i arg alpha} ||x|| e_1, so v's leading entry cannot cancel.
    Value phase = hlo::select(
        rb, hlo::compare(rb, abs_a, zero, "GT"),
        hlo::div(rb, alpha, to_complex(rb, hlo::select(rb, hlo::compare(rb, abs_a, zero, "GT"), abs_a, one))),
        hlo::full(rb, alpha.type, 1));
    Value lead = hlo::add(rb, alpha, hlo::mul(rb, phase, to_complex(rb, norm)));
    Value v = hlo::select(rb, at, bcast(rb, lead, {n}), x);
    // Nothing to zero below the subdiagonal: no reflection (tau = 0).
    Value skip = hlo::compare(rb, tail2, zero, "EQ");
    Value vv = hlo::add(rb, abs2(rb, lead), tail2);
    Value tau =
        hlo::select(rb, skip, zero, hlo::div(rb, hlo::full(rb, r0, 2), hlo::select(rb, skip, one, vv)));
    Value tv = hlo::mul(rb, v, bcast(rb, to_complex(rb, tau), {n}));  // tau v
    Value vc = as_col(rb, v), tvc = as_col(rb, tv);
    // H <- H - tau v (v^H H); H <- H - (H v) (tau v)^H; Z <- Z - (Z v) (tau v)^H.
    h = hlo::sub(rb, h, mm(rb, tvc, mm(rb, as_row(rb, conj(rb, v)), h)));
    Value tvh = as_row(rb, conj(rb, tv));
    h = hlo::sub(rb, h, mm(rb, mm(rb, h, vc), tvh));
    if (want_z) z = hlo::sub(rb, z, mm(rb, mm(rb, z, vc), tvh));
    // Column j below the subdiagonal is zero by construction: store exact zeros.
    Type mt{DType::I64, {n, n}};
    Value zap = land(rb, hlo::compare(rb, hlo::iota(rb, mt, 1), bcast(rb, j, {n, n}), "EQ"),
                     hlo::compare(rb, hlo::iota(rb, mt, 0), bcast(rb, j1, {n, n}), "GT"));
    h = hlo::select(rb, zap, hlo::full(rb, h.type, 0), h);
    return {h, z};
  };
  std::vector<Value> out = linalg::fori_loop(b, n - 2, {a, z0}, body);
  return {out[0], out[1]};
}

// ---- 2. Shifted QR iterations -------------------------------------------------------------

// The Wilkinson shift: the eigenvalue of H[hi-1:hi+1, hi-1:hi+1] closer to H[hi, hi] (zlahqr's
// formulation, scaled against overflow).
Value wilkinson_shift(Builder& b, const Value& h, const Value& hi) {
  Value him1 = hlo::sub(b, hi, i64(b, 1));
  Value a = elem(b, h, him1, him1), bb = elem(b, h, him1, hi), c = elem(b, h, hi, him1),
        d = elem(b, h, hi, hi);
  Type rt = hlo::with_dtype(a.type, ir::real_type(a.dtype()));
  Value zero = hlo::full(b, rt, 0), one = hlo::full(b, rt, 1);
  Value u = hlo::mul(b, hlo::sqrt(b, bb), hlo::sqrt(b, c));
  Value su = cabs1(b, u);
  Value x = hlo::mul(b, hlo::full(b, a.type, 0.5), hlo::sub(b, a, d));
  Value sx = cabs1(b, x);
  Value s = hlo::max(b, su, sx);
  Value ss = to_complex(b, hlo::select(b, hlo::compare(b, s, zero, "GT"), s, one));
  Value xs = hlo::div(b, x, ss), us = hlo::div(b, u, ss);
  Value y = hlo::mul(b, ss, hlo::sqrt(b, hlo::add(b, hlo::mul(b, xs, xs), hlo::mul(b, us, us))));
  // Choose the root's sign so x + y does not cancel.
  Value align = hlo::add(b, hlo::mul(b, re(b, x), re(b, y)), hlo::mul(b, im(b, x), im(b, y)));
  y = hlo::select(b, hlo::compare(b, align, zero, "LT"), hlo::neg(b, y), y);
  Value den = hlo::add(b, x, y);
  Value ok = land(b, hlo::compare(b, su, zero, "GT"), hlo::compare(b, cabs1(b, den), zero, "GT"));
  Value safe = hlo::select(b, ok, den, hlo::full(b, den.type, 1));
  Value corr = hlo::mul(b, u, hlo::div(b, u, safe));
  return hlo::select(b, ok, hlo::sub(b, d, corr), d);
}

// The rotation G = [[c, s], [-conj(s), c]] (c real) with G [x; y] = [r; 0].
std::pair<Value, Value> givens(Builder& b, const Value& x, const Value& y) {
  Type rt = hlo::with_dtype(x.type, ir::real_type(x.dtype()));
  Value zero = hlo::full(b, rt, 0), one = hlo::full(b, rt, 1);
  Value ax = cabs(b, x), ay = cabs(b, y);
  Value m = hlo::max(b, ax, ay);
  Value ms = hlo::select(b, hlo::compare(b, m, zero, "GT"), m, one);
  Value px = hlo::div(b, ax, ms), py = hlo::div(b, ay, ms);
  Value r = hlo::mul(b, ms, hlo::sqrt(b, hlo::add(b, hlo::mul(b, px, px), hlo::mul(b, py, py))));
  Value rs = hlo::select(b, hlo::compare(b, r, zero, "GT"), r, one);
  Value c = hlo::select(b, hlo::compare(b, r, zero, "GT"), hlo::div(b, ax, rs), one);
  // s = (x / |x|) conj(y) / r; with x = 0 the phase is 1.
  Value phase =
      hlo::select(b, hlo::compare(b, ax, zero, "GT"),
                  hlo::div(b, x, to_complex(b, hlo::select(b, hlo::compare(b, ax, zero, "GT"), ax, one))),
                  hlo::full(b, x.type, 1));
  Value s = hlo::div(b, hlo::mul(b, phase, conj(b, y)), to_complex(b, rs));
  return {to_complex(b, c), s};
}

// Rows k, k+1 of x <- G [row_k; row_k+1].
Value rotate_rows(Builder& b, const Value& x, const Value& c, const Value& s, const Value& k) {
  int64_t n = x.dim(1);
  Value rows = hlo::dynamic_slice(b, x, {k, i64(b, 0)}, {2, n});
  Value r0 = hlo::slice(b, rows, {0, 0}, {1, n}), r1 = hlo::slice(b, rows, {1, 0}, {2, n});
  Shape sh{1, n};
  Value cb = bcast(b, c, sh), sb = bcast(b, s, sh), scb = bcast(b, conj(b, s), sh);
  Value n0 = hlo::add(b, hlo::mul(b, cb, r0), hlo::mul(b, sb, r1));
  Value n1 = hlo::sub(b, hlo::mul(b, cb, r1), hlo::mul(b, scb, r0));
  return hlo::dynamic_update_slice(b, x, hlo::concatenate(b, {n0, n1}, 0), {k, i64(b, 0)});
}
// Columns k, k+1 of x <- [col_k, col_k+1] G^H.
Value rotate_cols(Builder& b, const Value& x, const Value& c, const Value& s, const Value& k) {
  int64_t m = x.dim(0);
  Value cols = hlo::dynamic_slice(b, x, {i64(b, 0), k}, {m, 2});
  Value c0 = hlo::slice(b, cols, {0, 0}, {m, 1}), c1 = hlo::slice(b, cols, {0, 1}, {m, 2});
  Shape sh{m, 1};
  Value cb = bcast(b, c, sh), sb = bcast(b, s, sh), scb = bcast(b, conj(b, s), sh);
  Value n0 = hlo::add(b, hlo::mul(b, cb, c0), hlo::mul(b, scb, c1));
  Value n1 = hlo::sub(b, hlo::mul(b, cb, c1), hlo::mul(b, sb, c0));
  return hlo::dynamic_update_slice(b, x, hlo::concatenate(b, {n0, n1}, 1), {i64(b, 0), k});
}

// One implicit single-shift QR sweep over the active block [lo, hi] of H (and Z): the first
// rotation comes from the shifted first column, the rest chase the bulge at H[k+1, k-1].
std::vector<Value> qr_sweep(Builder& b, const Value& h, const Value& z, const Value& lo, const Value& hi,
                            const Value& mu, bool want_z) {
  auto body = [want_z](Builder& rb, const Value& step, const std::vector<Value>& s) -> std::vector<Value> {
    Value h = s[0], z = s[1], lo = s[2], mu = s[3];
    Value k = hlo::add(rb, lo, step);
    Value k1 = hlo::add(rb, k, i64(rb, 1));
    Value km1 = hlo::max(rb, hlo::sub(rb, k, i64(rb, 1)), i64(rb, 0));
    Value first = hlo::compare(rb, k, lo, "EQ");
    Value x = hlo::select(rb, first, hlo::sub(rb, elem(rb, h, k, k), mu), elem(rb, h, k, km1));
    Value y = hlo::select(rb, first, elem(rb, h, k1, k), elem(rb, h, k1, km1));
    auto [c, sn] = givens(rb, x, y);
    h = rotate_rows(rb, h, c, sn, k);
    // The chased bulge is now zero; store it exactly (the rows' left part is zero otherwise).
    h = set_elem(rb, h, hlo::select(rb, first, elem(rb, h, k1, km1), hlo::full(rb, mu.type, 0)), k1, km1);
    h = rotate_cols(rb, h, c, sn, k);
    if (want_z) z = rotate_cols(rb, z, c, sn, k);
    return {h, z, lo, mu};
  };
  return linalg::fori_loop(b, hlo::sub(b, hi, lo), {h, z, lo, mu}, body);
}

// Reduces Hessenberg H to upper triangular T = Z^H H Z (Z updated when `want_z`). Returns
// {T, Z, converged (0-d i1)}.
std::vector<Value> schur(Builder& b, const Value& h0, const Value& z0, bool want_z) {
  int64_t n = h0.dim(0);
  Limits lim = limits_of(ir::real_type(h0.dtype()), n);
  int64_t cap = 30 * std::max<int64_t>(10, n);
  // State: H, Z, hi (last row of the active block), its (sweeps since the last deflation),
  // total (iterations so far).
  std::vector<Value> init{h0, z0, i64(b, n - 1), i64(b, 0), i64(b, 0)};
  auto cond = [cap](Builder& rb, const std::vector<Value>& s) -> std::vector<Value> {
    return {land(rb, hlo::compare(rb, s[2], i64(rb, 0), "GT"), hlo::compare(rb, s[4], i64(rb, cap), "LT"))};
  };
  auto step = [n, lim, want_z](Builder& rb, const std::vector<Value>& s) -> std::vector<Value> {
    Value h = s[0], z = s[1], hi = s[2], its = s[3], total = s[4];
    Type rt{ir::real_type(h.dtype()), {n - 1}};
    // Negligible subdiagonal entries (zlahqr's test against the neighbouring diagonal).
    Value d = diag(rb, h);
    Value sub = cabs1(rb, subdiag(rb, h));
    Value dc = cabs1(rb, d);
    Value tst = hlo::add(rb, hlo::slice(rb, dc, {0}, {n - 1}), hlo::slice(rb, dc, {1}, {n}));
    Value bound = hlo::max(rb, hlo::mul(rb, hlo::full(rb, rt, lim.ulp), tst), hlo::full(rb, rt, lim.smlnum));
    Value negl = hlo::compare(rb, sub, bound, "LE");
    // lo: the top of the unreduced block ending at hi.
    Type it{DType::I64, {n - 1}};
    Value kk = hlo::add(rb, hlo::iota(rb, it, 0), hlo::full(rb, it, 1));
    Value cand = hlo::select(rb, land(rb, negl, hlo::compare(rb, kk, bcast(rb, hi, {n - 1}), "LE")), kk,
                             hlo::full(rb, it, 0));
    Value lo = reduce::max(rb, cand, {0});
    Value zero_c = hlo::full(rb, Type{h.dtype(), {}}, 0);
    Value lo_m1 = hlo::max(rb, hlo::sub(rb, lo, i64(rb, 1)), i64(rb, 0));
    Value split = hlo::compare(rb, lo, i64(rb, 0), "GT");
    h = set_elem(rb, h, hlo::select(rb, split, zero_c, elem(rb, h, lo, lo_m1)), lo, lo_m1);
    Value done = hlo::compare(rb, lo, hi, "EQ");
    // Shift: Wilkinson's, or an exceptional one after 10 / 20 sweeps without a deflation.
    Value mu = wilkinson_shift(rb, h, hi);
    Value lo1 = hlo::min(rb, hlo::add(rb, lo, i64(rb, 1)), hi);
    Value him1 = hlo::max(rb, hlo::sub(rb, hi, i64(rb, 1)), i64(rb, 0));
    Value three4 = hlo::full(rb, Type{rt.dtype, {}}, 0.75);
    Value ex10 = hlo::add(rb, to_complex(rb, hlo::mul(rb, three4, cabs1(rb, elem(rb, h, lo1, lo)))),
                          elem(rb, h, lo, lo));
    Value ex20 = hlo::add(rb, to_complex(rb, hlo::mul(rb, three4, cabs1(rb, elem(rb, h, hi, him1)))),
                          elem(rb, h, hi, hi));
    mu = hlo::select(rb, hlo::compare(rb, its, i64(rb, 10), "EQ"), ex10, mu);
    mu = hlo::select(rb, hlo::compare(rb, its, i64(rb, 20), "EQ"), ex20, mu);
    // A deflated 1x1 block gives a sweep of length hi - lo = 0.
    std::vector<Value> swept = qr_sweep(rb, h, z, lo, hi, mu, want_z);
    Value one = i64(rb, 1);
    Value new_hi = hlo::select(rb, done, hlo::sub(rb, hi, one), hi);
    Value new_its = hlo::select(rb, done, i64(rb, 0), hlo::add(rb, its, one));
    return {swept[0], swept[1], new_hi, new_its, hlo::add(rb, total, one)};
  };
  std::vector<Value> out = hlo::while_loop(b, init, cond, step);
  return {linalg::triu(b, out[0]), out[1], hlo::compare(b, out[2], i64(b, 0), "EQ")};
}

// ---- 3. Eigenvectors ----------------------------------------------------------------------

// Eigenvectors of upper triangular T as the columns of an upper triangular X (X[k, k] = 1 before
// scaling): row i of every column k > i solved from (T[i, i] - T[k, k]) X[i, k] = -T[i, i+1:] X[i+1:, k],
// bottom row first.
Value triangular_eigenvectors(Builder& b, const Value& t) {
  int64_t n = t.dim(0);
  Limits lim = limits_of(ir::real_type(t.dtype()), n);
  auto body = [n, lim](Builder& rb, const Value& idx, const std::vector<Value>& s) -> std::vector<Value> {
    Value t = s[0], x = s[1];
    Type ct{t.dtype(), {n}};
    Type rt = hlo::with_dtype(ct, ir::real_type(t.dtype()));
    Type it{DType::I64, {n}};
    Value i = hlo::sub(rb, i64(rb, n - 2), idx);
    Value cols = hlo::iota(rb, it, 0);
    Value right = hlo::compare(rb, cols, bcast(rb, i, {n}), "GT");
    Value trow = hlo::reshape(rb, hlo::dynamic_slice(rb, t, {i, i64(rb, 0)}, {1, n}), {n});
    trow = hlo::select(rb, right, trow, hlo::full(rb, ct, 0));
    Value num = hlo::reshape(rb, mm(rb, as_row(rb, trow), x), {n});
    Value lam = diag(rb, t);
    Value den = hlo::sub(rb, bcast(rb, elem(rb, t, i, i), {n}), lam);
    // ztrevc: a divisor below smin = max(ulp |lambda_k|, smlnum) is replaced by smin.
    Value smin =
        hlo::max(rb, hlo::mul(rb, hlo::full(rb, rt, lim.ulp), cabs1(rb, lam)), hlo::full(rb, rt, lim.smlnum));
    den = hlo::select(rb, hlo::compare(rb, cabs1(rb, den), smin, "LT"), to_complex(rb, smin), den);
    Value old = hlo::reshape(rb, hlo::dynamic_slice(rb, x, {i, i64(rb, 0)}, {1, n}), {n});
    Value row = hlo::select(rb, right, hlo::neg(rb, hlo::div(rb, num, den)), old);
    x = hlo::dynamic_update_slice(rb, x, as_row(rb, row), {i, i64(rb, 0)});
    // Keep every column's entries at most 1 so later rows cannot overflow (scaling a column
    // scales its solution).
    Value cmax = reduce::max(rb, cabs1(rb, x), {0});
    Value one = hlo::full(rb, rt, 1);
    Value scale = hlo::select(rb, hlo::compare(rb, cmax, one, "GT"), hlo::div(rb, one, cmax), one);
    x = hlo::mul(rb, x, hlo::broadcast_in_dim(rb, to_complex(rb, scale), {n, n}, {1}));
    return {t, x};
  };
  return linalg::fori_loop(b, n - 1, {t, linalg::eye(b, t.type)}, body)[1];
}

// Columns of v scaled to unit 2-norm with their largest component real and positive (zgeev).
Value normalize_columns(Builder& b, const Value& v) {
  int64_t n = v.dim(0);
  Type rt{ir::real_type(v.dtype()), {n}};
  Value one = hlo::full(b, rt, 1);
  Value cmax = reduce::max(b, cabs(b, v), {0});
  cmax = hlo::select(b, hlo::compare(b, cmax, hlo::full(b, rt, 0), "GT"), cmax, one);
  Value w = hlo::div(b, v, hlo::broadcast_in_dim(b, to_complex(b, cmax), {n, n}, {1}));
  Value mag2 = abs2(b, w);
  Value norm = hlo::sqrt(b, reduce::sum(b, mag2, {0}));
  // The first row holding the column's largest |w|^2, as LAPACK's idamax picks it.
  Value big = reduce::max(b, mag2, {0});
  Type mt{DType::I64, {n, n}};
  Value rows = hlo::iota(b, mt, 0);
  Value is_big = hlo::compare(b, mag2, hlo::broadcast_in_dim(b, big, {n, n}, {1}), "EQ");
  Value arg = reduce::min(b, hlo::select(b, is_big, rows, hlo::full(b, mt, static_cast<double>(n))), {0});
  Value at = hlo::compare(b, rows, hlo::broadcast_in_dim(b, arg, {n, n}, {1}), "EQ");
  Value pivot = reduce::sum(b, hlo::select(b, at, w, hlo::full(b, w.type, 0)), {0});
  Value pabs = cabs(b, pivot);
  pabs = hlo::select(b, hlo::compare(b, pabs, hlo::full(b, rt, 0), "GT"), pabs, one);
  // w * conj(pivot) / (|pivot| ||w||)
  Value f = hlo::div(b, conj(b, pivot), to_complex(b, hlo::mul(b, pabs, norm)));
  w = hlo::mul(b, w, hlo::broadcast_in_dim(b, f, {n, n}, {1}));
  return hlo::select(b, at, to_complex(b, re(b, w)), w);
}

// ---- the ops ------------------------------------------------------------------------------

void check_dtype(const Value& a, const char* op) {
  DType t = a.dtype();
  if (t != DType::F32 && t != DType::F64 && t != DType::C64 && t != DType::C128)
    throw std::invalid_argument(std::string("\"") + op + "_tpu\" not implemented for '" + ir::torch_name(t) +
                                "'");
}

// The factor that brings max |m_ij| into [lo, 1 / lo], lo = sqrt(safmin) / ulp (1 inside it, or
// for a zero matrix).
Value balance_scale(Builder& b, const Value& m) {
  DType rt = ir::real_type(m.dtype());
  Limits lim = limits_of(rt, 1);
  double lo = std::sqrt(lim.safmin) / lim.ulp, hi = 1 / lo;
  Value anrm = reduce::max(b, cabs(b, m), {0, 1});
  Type t = anrm.type;
  Value one = hlo::full(b, t, 1);
  Value small = land(b, hlo::compare(b, anrm, hlo::full(b, t, 0), "GT"),
                     hlo::compare(b, anrm, hlo::full(b, t, lo), "LT"));
  Value big = hlo::compare(b, anrm, hlo::full(b, t, hi), "GT");
  Value safe = hlo::select(b, hlo::or_(b, small, big), anrm, one);
  Value f = hlo::div(b, hlo::select(b, small, hlo::full(b, t, lo), hlo::full(b, t, hi)), safe);
  return hlo::select(b, hlo::or_(b, small, big), f, one);
}

// 0-d i1: every element of a is finite.
Value all_finite(Builder& b, const Value& a) {
  Value fin = ir::is_complex(a.dtype()) ? land(b, hlo::is_finite(b, re(b, a)), hlo::is_finite(b, im(b, a)))
                                        : hlo::is_finite(b, a);
  std::vector<int64_t> dims;
  for (int i = 0; i < fin.rank(); ++i) dims.push_back(i);
  return reduce::min(b, fin, dims);
}

// Eigenvalues (and eigenvectors) of every matrix in a [..., n, n] input. `ok` collects whether
// the QR iteration converged for all of them.
std::vector<Value> eig(Ctx& c, const Type& vals_t, const Type* vecs_t, const char* op) {
  Builder& b = c.b;
  Value a = c.tensor("self");
  check_dtype(a, op);
  bool want_v = vecs_t != nullptr;
  DType ct = vals_t.dtype;
  int64_t n = a.dim(-1);
  auto empty_outs = [&] {
    std::vector<Value> out{hlo::full(b, vals_t, 0)};
    if (want_v) out.push_back(hlo::full(b, *vecs_t, 0));
    return out;
  };
  if (a.type.numel() == 0) return empty_outs();
  Shape batch = linalg::batch_of(a.shape());
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  Value flat = hlo::reshape(b, hlo::convert(b, a, ct), {nb, n, n});
  Value vals0 = hlo::full(b, Type{ct, {nb, n}}, 0);
  Value vecs0 = hlo::full(b, Type{ct, {want_v ? nb : 1, want_v ? n : 1, want_v ? n : 1}}, 0);
  Value ok0 = hlo::constant_int(b, DType::Bool, 1);
  auto body = [n, want_v](Builder& rb, const Value& k, const std::vector<Value>& s) -> std::vector<Value> {
    Value flat = s[0], vals = s[1], vecs = s[2], ok = s[3];
    Value zero = i64(rb, 0);
    Value m = hlo::reshape(rb, hlo::dynamic_slice(rb, flat, {k, zero, zero}, {1, n, n}), {n, n});
    // As zgeev does, bring the largest element into [sqrt(safmin) / ulp, its reciprocal] first:
    // otherwise every subdiagonal entry of a tiny matrix would look negligible (below smlnum).
    Value scale = balance_scale(rb, m);
    m = hlo::mul(rb, m, bcast(rb, to_complex(rb, scale), {n, n}));
    Value t = m, z;
    if (n > 1) {
      auto [h, z0] = hessenberg(rb, m, want_v);
      std::vector<Value> sch = schur(rb, h, z0, want_v);
      t = sch[0];
      z = sch[1];
      ok = land(rb, ok, sch[2]);
    }
    Value lam = hlo::div(rb, diag(rb, t), bcast(rb, to_complex(rb, scale), {n}));
    vals = hlo::dynamic_update_slice(rb, vals, hlo::reshape(rb, lam, {1, n}), {k, zero});
    if (want_v) {
      Value x = triangular_eigenvectors(rb, t);
      Value v = normalize_columns(rb, n > 1 ? mm(rb, z, x) : x);
      vecs = hlo::dynamic_update_slice(rb, vecs, hlo::reshape(rb, v, {1, n, n}), {k, zero, zero});
    }
    return {flat, vals, vecs, ok};
  };
  std::vector<Value> out = linalg::fori_loop(b, nb, {flat, vals0, vecs0, ok0}, body);
  std::string api = want_v ? "torch.linalg.eig" : "torch.linalg.eigvals";
  Value ok = out[3];
  // eigvals of a non-finite matrix are NaN on the CPU (LAPACK gives up), not an error.
  if (!want_v) ok = hlo::or_(b, ok, hlo::logical_not(b, all_finite(b, a)));
  c.require(ok,
            api +
                ": The algorithm failed to converge because the input matrix is ill-conditioned or has "
                "too many repeated eigenvalues.",
            CheckError::LinAlg);
  if (!want_v) {
    Value nan = hlo::full(b, out[1].type, std::numeric_limits<double>::quiet_NaN());
    out[1] = hlo::select(b, bcast(b, all_finite(b, a), out[1].shape()), out[1], nan);
  }
  std::vector<Value> res{hlo::reshape(b, out[1], vals_t.shape)};
  if (want_v) res.push_back(hlo::reshape(b, out[2], vecs_t->shape));
  return res;
}

// linalg_eig(A) -> (eigenvalues, eigenvectors)
std::vector<Value> lower_linalg_eig(Ctx& c) {
  check_dtype(c.tensor("self"), "linalg_eig");
  // As on the CPU (whose LAPACK would loop forever), eig refuses non-finite input.
  if (c.tensor("self").type.numel() > 0)
    c.require(all_finite(c.b, c.tensor("self")),
              "torch.linalg.eig: input tensor should not contain infs or NaNs.");
  return eig(c, c.out(0), &c.out(1), "linalg_eig");
}

// _linalg_eigvals(A) -> eigenvalues (no eigenvectors, so Z is not accumulated).
std::vector<Value> lower_linalg_eigvals(Ctx& c) { return eig(c, c.out(0), nullptr, "linalg_eigvals"); }

}  // namespace

TPU_LOWERING("aten::linalg_eig", lower_linalg_eig, reads({"self"}));
TPU_LOWERING("aten::_linalg_eigvals", lower_linalg_eigvals, reads({"self"}));

}  // namespace tpu::lowering
