// torch.histogram with a bin count or a tensor of bin edges (histogram.bin_ct, bins_tensor and
// their out= forms) and torch.histogramdd
// (bin counts or bin-edge tensors), composed from lowered ops as CPU's histogramdd kernel computes
// them, per dimension of the [N, D] points:
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
#include <ATen/ops/ones.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <cmath>

#include "aten/tpu_tensor.h"

namespace tpu::aten {

namespace {

// CPU's kernel takes float and double only.
void check_input(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble,
              "\"histogramdd\" not implemented for '", self.scalar_type(), "'");
}

void check_weight(const at::Tensor& x, const std::optional<at::Tensor>& weight) {
  if (!weight.has_value() || !weight->defined()) return;
  TORCH_CHECK(
      weight->scalar_type() == x.scalar_type(),
      "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same "
      "dtype, but got input(",
      c10::toString(x.scalar_type()), "), and weight(", c10::toString(weight->scalar_type()), ")");
  TORCH_CHECK(
      weight->sizes() == x.sizes().slice(0, x.dim() - 1) || weight->numel() == x.size(0),
      "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor "
      "excluding its innermost dimension, but got input with shape ",
      x.sizes(), " and weight with shape ", weight->sizes());
}

// The outer edges of each of the D dimensions of x [N, D].
std::vector<std::pair<double, double>> outer_edges(const at::Tensor& x,
                                                   std::optional<at::ArrayRef<double>> range) {
  const int64_t dims = x.size(1);
  std::vector<std::pair<double, double>> edges(dims, {0.0, 1.0});  // no range, no elements
  if (range.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(range->size()) == 2 * dims, "torch.histogramdd: for a ", dims,
                "-dimensional histogram range should have ", 2 * dims, " elements, but got ", range->size());
    for (int64_t d = 0; d < dims; ++d) edges[d] = {(*range)[2 * d], (*range)[2 * d + 1]};
  } else if (x.numel() > 0) {
    auto [mn, mx] = at::aminmax(x, 0);
    at::Tensor lo = to_cpu(mn).to(at::kDouble), hi = to_cpu(mx).to(at::kDouble);
    for (int64_t d = 0; d < dims; ++d) edges[d] = {lo[d].item<double>(), hi[d].item<double>()};
  }
  for (int64_t d = 0; d < dims; ++d) {
    auto& [lo, hi] = edges[d];
    TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogramdd: dimension ", d, "'s range [", lo,
                ", ", hi, "] is not finite");
    TORCH_CHECK(lo <= hi, "torch.histogramdd: min should not exceed max, but got min ", lo, " max ", hi,
                " for dimension ", d);
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
  }
  return edges;
}

// CPU's checks of bin-edge tensors (histogramdd_check_inputs).
void check_bin_tensors(const at::Tensor& self, at::TensorList bins) {
  for (size_t d = 0; d < bins.size(); ++d) {
    const at::Tensor& e = bins[d];
    TORCH_CHECK(
        e.scalar_type() == self.scalar_type(),
        "torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input with "
        "dtype ",
        self.dtype(), " and bins for dimension ", d, " with dtype ", e.dtype());
    TORCH_CHECK(e.dim() == 1, "torch.histogramdd: bins tensor should have one dimension, but got ", e.dim(),
                " dimensions in the bins tensor for dimension ", d);
    TORCH_CHECK(e.numel() > 0, "torch.histogramdd: bins tensor should have at least 1 element, but got ",
                e.numel(), " elements in the bins tensor for dimension ", d);
    TORCH_CHECK(e.numel() > 1, "torch.histogram(): bins must be > 0, but got ", e.numel() - 1,
                " for dimension ", d);
  }
}

// x [N, D] (or any shape [..., D]) viewed as [N, D].
at::Tensor as_points(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions");
  return self.reshape({-1, self.size(-1)});
}

std::vector<at::Tensor> bin_edges(const at::Tensor& self, at::IntArrayRef bins,
                                  std::optional<at::ArrayRef<double>> range) {
  check_input(self);
  at::Tensor x = as_points(self);
  TORCH_CHECK(static_cast<int64_t>(bins.size()) == x.size(1),
              "histogramdd: The size of bins must be equal to the innermost dimension of the input.");
  for (size_t d = 0; d < bins.size(); ++d)
    TORCH_CHECK(bins[d] > 0, "torch.histogramdd(): bins must be > 0, but got ", bins[d], " for dimension ",
                d);
  std::vector<at::Tensor> edges;
  auto outer = outer_edges(x, range);
  for (size_t d = 0; d < bins.size(); ++d)
    edges.push_back(at::linspace(outer[d].first, outer[d].second, bins[d] + 1, self.options()));
  return edges;
}

