// Reflection and replication padding (F.pad modes "reflect" / "replicate"):
// reflection_pad{1,2,3}d, replication_pad{1,2,3}d and their backward ops.
//
// `padding` lists (left, right) pairs starting at the last dimension. Output position j of a
// padded dimension of size W reads input u = j - left, mapped into [0, W): reflection mirrors
// around the border elements (-u, 2(W-1) - u), replication clamps. A negative pad crops (what
// CPU's index formula amounts to), and the meta kernel has already checked the sizes.
//
// Each dimension is slices and a concatenate (no gather): the kept core, plus for a positive
// pad the mirrored run next to the border (reflect) or the border element repeated (replicate).
// The backward is the transpose: the core's gradient, plus each border run's gradient reversed
// (reflect) or summed (replicate), zero-padded into place and added.
#include <algorithm>

#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// x with dimension d padded by (lo, hi).
Value pad_dim(Builder& b, const Value& x, int d, int64_t lo, int64_t hi, bool reflect) {
  const int64_t w = x.dim(d);
  std::vector<Value> parts;
  auto border = [&](int64_t at, int64_t n) {  // replicate: x[at] repeated n times
    Value e = hlo::slice_dim(b, x, d, at, at + 1);
    Shape s = x.shape();
    s[d] = n;
    std::vector<int64_t> dims;
    for (int i = 0; i < x.rank(); ++i) dims.push_back(i);
    return hlo::broadcast_in_dim(b, e, s, dims);
  };
  if (lo > 0)
    parts.push_back(reflect ? hlo::reverse(b, hlo::slice_dim(b, x, d, 1, lo + 1), {d}) : border(0, lo));
  parts.push_back(hlo::slice_dim(b, x, d, std::max<int64_t>(0, -lo), w - std::max<int64_t>(0, -hi)));
  if (hi > 0)
    parts.push_back(reflect ? hlo::reverse(b, hlo::slice_dim(b, x, d, w - 1 - hi, w - 1), {d})
                            : border(w - 1, hi));
  return parts.size() == 1 ? parts[0] : hlo::concatenate(b, parts, d);
}

// `part` (dimension d of size n) zero-padded to size w, placed at offset `at`.
Value place(Builder& b, const Value& part, int d, int64_t at, int64_t w) {
  std::vector<int64_t> lo(part.rank(), 0), hi(part.rank(), 0);
  lo[d] = at;
  hi[d] = w - at - part.dim(d);
  return hlo::pad(b, part, hlo::constant(b, part.dtype(), 0), lo, hi);
}

// The transpose of pad_dim: g (dimension d of the padded size) folded back to size w.
Value pad_dim_backward(Builder& b, const Value& g, int d, int64_t w, int64_t lo, int64_t hi, bool reflect) {
  const int64_t n = g.dim(d);
  const int64_t core_lo = std::max<int64_t>(lo, 0), core_hi = n - std::max<int64_t>(hi, 0);
  Value gx = place(b, hlo::slice_dim(b, g, d, core_lo, core_hi), d, std::max<int64_t>(0, -lo), w);
  auto sum_run = [&](const Value& run) {
    Shape s = run.shape();
    s[d] = 1;
    return hlo::reshape(b, reduce::sum(b, run, {d}), s);
  };
  if (lo > 0) {
    Value run = hlo::slice_dim(b, g, d, 0, lo);
    gx = hlo::add(b, gx,
                  reflect ? place(b, hlo::reverse(b, run, {d}), d, 1, w) : place(b, sum_run(run), d, 0, w));
  }
  if (hi > 0) {
    Value run = hlo::slice_dim(b, g, d, n - hi, n);
    gx = hlo::add(b, gx,
                  reflect ? place(b, hlo::reverse(b, run, {d}), d, w - 1 - hi, w)
                          : place(b, sum_run(run), d, w - 1, w));
  }
  return gx;
}

// {reflection,replication}_pad{1,2,3}d(self, padding)
template <bool Reflect>
std::vector<Value> lower_pad(Ctx& c) {
  Value x = c.tensor("self");
  const std::vector<int64_t>& p = c.ints("padding");
  for (size_t i = 0; i < p.size() / 2; ++i)
    x = pad_dim(c.b, x, x.rank() - 1 - static_cast<int>(i), p[2 * i], p[2 * i + 1], Reflect);
  return {x};
}

// {reflection,replication}_pad{1,2,3}d_backward(grad_output, self, padding)
template <bool Reflect>
std::vector<Value> lower_pad_backward(Ctx& c) {
  Builder& b = c.b;
  const DType out_dtype = c.out().dtype;
  Value g = hlo::convert(b, c.tensor("grad_output"), compute_dtype(out_dtype));
  const Value& self = c.tensor("self");
  const std::vector<int64_t>& p = c.ints("padding");
  for (size_t i = 0; i < p.size() / 2; ++i) {
    int d = g.rank() - 1 - static_cast<int>(i);
    g = pad_dim_backward(b, g, d, self.dim(d), p[2 * i], p[2 * i + 1], Reflect);
  }
  return {hlo::convert(b, g, out_dtype)};
}

}  // namespace

TPU_LOWERING("aten::reflection_pad1d", lower_pad<true>, reads({"self", "padding"}));
TPU_LOWERING("aten::reflection_pad2d", lower_pad<true>, reads({"self", "padding"}));
TPU_LOWERING("aten::reflection_pad3d", lower_pad<true>, reads({"self", "padding"}));
TPU_LOWERING("aten::replication_pad1d", lower_pad<false>, reads({"self", "padding"}));
TPU_LOWERING("aten::replication_pad2d", lower_pad<false>, reads({"self", "padding"}));
TPU_LOWERING("aten::replication_pad3d", lower_pad<false>, reads({"self", "padding"}));
TPU_LOWERING("aten::reflection_pad1d_backward", lower_pad_backward<true>,
             reads({"grad_output", "self", "padding"}));
TPU_LOWERING("aten::reflection_pad2d_backward", lower_pad_backward<true>,
             reads({"grad_output", "self", "padding"}));
TPU_LOWERING("aten::reflection_pad3d_backward", lower_pad_backward<true>,
             reads({"grad_output", "self", "padding"}));
TPU_LOWERING("aten::replication_pad1d_backward", lower_pad_backward<false>,
             reads({"grad_output", "self", "padding"}));
TPU_LOWERING("aten::replication_pad2d_backward", lower_pad_backward<false>,
             reads({"grad_output", "self", "padding"}));
TPU_LOWERING("aten::replication_pad3d_backward", lower_pad_backward<false>,
             reads({"grad_output", "self", "padding"}));

}  // namespace tpu::lowering
