// fractional_max_pool2d / fractional_max_pool3d and their backward. The op is deterministic
// given `random_samples` [N, C, D] (F.fractional_max_pool* draws them with torch.rand): each
// plane's window starts along a dimension follow CPU's generate_intervals,
//   start[i] = int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1),
// the last one pinned to in - k, computed in the input's dtype as CPU's scalar_t arithmetic
// does (so bf16/f16 round where CPU rounds). The samples are indexed [0] = W, [1] = H in 2d and
// [0] = T, [1] = H, [2] = W in 3d, as CPU reads them. Each output is the maximum of its window,
// scanned in row-major order with CPU's rule (a larger value, or any NaN, replaces the
// current one); indices are flat positions within the input plane. The backward scatters the
// gradient to those indices, adding where windows overlap.
#include <cmath>

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/index_util.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// Window starts [N, C, out] along one dimension from the samples u [N, C] (dtype T).
Value interval_starts(Builder& b, const Value& u, int64_t in, int64_t out, int64_t k) {
  const int64_t n = u.dim(0), c = u.dim(1);
  Type it{DType::I64, {n, c, out}};
  Value last = hlo::full(b, it, static_cast<double>(in - k));
  if (out <= 1) return last;
  const DType t = u.dtype();
  Value alpha = hlo::div(b, hlo::constant(b, t, static_cast<double>(in - k)),
                         hlo::constant(b, t, static_cast<double>(out - 1)));
  Value ub = hlo::broadcast_in_dim(b, u, {n, c, out}, {0, 1});
  Value i = hlo::convert(b, hlo::iota(b, it, 2), t);
  Value a = hlo::broadcast_to(b, alpha, {n, c, out});
  Value first = hlo::convert(b, hlo::mul(b, hlo::add(b, i, ub), a), DType::I64);
  Value offset = hlo::convert(b, hlo::mul(b, ub, a), DType::I64);
  Value starts = hlo::sub(b, first, offset);
  return hlo::select(
      b, hlo::compare(b, hlo::iota(b, it, 2), hlo::full(b, it, static_cast<double>(out - 1)), "EQ"), last,
      starts);
}

// (values, indices) of fractional_max_poolNd(self, kernel_size, output_size, random_samples).
std::vector<Value> lower_fractional_max_pool(Ctx& c) {
  Builder& b = c.b;
  Value x = c.tensor("self");
  const std::vector<int64_t>& kernel = c.ints("kernel_size");
  const std::vector<int64_t>& out_size = c.ints("output_size");
  const int d = static_cast<int>(kernel.size());
  const bool batched = x.rank() == d + 2;
  if (!batched)
    x = hlo::reshape(b, x, [&] {
      Shape s{1};
      s.insert(s.end(), x.shape().begin(), x.shape().end());
      return s;
    }());
  const int64_t n = x.dim(0), ch = x.dim(1);
  Shape in_sp(x.shape().begin() + 2, x.shape().end());
  Value samples = hlo::convert(b, c.tensor("random_samples"), x.dtype());
  // Sample index per spatial dimension: 2d reads [1] for H and [0] for W; 3d reads T, H, W in order.
  std::vector<int64_t> sample_of = d == 2 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0, 1, 2};
  int64_t plane = 1, out_plane = 1;
  for (int k = 0; k < d; ++k) plane *= in_sp[k], out_plane *= out_size[k];
  Shape grid{n, ch};
  grid.insert(grid.end(), out_size.begin(), out_size.end());
  // Flat start position of each window: sum over dims of start_k * stride_k, as [N, C, out...].
  Type it{DType::I64, grid};
  Value base = hlo::full(b, it, 0);
  std::vector<int64_t> stride(d, 1);
  for (int k = d - 2; k >= 0; --k) stride[k] = stride[k + 1] * in_sp[k + 1];
  for (int k = 0; k < d; ++k) {
    Value u = hlo::reshape(b, hlo::slice_dim(b, samples, 2, sample_of[k], sample_of[k] + 1), {n, ch});
    Value s = interval_starts(b, u, in_sp[k], out_size[k], kernel[k]);
    s = hlo::broadcast_in_dim(b, s, grid, {0, 1, 2 + k});
    base = hlo::add(b, base, hlo::mul(b, s, hlo::full(b, it, static_cast<double>(stride[k]))));
  }
  base = hlo::reshape(b, base, {n, ch, out_plane});
  Value flat = hlo::reshape(b, x, {n, ch, plane});
  Value best = hlo::full(b, Type{x.dtype(), {n, ch, out_plane}}, -INFINITY);
  Value best_at = base;
  int64_t window = 1;
  for (int64_t k : kernel) window *= k;
  for (int64_t w = 0; w < window; ++w) {
    int64_t offset = 0, rest = w;
    for (int k = d - 1; k >= 0; --k) {
      offset += (rest % kernel[k]) * stride[k];
      rest /= kernel[k];
    }
    Value at = hlo::add(b, base, hlo::full(b, base.type, static_cast<double>(offset)));
    Value v = idx::gather_elements(b, flat, at, 2);
    Value take = ew::or_(b, hlo::compare(b, v, best, "GT"), ew::is_nan(b, v));
    best = hlo::select(b, take, v, best);
    best_at = hlo::select(b, take, at, best_at);
  }
  return {hlo::reshape(b, best, c.out(0).shape), hlo::reshape(b, best_at, c.out(1).shape)};
}

// fractional_max_poolNd_backward(grad_output, self, kernel_size, output_size, indices)
std::vector<Value> lower_fractional_max_pool_backward(Ctx& c) {
  Builder& b = c.b;
  const ir::Type& out = c.out();
  const int d = static_cast<int>(c.ints("kernel_size").size());
  const bool batched = out.rank() == d + 2;
  const int64_t n = batched ? out.shape[0] : 1, ch = out.shape[batched ? 1 : 0];
  const int64_t plane = out.numel() / std::max<int64_t>(n * ch, 1);
  Value g = c.tensor("grad_output");
  const int64_t out_plane = g.type.numel() / std::max<int64_t>(n * ch, 1);
  g = hlo::reshape(b, g, {n, ch, out_plane});
  Value at = hlo::reshape(b, c.tensor("indices"), {n, ch, out_plane});
  Value zeros = hlo::full(b, Type{g.dtype(), {n, ch, plane}}, 0);
  Value r = idx::scatter_elements(b, zeros, at, 2, g, hlo::Combiner::Add);
  return {hlo::convert(b, hlo::reshape(b, r, out.shape), out.dtype)};
}

}  // namespace

TPU_LOWERING("aten::fractional_max_pool2d", lower_fractional_max_pool,
             reads({"self", "kernel_size", "output_size", "random_samples"}));
TPU_LOWERING("aten::fractional_max_pool3d", lower_fractional_max_pool,
             reads({"self", "kernel_size", "output_size", "random_samples"}));
TPU_LOWERING("aten::fractional_max_pool2d_backward", lower_fractional_max_pool_backward,
             reads({"grad_output", "kernel_size", "indices"}));
TPU_LOWERING("aten::fractional_max_pool3d_backward", lower_fractional_max_pool_backward,
             reads({"grad_output", "kernel_size", "indices"}));

}  // namespace tpu::lowering
