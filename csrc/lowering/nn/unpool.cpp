// max_unpool2d / max_unpool3d (F.max_unpool1d is a composite over the 2-d op): every input
// value is written into a zero output plane at its flat index within the plane (the indices
// max pooling returned). Indices outside the plane raise PyTorch's error at the next check.
// Duplicate indices (overlapping pooling windows) carry the same value, so the write order
// does not matter.
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/core/index_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// max_unpool2d(self, indices, output_size) / max_unpool3d(self, indices, output_size, stride,
// padding)
template <int N>
std::vector<Value> lower_max_unpool(Ctx& c) {
  Builder& b = c.b;
  const Value& x = c.tensor("self");
  const Type& out = c.out();
  int64_t plane = 1;
  for (int d = 0; d < N; ++d) plane *= out.shape[out.shape.size() - N + d];
  const int64_t bsz = plane == 0 ? 0 : out.numel() / plane;
  const int64_t q = bsz == 0 ? 0 : x.type.numel() / bsz;
  Value idx = hlo::reshape(b, hlo::convert(b, c.tensor("indices"), DType::I64), {bsz, q});
  idx::require_in_range(
      c, idx, plane, false,
      "Found an invalid max index (output volumes are of size " +
          [&] {
            std::string s;
            for (int d = 0; d < N; ++d)
              s += (d ? "x" : "") + std::to_string(out.shape[out.shape.size() - N + d]);
            return s;
          }() +
          ")",
      CheckError::Runtime);
  Type it{DType::I64, {bsz, q}};
  Value base = hlo::mul(b, hlo::iota(b, it, 0), hlo::full(b, it, static_cast<double>(plane)));
  Value flat = hlo::reshape(b, hlo::add(b, idx, base), {bsz * q, 1});
  idx::ScatterDims dims;
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  Value zeros = hlo::full(b, Type{out.dtype, {bsz * plane}}, 0);
  Value r = idx::scatter(b, zeros, flat, hlo::reshape(b, hlo::convert(b, x, out.dtype), {bsz * q}), dims,
                         hlo::kReplace);
  return {hlo::reshape(b, r, out.shape)};
}

}  // namespace

TPU_LOWERING("aten::max_unpool2d", lower_max_unpool<2>, reads({"self", "indices"}));
TPU_LOWERING("aten::max_unpool3d", lower_max_unpool<3>, reads({"self", "indices"}));

}  // namespace tpu::lowering
