// _ctc_loss and _ctc_loss_backward: the CTC forward (alpha) and backward (beta) recursions in
// log space over time, each a counted stablehlo.while over the batch at once.
//
// Every batch item n uses the extended target l'[n] of length S' = 2 * S_max + 1 (blank,
// target 1, blank, target 2, ..., blank), padded to the longest target; positions past
// 2 * target_lengths[n] and times past input_lengths[n] are masked. The input and target
// lengths are int[] arguments, so they are compile-time constants here.
#include <cmath>

#include "lowering/core/index_util.h"
#include "lowering/core/linalg_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// A [rows, 1]-shaped column built from per-row compile-time integers, broadcast to `shape`
// along dimension `dim` (so every other dimension repeats it).
Value per_row(ir::Builder& b, const std::vector<int64_t>& v, const Shape& shape, int64_t dim) {
  std::vector<Value> parts;
  for (int64_t x : v) parts.push_back(hlo::full(b, Type{DType::I64, {1}}, static_cast<double>(x)));
  Value col = hlo::concatenate(b, parts, 0);
  return hlo::broadcast_in_dim(b, col, shape, {dim});
}

Value neg_inf(ir::Builder& b, const Type& t) { return hlo::full(b, t, -INFINITY); }

// log(exp(a) + exp(b) + exp(c)), -inf when all are -inf.
Value logsumexp3(ir::Builder& b, const Value& x, const Value& y, const Value& z) {
  Value m = hlo::max(b, hlo::max(b, x, y), z);
  Value finite = hlo::compare(b, m, neg_inf(b, m.type), "NE");
  Value safe_m = hlo::select(b, finite, m, hlo::full(b, m.type, 0));
  auto e = [&](const Value& v) { return hlo::exp(b, hlo::sub(b, v, safe_m)); };
  Value s = hlo::add(b, hlo::add(b, e(x), e(y)), e(z));
  Value r = hlo::add(b, safe_m, hlo::log(b, s));
  return hlo::select(b, finite, r, m);
}

// v [N, S'] shifted along s by k (> 0: towards higher s, < 0: towards lower), -inf filled.
Value shift(ir::Builder& b, const Value& v, int64_t k) {
  const int64_t n = v.shape()[0], s = v.shape()[1];
  if (std::abs(k) >= s) return neg_inf(b, v.type);
  Value fill = neg_inf(b, Type{v.dtype(), {n, std::abs(k)}});
  if (k > 0) return hlo::concatenate(b, {fill, hlo::slice_dim(b, v, 1, 0, s - k)}, 1);
  return hlo::concatenate(b, {hlo::slice_dim(b, v, 1, -k, s), fill}, 1);
}

struct Problem {
  int64_t t = 0, n = 0, c = 0, sp = 0;  // time, batch, classes, extended target length
  bool batched = true;
  Value lp;       // log_probs [T, N, C] in the compute dtype
  Value ext;      // i64 [N, S']: l'
  Value emit;     // [T, N, S']: lp[t, n, l'[n, s]]
  Value valid;    // i1 [N, S']: s <= 2 * target_lengths[n]
  Value skip;     // i1 [N, S']: the s-2 -> s transition is allowed
  Value time_ok;  // i1 [T, N]: t < input_lengths[n]
  std::vector<int64_t> in_len, tg_len;
};