// The histogram of the points of self over the given edges, as CPU's histogramdd kernel counts.
at::Tensor counts(const at::Tensor& self, const std::vector<at::Tensor>& edges,
                  const std::optional<at::Tensor>& weight, bool density) {
  at::Tensor x = as_points(self);
  check_weight(self, weight);
  const int64_t dims = x.size(1);
  std::vector<int64_t> shape;
  for (const at::Tensor& e : edges) shape.push_back(e.numel() - 1);
  at::Tensor hist = at::zeros(shape, self.options());
  if (x.size(0) > 0 && hist.numel() > 0) {
    at::Tensor flat = at::zeros({x.size(0)}, x.options().dtype(at::kLong));
    at::Tensor inside = at::ones({x.size(0)}, x.options().dtype(at::kBool));
    int64_t stride = 1;
    for (int64_t d = dims - 1; d >= 0; --d) {
      const at::Tensor& e = edges[d];
      const int64_t nbins = e.numel() - 1;
      at::Tensor v = x.select(1, d);
      inside = inside.logical_and(v.ge(e[0])).logical_and(v.le(e[nbins]));
      at::Tensor bin =
          (at::searchsorted(e.contiguous(), v.contiguous(), /*out_int32=*/false, /*right=*/true) - 1)
              .clamp(0, nbins - 1);
      flat = flat + bin * stride;
      stride *= nbins;
    }
    const bool weighted = weight.has_value() && weight->defined();
    at::Tensor w = weighted ? weight->reshape({-1}) : at::ones({x.size(0)}, x.options());
    hist.view({-1}).index_add_(0, at::where(inside, flat, 0), at::where(inside, w, 0));
  }
  if (density) {
    hist.div_(hist.sum());
    for (int64_t d = 0; d < dims; ++d) {
      std::vector<int64_t> view(dims, 1);
      view[d] = shape[d];
      hist.div_(edges[d].diff().reshape(view));
    }
  }
  return hist;
}

std::tuple<at::Tensor, at::Tensor> histogram_bin_ct(const at::Tensor& self, int64_t bins,
                                                    std::optional<at::ArrayRef<double>> range,
                                                    const std::optional<at::Tensor>& weight, bool density) {
  check_input(self);
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  at::Tensor points = self.reshape({-1, 1});
  at::Tensor edges = bin_edges(points, {bins}, range)[0];
  std::optional<at::Tensor> w = weight;
  if (weight.has_value() && weight->defined()) {
    check_weight(points, weight);  // its message names the [N, 1] points, as CPU's does
    w = weight->reshape({-1});
  }
  return {counts(points, {edges}, w, density), edges};
}

std::tuple<at::Tensor&, at::Tensor&> histogram_bin_ct_out(const at::Tensor& self, int64_t bins,
                                                          std::optional<at::ArrayRef<double>> range,
                                                          const std::optional<at::Tensor>& weight,
                                                          bool density, at::Tensor& hist,
                                                          at::Tensor& bin_edges) {
  auto [h, e] = histogram_bin_ct(self, bins, range, weight, density);
  into(hist, h);
  into(bin_edges, e);
  return {hist, bin_edges};
}

// histogram.bins_tensor: the one-dimensional histogram of every element over the given edges,
// which it returns as bin_edges (a copy, as CPU's histogramdd_out copies them).
std::tuple<at::Tensor, at::Tensor> histogram_bins_tensor(const at::Tensor& self, const at::Tensor& bins,
                                                         const std::optional<at::Tensor>& weight,
                                                         bool density) {
  check_input(self);
  at::Tensor points = self.reshape({-1, 1});
  check_bin_tensors(points, {bins});
  std::optional<at::Tensor> w = weight;
  if (weight.has_value() && weight->defined()) {
    check_weight(points, weight);
    w = weight->reshape({-1});
  }
  return {counts(points, {bins}, w, density), bins.clone(at::MemoryFormat::Contiguous)};
}

std::tuple<at::Tensor&, at::Tensor&> histogram_bins_tensor_out(const at::Tensor& self, const at::Tensor& bins,
                                                               const std::optional<at::Tensor>& weight,
                                                               bool density, at::Tensor& hist,
                                                               at::Tensor& bin_edges) {
  auto [h, e] = histogram_bins_tensor(self, bins, weight, density);
  into(hist, h);
  into(bin_edges, e);
  return {hist, bin_edges};
}

std::vector<at::Tensor> histogramdd_bin_edges(const at::Tensor& self, at::IntArrayRef bins,
                                              std::optional<at::ArrayRef<double>> range,
                                              const std::optional<at::Tensor>& /*weight*/, bool /*density*/) {
  return bin_edges(self, bins, range);
}

at::Tensor histogramdd_from_bin_cts(const at::Tensor& self, at::IntArrayRef bins,
                                    std::optional<at::ArrayRef<double>> range,
                                    const std::optional<at::Tensor>& weight, bool density) {
  return counts(self, bin_edges(self, bins, range), weight, density);
}

at::Tensor histogramdd_from_bin_tensors(const at::Tensor& self, at::TensorList bins,
                                        const std::optional<at::Tensor>& weight, bool density) {
  check_input(self);
  TORCH_CHECK(static_cast<int64_t>(bins.size()) == as_points(self).size(1),
              "histogramdd: The size of bins must be equal to the innermost dimension of the input.");
  check_bin_tensors(self, bins);
  return counts(self, bins.vec(), weight, density);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histogram.bin_ct", TORCH_FN(histogram_bin_ct));
  m.impl("histogram.bin_ct_out", TORCH_FN(histogram_bin_ct_out));
  m.impl("histogram.bins_tensor", TORCH_FN(histogram_bins_tensor));
  m.impl("histogram.bins_tensor_out", TORCH_FN(histogram_bins_tensor_out));
  m.impl("_histogramdd_bin_edges", TORCH_FN(histogramdd_bin_edges));
  m.impl("_histogramdd_from_bin_cts", TORCH_FN(histogramdd_from_bin_cts));
  m.impl("_histogramdd_from_bin_tensors", TORCH_FN(histogramdd_from_bin_tensors));
}

}  // namespace tpu::aten
