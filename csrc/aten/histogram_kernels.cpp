// torch.histogram with a bin count (histogram.bin_ct and its out= form), composed from lowered ops
// as CPU's histogramdd kernel computes it:
// - the outer edges are `range` or the input's min and max (read on the host, as CPU does for
//   its finiteness check), widened by 0.5 on each side when they are equal;
// - bin_edges = linspace(leftmost, rightmost, bins + 1) in the input's dtype;
// - an element x in [edges[0], edges[bins]] (NaN never is) lands in bin
//   (number of edges <= x) - 1, the last bin also taking x == edges[bins]; CPU's interpolation
//   with a local search finds exactly that bin;
// - density divides by the total, then by each bin's width.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <cmath>

#include "aten/tpu_tensor.h"

namespace tpu::aten {

namespace {

std::pair<double, double> outer_edges(const at::Tensor& x, std::optional<at::ArrayRef<double>> range) {
  double lo = 0, hi = 0;
  if (range.has_value()) {
    TORCH_CHECK(range->size() == 2, "torch.histogramdd: for a 1-dimensional histogram range should have 2 elements, but got ",
                range->size());
    lo = (*range)[0];
    hi = (*range)[1];
  } else if (x.numel() > 0) {
    auto [mn, mx] = at::aminmax(x);
    lo = to_cpu(mn).item<double>();
    hi = to_cpu(mx).item<double>();
  }
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogramdd: dimension 0's range [", lo, ", ", hi,
              "] is not finite");
  TORCH_CHECK(lo <= hi, "torch.histogramdd: min should not exceed max, but got min ", lo, " max ", hi,
              " for dimension 0");
  if (range.has_value() || x.numel() > 0) {
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
  } else {
    hi = 1;  // no range and no elements: CPU's default [0, 1]
  }
  return {lo, hi};
}

std::tuple<at::Tensor, at::Tensor> histogram_bin_ct(const at::Tensor& self, int64_t bins,
                                                    std::optional<at::ArrayRef<double>> range,
                                                    const std::optional<at::Tensor>& weight, bool density) {
  // CPU's kernel takes float and double only.
  TORCH_CHECK(self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble,
              "\"histogramdd\" not implemented for '", self.scalar_type(), "'");
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  at::Tensor x = self.reshape({-1});
  const bool weighted = weight.has_value() && weight->defined();
  if (weighted) {
    TORCH_CHECK(weight->scalar_type() == self.scalar_type(),
                "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same "
                "dtype, but got input(",
                c10::toString(self.scalar_type()), "), and weight(", c10::toString(weight->scalar_type()), ")");
    TORCH_CHECK(weight->numel() == x.numel(),
                "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor "
                "excluding its innermost dimension, but got input with shape [",
                x.numel(), ", 1] and weight with shape ", weight->sizes());
  }
  auto [lo, hi] = outer_edges(x, range);
  at::Tensor edges = at::linspace(lo, hi, bins + 1, self.options());
  at::Tensor hist = at::zeros({bins}, self.options());
  if (x.numel() > 0) {
    at::Tensor inside = x.ge(edges[0]).logical_and(x.le(edges[bins]));
    at::Tensor bin = (at::searchsorted(edges, x, /*out_int32=*/false, /*right=*/true) - 1).clamp(0, bins - 1);
    at::Tensor w = weighted ? weight->reshape({-1}) : at::ones_like(x);
    hist.index_add_(0, at::where(inside, bin, 0), at::where(inside, w, 0));
  }
  if (density) {
    hist.div_(hist.sum());
    hist.div_(edges.diff());
  }
  return {hist, edges};
}

std::tuple<at::Tensor&, at::Tensor&> histogram_bin_ct_out(const at::Tensor& self, int64_t bins,
                                                          std::optional<at::ArrayRef<double>> range,
                                                          const std::optional<at::Tensor>& weight, bool density,
                                                          at::Tensor& hist, at::Tensor& bin_edges) {
  auto [h, e] = histogram_bin_ct(self, bins, range, weight, density);
  into(hist, h);
  into(bin_edges, e);
  return {hist, bin_edges};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histogram.bin_ct", TORCH_FN(histogram_bin_ct));
  m.impl("histogram.bin_ct_out", TORCH_FN(histogram_bin_ct_out));
}

}  // namespace tpu::aten