Problem setup(Ctx& c, std::string_view lp_arg, std::string_view tg_arg, std::string_view il_arg,
              std::string_view tl_arg, std::string_view blank_arg, int64_t sp, DType dtype) {
  Problem p;
  Value lp = hlo::convert(c.b, c.tensor(lp_arg), dtype);
  p.batched = lp.rank() == 3;
  if (!p.batched) lp = hlo::reshape(c.b, lp, {lp.shape()[0], 1, lp.shape()[1]});
  p.lp = lp;
  p.t = lp.shape()[0];
  p.n = lp.shape()[1];
  p.c = lp.shape()[2];
  p.sp = sp;
  p.in_len = c.ints(il_arg);
  p.tg_len = c.ints(tl_arg);
  const int64_t blank = c.int_arg(blank_arg);
  const int64_t smax = (sp - 1) / 2;

  // Padded targets [N, max(S_max, 1)]: a 2-D targets tensor as is, concatenated 1-D targets
  // gathered from their (static) offsets.
  Value tg = hlo::convert(c.b, c.tensor(tg_arg), DType::I64);
  const int64_t w = std::max<int64_t>(smax, 1);
  Value padded;
  if (tg.rank() == 2 || !p.batched) {
    if (tg.rank() == 1) tg = hlo::reshape(c.b, tg, {1, tg.shape()[0]});
    padded =
        tg.shape()[1] >= w
            ? hlo::slice_dim(c.b, tg, 1, 0, w)
            : hlo::concatenate(c.b, {tg, hlo::full(c.b, Type{DType::I64, {p.n, w - tg.shape()[1]}}, 0)}, 1);
  } else {
    const int64_t total = tg.shape()[0];
    std::vector<int64_t> offsets;
    int64_t acc = 0;
    for (int64_t len : p.tg_len) offsets.push_back(acc), acc += len;
    Value at =
        hlo::add(c.b, per_row(c.b, offsets, {p.n, w}, 0), hlo::iota(c.b, Type{DType::I64, {p.n, w}}, 1));
    if (total == 0) {
      padded = hlo::full(c.b, Type{DType::I64, {p.n, w}}, 0);
    } else {
      at = hlo::min(c.b, at, hlo::full(c.b, at.type, static_cast<double>(total - 1)));
      idx::GatherDims d;
      d.collapsed_slice_dims = {0};
      d.start_index_map = {0};
      d.index_vector_dim = 2;
      d.slice_sizes = {1};
      padded = idx::gather(c.b, tg, hlo::reshape(c.b, at, {p.n, w, 1}), d);
    }
  }
  Type ns{DType::I64, {p.n, sp}};
  Value s = hlo::iota(c.b, ns, 1);
  Value one = hlo::full(c.b, ns, 1), two = hlo::full(c.b, ns, 2);
  Value odd = hlo::compare(c.b, hlo::rem(c.b, s, two), one, "EQ");
  Value k = hlo::min(c.b, hlo::div(c.b, s, two), hlo::full(c.b, ns, static_cast<double>(w - 1)));
  Value label = idx::gather_elements(c.b, padded, k, 1);
  p.ext = hlo::select(c.b, odd, label, hlo::full(c.b, ns, static_cast<double>(blank)));
  std::vector<int64_t> last;
  for (int64_t len : p.tg_len) last.push_back(2 * len);
  p.valid = hlo::compare(c.b, s, per_row(c.b, last, {p.n, sp}, 0), "LE");
  Value not_blank = hlo::compare(c.b, p.ext, hlo::full(c.b, ns, static_cast<double>(blank)), "NE");
  Value ext2 = hlo::concatenate(c.b,
                                {hlo::full(c.b, Type{DType::I64, {p.n, 2}}, -1),
                                 hlo::slice_dim(c.b, p.ext, 1, 0, sp - 2 > 0 ? sp - 2 : 0)},
                                1);
  if (sp < 2) ext2 = hlo::full(c.b, ns, -1);
  p.skip = hlo::and_(c.b, not_blank, hlo::compare(c.b, p.ext, ext2, "NE"));
  Shape tns{p.t, p.n, sp};
  p.emit = idx::gather_elements(c.b, lp, hlo::broadcast_in_dim(c.b, p.ext, tns, {1, 2}), 2);
  p.time_ok = hlo::compare(c.b, hlo::iota(c.b, Type{DType::I64, {p.t, p.n}}, 0),
                           per_row(c.b, p.in_len, {p.t, p.n}, 1), "LT");
  return p;
}

