// Matrix products: mm, bmm, mv, dot, vdot, their add-forms (addmm, baddbmm, addbmm, addmv,
// addr) and the cross product. linear and matmul are CompositeImplicitAutograd and decompose
// into these; backward is built from the same ops (mm of transposed views).
//
// Like PyTorch's CPU kernels, float16/bfloat16 products accumulate in float32 (dot_general with
// an f32 result) and the add-forms combine beta*self + alpha*product in float32 before a single
// rounding to the result dtype.
#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"
#include "lowering/core/precision.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// dot_general of `lhs` and `rhs` in the accumulation type of `out`.
Value product(Ctx& c, const Value& lhs, const Value& rhs, const std::vector<int64_t>& lb,
              const std::vector<int64_t>& rb, const std::vector<int64_t>& lc, const std::vector<int64_t>& rc,
              DType out) {
  DType acc = compute_dtype(out);
  // Operands already widened to the accumulation type (padded execution: lowering/core/dynamic.h)
  // stay there: their values are those of the 16-bit type.
  auto operand = [&](const Value& v) {
    return v.dtype() == acc && acc != out ? v : hlo::convert(c.b, v, out);
  };
  Value l = operand(lhs), r = operand(rhs);
  if (ir::is_complex(out) || ir::is_integral(out) || out == DType::Bool) {
    // XLA's dot for these types keeps the element type; booleans go through i32 (any nonzero
    // sum is true, as in PyTorch's boolean matmul).
    if (out == DType::Bool) {
      Value li = hlo::convert(c.b, l, DType::I32), ri = hlo::convert(c.b, r, DType::I32);
      Value p = hlo::dot_general(c.b, li, ri, lb, rb, lc, rc, DType::I32);
      return hlo::compare(c.b, p, hlo::full(c.b, p.type, 0), "NE");
    }
    return hlo::dot_general(c.b, l, r, lb, rb, lc, rc, out);
  }
  return hlo::dot_general(c.b, l, r, lb, rb, lc, rc, acc);
}

// beta * self + alpha * prod (prod already in the accumulation type), with PyTorch's rule that
// beta == 0 ignores `self` entirely (NaN/inf in it do not propagate). beta and alpha are runtime
// scalars, so the rule is a select rather than a compile-time branch.
// Reads the schema's `self`, `beta` and `alpha`.
Value add_form(Ctx& c, const Value& prod) {
  const ir::Type& out = c.out();
  DType acc = prod.dtype();
  Value p = hlo::broadcast_to(c.b, prod, out.shape);
  if (c.has("alpha")) {
    Value alpha = hlo::convert(c.b, c.tensor("alpha"), acc);
    if (acc == DType::Bool) {
      p = hlo::and_(c.b, p, hlo::broadcast_to(c.b, alpha, out.shape));
    } else {
      p = hlo::mul(c.b, hlo::broadcast_to(c.b, alpha, out.shape), p);
    }
  }
  Value self = hlo::broadcast_to(c.b, hlo::convert(c.b, c.tensor("self"), acc), out.shape);
  Value term = self;
  if (c.has("beta")) {
    Value beta = hlo::convert(c.b, c.tensor("beta"), acc);
    Value beta_b = hlo::broadcast_to(c.b, beta, out.shape);
    Value zero = hlo::full(c.b, ir::Type{acc, out.shape}, 0);
    if (acc == DType::Bool) {
      term = hlo::and_(c.b, self, beta_b);
    } else {
      Value scaled = hlo::mul(c.b, beta_b, self);
      Value beta_zero = hlo::compare(c.b, beta_b, zero, "EQ");
      term = hlo::select(c.b, beta_zero, zero, scaled);
    }
  }
  Value sum = acc == DType::Bool ? hlo::or_(c.b, term, p) : hlo::add(c.b, term, p);
  return hlo::convert(c.b, sum, out.dtype);
}

std::vector<Value> lower_mm(Ctx& c) {
  Value p = product(c, c.tensor("self"), c.tensor("mat2"), {}, {}, {1}, {0}, c.out().dtype);
  return {hlo::convert(c.b, p, c.out().dtype)};
}

std::vector<Value> lower_bmm(Ctx& c) {
  Value p = product(c, c.tensor("self"), c.tensor("mat2"), {0}, {0}, {2}, {1}, c.out().dtype);
  return {hlo::convert(c.b, p, c.out().dtype)};
}

