// Convolution for PyTorch's out-of-tree backend hook: aten::_convolution (which checks shapes,
// views 1-d convolutions as 2-d and handles empty batches) calls convolution_overrideable, and
// convolution_backward calls convolution_backward_overrideable. Every case is one
// stablehlo.convolution in PyTorch's NC... / OI... layout:
//
//   forward           y  = conv(x, W)                        (strides s, padding p, dilation d)
//   grad of input     gx = conv(gy, flip(W)^T)               lhs_dilation s, padding d(k-1)-p
//   grad of weight    gW = conv(x^T, gy^T)                   x's channels as batch, stride d,
//                                                            rhs_dilation s, batch_group_count g
//
// (the transpose rules of JAX's conv_general_dilated). A transposed convolution is the input
// gradient of the convolution with the same weight, so its forward uses the second form, its
// input gradient the first and its weight gradient the third with x and gy swapped.
// bf16/f16 convolutions run in f32 and are rounded once, as PyTorch's CPU kernels do.
#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Value;
using Padding = std::vector<std::pair<int64_t, int64_t>>;

struct Params {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

std::vector<int64_t> expand(const std::vector<int64_t>& v, size_t n, int64_t fill) {
  if (v.empty()) return std::vector<int64_t>(n, fill);
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  return v;
}

// The arguments stride, padding, dilation, transposed, output_padding and groups.
Params params(const Ctx& c, size_t spatial) {
  Params p;
  p.stride = expand(c.ints("stride"), spatial, 1);
  p.padding = expand(c.ints("padding"), spatial, 0);
  p.dilation = expand(c.ints("dilation"), spatial, 1);
  p.transposed = c.bool_arg("transposed");
  p.output_padding = expand(c.ints("output_padding"), spatial, 0);
  p.groups = c.int_arg("groups");
  return p;
}

int64_t dilated(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

// y = conv(x, w): x [N, C, in...], w [O, C/g, k...] -> [N, O, out...], where out is what the
// padding (low, high) gives.
Value conv(Builder& b, const Value& x, const Value& w, const Params& p, const Padding& padding) {
  hlo::ConvWindow win;
  win.strides = p.stride;
  win.padding = padding;
  win.rhs_dilation = p.dilation;
  win.feature_group_count = p.groups;
  return hlo::convolution(b, x, w, hlo::ConvDims::nchw(x.rank() - 2), win, x.dtype());
}

Padding symmetric(const std::vector<int64_t>& pad) {
  Padding out;
  for (int64_t v : pad) out.push_back({v, v});
  return out;
}

// The gradient of conv(., w) (input size `in`) with respect to its input, at cotangent gy
// [N, O, out...]: [N, C, in...]. Also the transposed convolution of gy with w.
Value conv_input_grad(Builder& b, const Value& gy, const Value& w, const Params& p, const Shape& in) {
  const int n = gy.rank() - 2;
  const int64_t g = p.groups, o = w.dim(0), i = w.dim(1);
  // Kernel [O, C/g, k] -> [O/g, C, k] with the groups major in C, spatially flipped.
  Shape ks(w.shape().begin() + 2, w.shape().end());
  Shape split = {g, o / g, i};
  split.insert(split.end(), ks.begin(), ks.end());
  std::vector<int64_t> perm = {1, 0, 2};
  for (int d = 0; d < n; ++d) perm.push_back(3 + d);
  Shape merged = {o / g, g * i};
  merged.insert(merged.end(), ks.begin(), ks.end());
  Value k = hlo::reshape(b, hlo::transpose(b, hlo::reshape(b, w, split), perm), merged);
  std::vector<int64_t> spatial;
  for (int d = 0; d < n; ++d) spatial.push_back(2 + d);
  k = hlo::reverse(b, k, spatial);

  hlo::ConvDims dims = hlo::ConvDims::nchw(n);
  dims.kernel_input_feature = 0;
  dims.kernel_output_feature = 1;
  hlo::ConvWindow win;
  win.lhs_dilation = p.stride;
  win.rhs_dilation = p.dilation;
  win.feature_group_count = g;
  for (int d = 0; d < n; ++d) {
    int64_t kd = dilated(ks[d], p.dilation[d]);
    int64_t lo = kd - 1 - p.padding[d];
    int64_t hi = in[d] + kd - 1 - dilated(gy.dim(2 + d), p.stride[d]) - lo;
    win.padding.push_back({lo, hi});
  }
  return hlo::convolution(b, gy, k, dims, win, gy.dtype());
}

// The gradient of conv(x, .) (kernel sizes `ks`) with respect to the kernel, at cotangent gy
// [N, O, out...]: [O, C/g, k...]. The batch is contracted as the convolution's feature
// dimension; the groups of x's channels become batch groups.
Value conv_weight_grad(Builder& b, const Value& x, const Value& gy, const Params& p, const Shape& ks) {
  const int n = x.rank() - 2;
  hlo::ConvDims dims = hlo::ConvDims::nchw(n);
  dims.input_batch = 1;
  dims.input_feature = 0;
  dims.kernel_input_feature = 0;
  dims.kernel_output_feature = 1;
  dims.output_batch = 1;
  dims.output_feature = 0;
  hlo::ConvWindow win;
  win.strides = p.dilation;
  win.rhs_dilation = p.stride;
  win.batch_group_count = p.groups;
  for (int d = 0; d < n; ++d) {
    int64_t lo = p.padding[d];
    int64_t hi = dilated(gy.dim(2 + d), p.stride[d]) - x.dim(2 + d) + dilated(ks[d], p.dilation[d]) - lo - 1;
    win.padding.push_back({lo, hi});
  }
  return hlo::convolution(b, x, gy, dims, win, x.dtype());
}

Shape spatial_of(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

// convolution_overrideable(input, weight, bias?, stride, padding, dilation, transposed,
// output_padding, groups)
std::vector<Value> lower_convolution(Ctx& c) {
  Builder& b = c.b;
  DType t = compute_dtype(c.out().dtype);
  Value x = hlo::convert(b, c.tensor("input"), t);
  Value w = hlo::convert(b, c.tensor("weight"), t);
  Params p = params(c, x.rank() - 2);
  Value y;
  if (!p.transposed) {
    y = conv(b, x, w, p, symmetric(p.padding));
  } else {
    y = conv_input_grad(b, x, w, p, spatial_of(c.out().shape));
  }
  if (c.has("bias")) {
    Value bias = hlo::convert(b, c.tensor("bias"), t);
    y = hlo::add(b, y, hlo::broadcast_in_dim(b, bias, y.shape(), {1}));
  }
  return {finish(c, y, 0)};
}

// convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation,
// transposed, output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias)
std::vector<Value> lower_convolution_backward(Ctx& c) {
  Builder& b = c.b;
  DType t = compute_dtype(c.tensor("input").dtype());
  Value gy = hlo::convert(b, c.tensor("grad_output"), t);
  Value x = hlo::convert(b, c.tensor("input"), t);
  Value w = hlo::convert(b, c.tensor("weight"), t);
  Params p = params(c, x.rank() - 2);
  Shape in = spatial_of(x.shape()), ks = spatial_of(w.shape());
  std::vector<Value> out(3);
  if (output_wanted(c, 0)) {
    if (!p.transposed) {
      out[0] = conv_input_grad(b, gy, w, p, in);
    } else {
      // gy has the transposed convolution's output size; the forward convolution over it must
      // return exactly `in` positions (output_padding only adds positions at the high end).
      Padding pad;
      for (size_t d = 0; d < in.size(); ++d) {
        int64_t kd = dilated(ks[d], p.dilation[d]);
        int64_t hi = (in[d] - 1) * p.stride[d] + kd - gy.dim(2 + d) - p.padding[d];
        pad.push_back({p.padding[d], hi});
      }
      out[0] = conv(b, gy, w, p, pad);
    }
  }
  if (output_wanted(c, 1))
    out[1] = p.transposed ? conv_weight_grad(b, gy, x, p, ks) : conv_weight_grad(b, x, gy, p, ks);
  if (output_wanted(c, 2)) {
    std::vector<int64_t> dims = {0};
    for (int d = 2; d < gy.rank(); ++d) dims.push_back(d);
    out[2] = reduce::sum(b, gy, dims);
  }
  return masked_outputs(c, out);
}

}  // namespace

TPU_LOWERING("aten::convolution_overrideable", lower_convolution,
             reads({"input", "weight", "bias", "stride", "padding", "dilation", "transposed",
                    "output_padding", "groups"}));
TPU_LOWERING("aten::convolution_backward_overrideable", lower_convolution_backward,
             reads({"grad_output", "input", "weight", "stride", "padding", "dilation", "transposed",
                    "output_padding", "groups", "output_mask"}));

}  // namespace tpu::lowering