// log_alpha [T, N, S'] (times past input_lengths hold whatever the recursion gave).
Value forward_alpha(ir::Builder& b, const Problem& p) {
  Type ns{p.emit.dtype(), {p.n, p.sp}};
  Value e0 = hlo::reshape(b, hlo::slice_dim(b, p.emit, 0, 0, 1), {p.n, p.sp});
  Value s = hlo::iota(b, Type{DType::I64, {p.n, p.sp}}, 1);
  Value first = hlo::and_(b, p.valid, hlo::compare(b, s, hlo::full(b, s.type, 1), "LE"));
  Value a0 = hlo::select(b, first, e0, neg_inf(b, ns));
  Value all = hlo::full(b, p.emit.type, -INFINITY);
  Value zero = hlo::constant(b, DType::I64, 0);
  all = hlo::dynamic_update_slice(b, all, hlo::reshape(b, a0, {1, p.n, p.sp}), {zero, zero, zero});
  if (p.t <= 1) return all;
  auto body = [&](ir::Builder& rb, const Value& i, const std::vector<Value>& st) -> std::vector<Value> {
    const Value &prev = st[0], &acc = st[1], &emit = st[2], &valid = st[3], &skip = st[4];
    Value t = hlo::add(rb, i, hlo::constant(rb, DType::I64, 1));
    Value z = hlo::constant(rb, DType::I64, 0);
    Value e = hlo::reshape(rb, hlo::dynamic_slice(rb, emit, {t, z, z}, {1, p.n, p.sp}), {p.n, p.sp});
    Value a2 = hlo::select(rb, skip, shift(rb, prev, 2), neg_inf(rb, prev.type));
    Value a = hlo::add(rb, e, logsumexp3(rb, prev, shift(rb, prev, 1), a2));
    a = hlo::select(rb, valid, a, neg_inf(rb, a.type));
    Value upd = hlo::dynamic_update_slice(rb, acc, hlo::reshape(rb, a, {1, p.n, p.sp}), {t, z, z});
    return {a, upd, emit, valid, skip};
  };
  return linalg::fori_loop(b, p.t - 1, {a0, all, p.emit, p.valid, p.skip}, body)[1];
}

// Per batch item: -log(alpha[T_n - 1, 2 L_n] + alpha[T_n - 1, 2 L_n - 1]).
Value neg_log_likelihood(ir::Builder& b, const Problem& p, const Value& alpha) {
  std::vector<Value> parts;
  for (int64_t n = 0; n < p.n; ++n) {
    const int64_t tn = p.in_len[n], l = p.tg_len[n];
    Value row = tn > 0 ? hlo::reshape(b, hlo::slice(b, alpha, {tn - 1, n, 0}, {tn, n + 1, p.sp}), {p.sp})
                       : neg_inf(b, Type{alpha.dtype(), {p.sp}});
    Value end = hlo::slice_dim(b, row, 0, 2 * l, 2 * l + 1);
    Value before = l > 0 ? hlo::slice_dim(b, row, 0, 2 * l - 1, 2 * l) : neg_inf(b, end.type);
    if (tn == 0) end = l == 0 ? hlo::full(b, end.type, 0) : neg_inf(b, end.type);  // empty input
    parts.push_back(hlo::neg(b, logsumexp3(b, end, before, neg_inf(b, end.type))));
  }
  return hlo::concatenate(b, parts, 0);
}

// _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)
//   -> (neg_log_likelihood [N], log_alpha [N, T, S'])
std::vector<Value> lower_ctc_loss(Ctx& c) {
  const int64_t sp = c.out(1).shape.back();
  Problem p =
      setup(c, "log_probs", "targets", "input_lengths", "target_lengths", "blank", sp, c.out(0).dtype);
  Value alpha = forward_alpha(c.b, p);
  Value nll = neg_log_likelihood(c.b, p, alpha);
  return {hlo::reshape(c.b, nll, c.out(0).shape),
          hlo::reshape(c.b, hlo::transpose(c.b, alpha, {1, 0, 2}), c.out(1).shape)};
}

