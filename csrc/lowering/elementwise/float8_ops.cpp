// Which ops run on float8 tensors, and how (lowering/core/float8.h).
//
// PyTorch's CPU kernels compute very little in float8: copies, views, indexing, creation and a
// handful of ops (mul, abs, mm, comparisons for equality, isnan). Everything else raises
// NotImplementedError naming the kernel and the dtype. torch_tpu follows that list instead of
// letting every lowering run on float8 values, which would give results CPU has no answer for.
//
// The few arithmetic ops CPU supports compute as c10 does: each float8 operand widened to
// float32 (exactly), the op in float32 (dot products accumulated in float32), one rounding back
// to float8 with c10's rounding (saturating for e4m3fn). XLA's float8 arithmetic would round
// with its own rules instead, so these lowerings see float32 values in place of float8 ones.
#include <set>
#include <string>

#include "lowering/core/float8.h"
#include "lowering/core/hlo.h"

namespace tpu::lowering::float8 {
namespace {

// Ops that only move or select whole values, and _scaled_mm (which widens its operands itself):
// their lowerings run on float8 values.
const std::set<std::string>& moves() {
  static const std::set<std::string> s = {
      "aten::_to_copy",
      "aten::clone",
      "aten::cat",
      "aten::stack",
      "aten::index.Tensor",
      "aten::index_select",
      "aten::index_put",
      "aten::_index_put_impl",
      "aten::_unsafe_index_put",
      "aten::masked_select",
      "aten::where.self",
      "aten::flip",
      "aten::roll",
      "aten::repeat",
      "aten::constant_pad_nd",
      "aten::fill.Scalar",
      "aten::fill.Tensor",
      "aten::zero",
      "aten::full",
      "aten::zeros",
      "aten::ones",
      "aten::eye",
      "aten::eye.m",
      "aten::narrow_copy",
      "aten::select_scatter",
      "aten::slice_scatter",
      "aten::diagonal_scatter",
      "aten::as_strided_scatter",
      "aten::diag",
      "aten::expand_copy",
      "aten::permute_copy",
      "aten::view_copy",
      "aten::slice_copy.Tensor",
      "aten::unfold_copy",
      "aten::_scaled_mm",
  };
  return s;
}

// Ops computed in float32 on widened float8 operands.
const std::set<std::string>& widened() {
  static const std::set<std::string> s = {
      "aten::mul.Tensor", "aten::abs",       "aten::mm",        "aten::addmm",    "aten::eq.Tensor",
      "aten::eq.Scalar",  "aten::ne.Tensor", "aten::ne.Scalar", "aten::isnan",    "aten::any",
      "aten::all",        "aten::any.dim",   "aten::all.dim",   "aten::any.dims", "aten::all.dims",
  };
  return s;
}

bool touches_float8(const Ctx& c) {
  for (const Arg& a : c.args) {
    if (a.kind == Arg::Kind::Tensor && a.value.valid() && ir::is_float8(a.value.dtype())) return true;
    for (const ir::Value& v : a.values)
      if (v.valid() && ir::is_float8(v.dtype())) return true;
  }
  for (const ir::Type& t : c.out_types)
    if (ir::is_float8(t.dtype)) return true;
  return false;
}

ir::Value widen(ir::Builder& b, const ir::Value& v) {
  return v.valid() && ir::is_float8(v.dtype()) ? hlo::convert(b, v, ir::DType::F32) : v;
}

}  // namespace

Support support(const std::string& lowering_name) {
  if (widened().count(lowering_name)) return Support::Widened;
  if (moves().count(lowering_name)) return Support::Native;
  return Support::None;
}

std::vector<ir::Value> lower(const Lowering& lowering, Ctx& c) {
  if (!touches_float8(c) || support(lowering.name) != Support::Widened) return lowering.fn(c);
  for (Arg& a : c.args) {
    if (a.kind == Arg::Kind::Tensor && a.value.valid()) a.value = widen(c.b, a.value);
    for (ir::Value& v : a.values)
      if (v.valid()) v = widen(c.b, v);
  }
  std::vector<ir::Type> wanted = c.out_types;
  for (ir::Type& t : c.out_types)
    if (ir::is_float8(t.dtype)) t.dtype = ir::DType::F32;
  std::vector<ir::Value> results = lowering.fn(c);
  c.out_types = wanted;
  for (size_t k = 0; k < results.size() && k < wanted.size(); ++k)
    results[k] = hlo::convert(c.b, results[k], wanted[k].dtype);
  return results;
}

}  // namespace tpu::lowering::float8
