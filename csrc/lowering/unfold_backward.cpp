// unfold_backward: the gradient of Tensor.unfold(dim, size, step). grad_in has the input's
// shape with dimension `dim` replaced by the n windows, plus a trailing dimension of the size
// positions in a window. Window offset j's gradients [.., n, ..] land at input positions
// j, j + step, ...: each is dilated by the step (interior padding), shifted by j and the
// offsets are summed (overlapping windows add up).
#include "lowering/hlo.h"
#include "lowering/reduce_util.h"
#include "lowering/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Value;

// unfold_backward(grad_in, input_sizes, dim, size, step)
std::vector<Value> lower_unfold_backward(Ctx& c) {
  Builder& b = c.b;
  const DType out_dtype = c.out().dtype;
  Value g = hlo::convert(b, c.tensor(0), reduce::acc_type(out_dtype));
  const Shape& in = c.ints(1);
  const int r = static_cast<int>(in.size());
  if (r == 0) return {hlo::reshape(b, hlo::convert(b, g, out_dtype), c.out().shape)};
  const int d = static_cast<int>(hlo::wrap_dim(c.int_arg(2), r));
  const int64_t size = c.int_arg(3), step = c.int_arg(4);
  const int64_t n = g.dim(d), len = in[d];
  Shape part_shape(g.shape().begin(), g.shape().end() - 1);
  Value zero = hlo::constant(b, g.dtype(), 0);
  Value sum;
  for (int64_t j = 0; j < size; ++j) {
    Value part = hlo::reshape(b, hlo::slice_dim(b, g, r, j, j + 1), part_shape);
    if (n == 0) break;
    std::vector<int64_t> lo(r, 0), hi(r, 0), interior(r, 0);
    lo[d] = j;
    interior[d] = step - 1;
    hi[d] = len - j - ((n - 1) * step + 1);
    Value placed = hlo::pad(b, part, zero, lo, hi, interior);
    sum = sum.valid() ? hlo::add(b, sum, placed) : placed;
  }
  if (!sum.valid()) sum = hlo::full(b, ir::Type{g.dtype(), in}, 0);
  return {hlo::reshape(b, hlo::convert(b, sum, out_dtype), c.out().shape)};
}

}  // namespace

TPU_LOWERING("aten::unfold_backward", lower_unfold_backward);

}  // namespace tpu::lowering