// _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
// blank, zero_infinity): d nll / d log_probs[t, n, c] =
//   exp(lp) - exp(logsumexp_{s: l'_s = c}(alpha_t(s) + beta_t(s)) + nll - lp),
// times grad[n]; zero past input_lengths[n] and, with zero_infinity, for infinite losses.
std::vector<Value> lower_ctc_loss_backward(Ctx& c) {
  const Value& la_in = c.tensor("log_alpha");
  const int64_t sp = la_in.shape().back();
  // alpha and beta stay in the input dtype, as on CPU (whose gradient is consistent with its
  // own rounded log_alpha and loss); the final log-sum and the difference of two nearly equal
  // exponentials are done in f64.
  Problem p = setup(c, "log_probs", "targets", "input_lengths", "target_lengths", "blank", sp,
                    c.tensor("log_probs").dtype());
  const bool zero_infinity = c.bool_arg("zero_infinity");
  const DType dt = p.lp.dtype();
  Value alpha = hlo::convert(c.b, la_in, dt);
  if (alpha.rank() == 2) alpha = hlo::reshape(c.b, alpha, {1, alpha.shape()[0], alpha.shape()[1]});
  alpha = hlo::transpose(c.b, alpha, {1, 0, 2});  // [T, N, S']
  Value nll = hlo::convert(c.b, hlo::reshape(c.b, c.tensor("neg_log_likelihood"), {p.n}), DType::F64);

  // beta: started at t = T_n - 1 with the last two positions, -inf after it.
  Type ns{dt, {p.n, p.sp}};
  Value s = hlo::iota(c.b, Type{DType::I64, {p.n, p.sp}}, 1);
  std::vector<int64_t> last, tlast;
  for (int64_t n = 0; n < p.n; ++n) last.push_back(2 * p.tg_len[n]), tlast.push_back(p.in_len[n] - 1);
  Value last_s = per_row(c.b, last, {p.n, p.sp}, 0);
  Value ends = hlo::and_(c.b, hlo::compare(c.b, s, last_s, "LE"),
                         hlo::compare(c.b, s, hlo::sub(c.b, last_s, hlo::full(c.b, s.type, 1)), "GE"));
  Value t_last = per_row(c.b, tlast, {p.n, p.sp}, 0);
  Value skip_up = hlo::concatenate(c.b,
                                   {hlo::slice_dim(c.b, p.skip, 1, std::min<int64_t>(2, p.sp), p.sp),
                                    hlo::full(c.b, Type{DType::Bool, {p.n, std::min<int64_t>(2, p.sp)}}, 0)},
                                   1);
  Value all = hlo::full(c.b, p.emit.type, -INFINITY);
  auto body = [&](ir::Builder& rb, const Value& i, const std::vector<Value>& st) -> std::vector<Value> {
    const Value &next = st[0], &acc = st[1], &emit = st[2], &valid = st[3], &skip = st[4], &end_ok = st[5],
                &tl = st[6];
    Value t = hlo::sub(rb, hlo::constant(rb, DType::I64, p.t - 1), i);
    Value z = hlo::constant(rb, DType::I64, 0);
    Value e = hlo::reshape(rb, hlo::dynamic_slice(rb, emit, {t, z, z}, {1, p.n, p.sp}), {p.n, p.sp});
    Value b2 = hlo::select(rb, skip, shift(rb, next, -2), neg_inf(rb, next.type));
    Value rec = hlo::add(rb, e, logsumexp3(rb, next, shift(rb, next, -1), b2));
    Value tb = hlo::broadcast_in_dim(rb, t, tl.shape(), {});
    Value init = hlo::select(rb, end_ok, e, neg_inf(rb, e.type));
    Value bt = hlo::select(rb, hlo::compare(rb, tb, tl, "EQ"), init,
                           hlo::select(rb, hlo::compare(rb, tb, tl, "GT"), neg_inf(rb, e.type), rec));
    bt = hlo::select(rb, valid, bt, neg_inf(rb, bt.type));
    Value upd = hlo::dynamic_update_slice(rb, acc, hlo::reshape(rb, bt, {1, p.n, p.sp}), {t, z, z});
    return {bt, upd, emit, valid, skip, end_ok, tl};
  };
  Value beta =
      linalg::fori_loop(c.b, p.t, {neg_inf(c.b, ns), all, p.emit, p.valid, skip_up, ends, t_last}, body)[1];

  // logsumexp over the positions of each class: exp relative to the per-(t, n) maximum, summed
  // into classes with a one-hot matmul.
  Value v = hlo::convert(c.b, hlo::add(c.b, alpha, beta), DType::F64);  // [T, N, S']
  const DType hi = DType::F64;
  Value m = hlo::reduce(c.b, v, hlo::constant(c.b, hi, -INFINITY), {2}, hlo::Combiner::Max);
  Value finite = hlo::compare(c.b, m, neg_inf(c.b, m.type), "NE");
  m = hlo::select(c.b, finite, m, hlo::full(c.b, m.type, 0));
  Value ev = hlo::exp(c.b, hlo::sub(c.b, v, hlo::broadcast_in_dim(c.b, m, v.shape(), {0, 1})));
  Value cls = hlo::iota(c.b, Type{DType::I64, {p.n, p.sp, p.c}}, 2);
  Value onehot = hlo::convert(
      c.b,
      hlo::and_(c.b, hlo::compare(c.b, hlo::broadcast_in_dim(c.b, p.ext, cls.shape(), {0, 1}), cls, "EQ"),
                hlo::broadcast_in_dim(c.b, p.valid, cls.shape(), {0, 1})),
      hi);
  // [N, T, S'] x [N, S', C] -> [N, T, C]
  Value sums = hlo::dot_general(c.b, hlo::transpose(c.b, ev, {1, 0, 2}), onehot, {0}, {0}, {2}, {1}, hi);
  sums = hlo::transpose(c.b, sums, {1, 0, 2});  // [T, N, C]
  Shape tnc{p.t, p.n, p.c};
  Value lcab = hlo::add(c.b, hlo::log(c.b, sums), hlo::broadcast_in_dim(c.b, m, tnc, {0, 1}));
  Value nll_b = hlo::broadcast_in_dim(c.b, nll, tnc, {1});
  Value lp = hlo::convert(c.b, p.lp, hi);
  Value grad = hlo::sub(c.b, hlo::exp(c.b, lp), hlo::exp(c.b, hlo::sub(c.b, hlo::add(c.b, lcab, nll_b), lp)));
  Value gout = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("grad"), hi), {p.n});
  grad = hlo::mul(c.b, grad, hlo::broadcast_in_dim(c.b, gout, tnc, {1}));
  Value keep = hlo::broadcast_in_dim(c.b, p.time_ok, tnc, {0, 1});
  if (zero_infinity) {
    Value fin = hlo::compare(c.b, nll, hlo::full(c.b, nll.type, INFINITY), "NE");
    keep = hlo::and_(c.b, keep, hlo::broadcast_in_dim(c.b, fin, tnc, {1}));
  }
  grad = hlo::select(c.b, keep, grad, hlo::full(c.b, grad.type, 0));
  return {hlo::reshape(c.b, hlo::convert(c.b, grad, c.out().dtype), c.out().shape)};
}

}  // namespace

TPU_LOWERING("aten::_ctc_loss", lower_ctc_loss,
             reads({"log_probs", "targets", "input_lengths", "target_lengths", "blank"}));
TPU_LOWERING("aten::_ctc_loss_backward", lower_ctc_loss_backward,
             reads({"grad", "log_probs", "targets", "input_lengths", "target_lengths", "neg_log_likelihood",
                    "log_alpha", "blank", "zero_infinity"}));

}  // namespace tpu::lowering
