// unfold_backward(grad_in, input_sizes, dim, size, step): the gradient of Tensor.unfold (also
// used by istft's overlap-add). grad_in has the input's shape with `dim` replaced by the number
// of windows n and a trailing window dim of `size`; element (.., i, .., j) belongs at input
// position i*step + j along `dim`. Window offset j is one slice of grad_in spread to positions
// j, j+step, ... by an interior padding, and the `size` slices are summed (overlapping windows
// add up).
#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

std::vector<Value> lower_unfold_backward(Ctx& c) {
  ir::Builder& b = c.b;
  const ir::Type& out = c.out();
  const DType acc = compute_dtype(out.dtype);
  Value g = hlo::convert(b, c.tensor("grad_in"), acc);
  const int rank = out.rank();
  if (rank == 0) return {hlo::convert(b, hlo::reshape(b, g, {}), out.dtype)};
  const int dim = static_cast<int>(hlo::wrap_dim(c.int_arg("dim"), rank));
  const int64_t size = c.int_arg("size"), step = c.int_arg("step");
  const int64_t length = out.shape[dim], windows = g.dim(dim);
  Value sum = hlo::full(b, ir::Type{acc, out.shape}, 0);
  if (windows == 0 || out.numel() == 0) return {hlo::convert(b, sum, out.dtype)};
  ir::Shape part_shape = out.shape;
  part_shape[dim] = windows;
  Value zero = hlo::constant(b, acc, 0);
  for (int64_t j = 0; j < size; ++j) {
    Value part = hlo::reshape(b, hlo::slice_dim(b, g, rank, j, j + 1), part_shape);
    std::vector<int64_t> low(rank, 0), high(rank, 0), interior(rank, 0);
    low[dim] = j;
    high[dim] = length - (j + (windows - 1) * step + 1);
    interior[dim] = step - 1;
    sum = hlo::add(b, sum, hlo::pad(b, part, zero, low, high, interior));
  }
  return {hlo::convert(b, sum, out.dtype)};
}

}  // namespace

TPU_LOWERING("aten::unfold_backward", lower_unfold_backward, reads({"grad_in", "dim", "size", "step"}));

}  // namespace tpu::lowering