std::vector<Value> lower_mv(Ctx& c) {
  Value p = product(c, c.tensor("self"), c.tensor("vec"), {}, {}, {1}, {0}, c.out().dtype);
  return {hlo::convert(c.b, p, c.out().dtype)};
}

std::vector<Value> lower_dot(Ctx& c) {
  Value p = product(c, c.tensor("self"), c.tensor("tensor"), {}, {}, {0}, {0}, c.out().dtype);
  return {hlo::convert(c.b, p, c.out().dtype)};
}

std::vector<Value> lower_vdot(Ctx& c) {
  Value p = product(c, conj(c.b, c.tensor("self")), c.tensor("other"), {}, {}, {0}, {0}, c.out().dtype);
  return {hlo::convert(c.b, p, c.out().dtype)};
}

std::vector<Value> lower_addmm(Ctx& c) {
  Value p = product(c, c.tensor("mat1"), c.tensor("mat2"), {}, {}, {1}, {0}, c.out().dtype);
  return {add_form(c, p)};
}

std::vector<Value> lower_baddbmm(Ctx& c) {
  Value p = product(c, c.tensor("batch1"), c.tensor("batch2"), {0}, {0}, {2}, {1}, c.out().dtype);
  return {add_form(c, p)};
}

// addbmm: CPU runs one addmm_ per batch entry into the
// result, rounding to the result dtype after each (bf16 loses a bit per batch entry); short
// floating batches do the same. Otherwise the batch is summed with the inner dimension.
std::vector<Value> lower_addbmm(Ctx& c) {
  const DType out = c.out().dtype;
  const Value& batch1 = c.tensor("batch1");
  const Value& batch2 = c.tensor("batch2");
  const int64_t batches = batch1.shape()[0];
  if (!ir::is_floating(out) || batches == 0 || batches > 64) {
    Value p = product(c, batch1, batch2, {}, {}, {0, 2}, {0, 1}, out);
    return {add_form(c, p)};
  }
  Value per_batch = product(c, batch1, batch2, {0}, {0}, {2}, {1}, out);
  const ir::Shape& ps = per_batch.shape();
  auto entry = [&](int64_t k) {
    return hlo::reshape(c.b, hlo::slice_dim(c.b, per_batch, 0, k, k + 1), {ps[1], ps[2]});
  };
  Value r = add_form(c, entry(0));
  const DType acc = per_batch.dtype();
  for (int64_t k = 1; k < batches; ++k) {
    Value p = entry(k);
    if (c.has("alpha"))
      p = hlo::mul(c.b, hlo::broadcast_to(c.b, hlo::convert(c.b, c.tensor("alpha"), acc), p.shape()), p);
    r = hlo::convert(c.b, hlo::add(c.b, hlo::convert(c.b, r, acc), p), out);
  }
  return {r};
}

std::vector<Value> lower_addmv(Ctx& c) {
  Value p = product(c, c.tensor("mat"), c.tensor("vec"), {}, {}, {1}, {0}, c.out().dtype);
  return {add_form(c, p)};
}

// addr for bf16/f16: CPU's kernel evaluates beta * self + alpha * vec1 * vec2 in the reduced
// dtype itself, each multiply and the add rounded (beta and alpha too), left to right.
Value addr_reduced(Ctx& c, const Value& a, const Value& b) {
  const ir::Type& out = c.out();
  DType acc = a.dtype();
  auto round = [&](const Value& v) { return precision::round_to(c.b, v, out.dtype); };
  auto scalar = [&](const char* name) {
    return hlo::broadcast_to(c.b, round(hlo::convert(c.b, c.tensor(name), acc)), out.shape);
  };
  Value p = a;
  if (c.has("alpha")) p = round(hlo::mul(c.b, scalar("alpha"), p));
  p = round(hlo::mul(c.b, p, b));
  Value self = hlo::broadcast_to(c.b, hlo::convert(c.b, c.tensor("self"), acc), out.shape);
  Value term = self;
  if (c.has("beta")) {
    Value beta = scalar("beta");
    Value zero = hlo::full(c.b, ir::Type{acc, out.shape}, 0);
    term = hlo::select(c.b, hlo::compare(c.b, beta, zero, "EQ"), zero, round(hlo::mul(c.b, beta, self)));
  }
  return hlo::convert(c.b, hlo::add(c.b, term, p), out.dtype);
}

// addr: the outer product is an elementwise product.
std::vector<Value> lower_addr(Ctx& c) {
  const ir::Type& out = c.out();
  DType acc = compute_dtype(out.dtype);
  Value v1 = hlo::convert(c.b, c.tensor("vec1"), acc), v2 = hlo::convert(c.b, c.tensor("vec2"), acc);
  ir::Shape shape{v1.shape()[0], v2.shape()[0]};
  Value a = hlo::broadcast_in_dim(c.b, v1, shape, {0});
  Value b = hlo::broadcast_in_dim(c.b, v2, shape, {1});
  if (precision::is_reduced(out.dtype))
    return {addr_reduced(c, hlo::broadcast_to(c.b, a, out.shape), hlo::broadcast_to(c.b, b, out.shape))};
  Value p = acc == DType::Bool ? hlo::and_(c.b, a, b) : hlo::mul(c.b, a, b);
  return {add_form(c, p)};
}

// linalg_cross: the 3-vector cross product along `dim` (both broadcast to
// the result shape).
std::vector<Value> lower_linalg_cross(Ctx& c) {
  const ir::Type& out = c.out();
  const int dim = static_cast<int>(hlo::wrap_dim(c.int_arg("dim"), static_cast<int64_t>(out.shape.size())));
  Value a = hlo::broadcast_to(c.b, hlo::convert(c.b, c.tensor("self"), out.dtype), out.shape);
  Value o = hlo::broadcast_to(c.b, hlo::convert(c.b, c.tensor("other"), out.dtype), out.shape);
  auto at = [&](const Value& v, int64_t k) { return hlo::slice_dim(c.b, v, dim, k, k + 1); };
  auto term = [&](int64_t i, int64_t j) {
    return hlo::sub(c.b, hlo::mul(c.b, at(a, i), at(o, j)), hlo::mul(c.b, at(a, j), at(o, i)));
  };
  return {hlo::concatenate(c.b, {term(1, 2), term(2, 0), term(0, 1)}, dim)};
}

}  // namespace

TPU_LOWERING("aten::mm", lower_mm, reads({"self", "mat2"}));
TPU_LOWERING("aten::bmm", lower_bmm, reads({"self", "mat2"}));
TPU_LOWERING("aten::mv", lower_mv, reads({"self", "vec"}));
TPU_LOWERING("aten::dot", lower_dot, reads({"self", "tensor"}));
TPU_LOWERING("aten::vdot", lower_vdot, reads({"self", "other"}));
TPU_LOWERING("aten::addmm", lower_addmm, reads({"self", "mat1", "mat2", "beta", "alpha"}));
TPU_LOWERING("aten::baddbmm", lower_baddbmm, reads({"self", "batch1", "batch2", "beta", "alpha"}));
TPU_LOWERING("aten::addbmm", lower_addbmm, reads({"self", "batch1", "batch2", "beta", "alpha"}));
TPU_LOWERING("aten::addmv", lower_addmv, reads({"self", "mat", "vec", "beta", "alpha"}));
TPU_LOWERING("aten::addr", lower_addr, reads({"self", "vec1", "vec2", "beta", "alpha"}));
TPU_LOWERING("aten::linalg_cross", lower_linalg_cross, reads({"self", "other", "dim"}));

// Padded execution: zeros in the padding of both factors add nothing to a contraction over a
// dynamic dimension (and a NaN in the padding of one cannot reach the sum). 16-bit factors are
// multiplied as float32 (exactly what a bf16 dot accumulating in float32 computes).
TPU_PADDED("aten::mm", masked({{"self", Neutral::Zero}, {"mat2", Neutral::Zero}}, true));
TPU_PADDED("aten::bmm", masked({{"self", Neutral::Zero}, {"mat2", Neutral::Zero}}, true));
TPU_PADDED("aten::mv", masked({{"self", Neutral::Zero}, {"vec", Neutral::Zero}}, true));
TPU_PADDED("aten::dot", masked({{"self", Neutral::Zero}, {"tensor", Neutral::Zero}}, true));
TPU_PADDED("aten::addmm", masked({{"mat1", Neutral::Zero}, {"mat2", Neutral::Zero}}, true));
TPU_PADDED("aten::baddbmm", masked({{"batch1", Neutral::Zero}, {"batch2", Neutral::Zero}}, true));
TPU_PADDED("aten::addbmm", masked({{"batch1", Neutral::Zero}, {"batch2", Neutral::Zero}}, true));
TPU_PADDED("aten::addmv", masked({{"mat", Neutral::Zero}, {"vec", Neutral::Zero}}, true));

}  // namespace tpu::lowering
