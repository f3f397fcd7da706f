// Pairwise p-norm distances: _cdist_forward / _cdist_backward (torch.cdist) and _pdist_forward /
// _pdist_backward (torch.pdist), as PyTorch's CPU kernels define them: the direct sum over the
// feature dimension of |a - b|^p (p = 0 counts differences, p = inf takes the largest), and for
// p = 2 with many rows (or compute_mode 1) the matrix-product form
// sqrt(max(|a|^2 - 2 a.b + |b|^2, 0)) that CPU uses there.
#include <cmath>

#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::Shape;
using ir::Value;

// d = a - b over the last dimension -> the p-norm over it.
Value norm_of_differences(Builder& b, const Value& d, double p) {
  const int64_t last = d.rank() - 1;
  Value a = hlo::abs(b, d);
  if (p == 0)
    return reduce::sum(b, hlo::convert(b, hlo::compare(b, a, hlo::scalar_like(b, a, 0), "NE"), d.dtype()),
                       {last});
  if (std::isinf(p)) return reduce::max(b, a, {last});
  if (p == 1) return reduce::sum(b, a, {last});
  if (p == 2) return hlo::sqrt(b, reduce::sum(b, hlo::mul(b, d, d), {last}));
  Value s = reduce::sum(b, hlo::power(b, a, hlo::scalar_like(b, a, p)), {last});
  return hlo::power(b, s, hlo::scalar_like(b, s, 1.0 / p));
}

// The derivative of the distance `dist` with respect to a, per coordinate of d = a - b (dist
// broadcast to d's shape), with CPU's convention that pairs at distance 0 contribute nothing.
Value distance_gradient(Builder& b, const Value& d, const Value& dist, double p) {
  Value zero = hlo::scalar_like(b, d, 0);
  Value sign = hlo::sign(b, d);
  Value a = hlo::abs(b, d);
  Value g;
  if (p == 0) return zero;
  if (p == 1) {
    g = sign;
  } else if (std::isinf(p)) {
    g = hlo::select(b, hlo::compare(b, a, dist, "EQ"), sign, zero);
  } else if (p == 2) {
    g = hlo::div(b, d, dist);
  } else if (p < 2) {
    Value pm1 = hlo::scalar_like(b, d, p - 1);
    g = hlo::div(b, hlo::mul(b, sign, hlo::power(b, a, pm1)), hlo::power(b, dist, pm1));
    // |d|^(p-1) is inf at d = 0 for p < 1; CPU counts those coordinates as 0.
    g = hlo::select(b, hlo::compare(b, d, zero, "EQ"), zero, g);
  } else {
    g = hlo::div(b, hlo::mul(b, d, hlo::power(b, a, hlo::scalar_like(b, d, p - 2))),
                 hlo::power(b, dist, hlo::scalar_like(b, d, p - 1)));
  }
  return hlo::select(b, hlo::compare(b, dist, zero, "EQ"), zero, g);
}

// x1 [..., P, M], x2 [..., R, M] -> their differences [..., P, R, M].
Value differences(Builder& b, const Value& x1, const Value& x2, const Shape& batch) {
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t p = x1.shape()[n], r = x2.shape()[n], m = x1.shape()[n + 1];
  Shape pairs = batch;
  pairs.insert(pairs.end(), {p, r, m});
  std::vector<int64_t> dims1, dims2;
  for (int64_t i = 0; i < n; ++i) dims1.push_back(i), dims2.push_back(i);
  dims1.insert(dims1.end(), {n, n + 2});
  dims2.insert(dims2.end(), {n + 1, n + 2});
  Shape s1 = batch, s2 = batch;
  s1.insert(s1.end(), {p, m});
  s2.insert(s2.end(), {r, m});
  return hlo::sub(b, hlo::broadcast_in_dim(b, hlo::broadcast_to(b, x1, s1), pairs, dims1),
                  hlo::broadcast_in_dim(b, hlo::broadcast_to(b, x2, s2), pairs, dims2));
}

Shape batch_of(const Shape& out) { return Shape(out.begin(), out.end() - 2); }

std::vector<Value> lower_cdist_forward(Ctx& c) {
  Builder& b = c.b;
  const ir::Type& out = c.out();
  const double p = c.arg("p").d;
  const Shape batch = batch_of(out.shape);
  const int64_t n = static_cast<int64_t>(batch.size());
  Value x1 = c.tensor("x1"), x2 = c.tensor("x2");
  const int64_t r1 = x1.shape()[x1.rank() - 2], r2 = x2.shape()[x2.rank() - 2];
  const int64_t mode = c.has("compute_mode") ? c.int_arg("compute_mode") : 0;
  if (x1.shape().back() == 0) return {hlo::full(b, out, 0)};
  if (p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)))) {
    // CPU's _euclidean_dist: one product of [-2 a, |a|^2, 1] and [b, 1, |b|^2].
    const int64_t m = x1.shape().back();
    Shape s1 = batch, s2 = batch;
    s1.insert(s1.end(), {r1, m});
    s2.insert(s2.end(), {r2, m});
    x1 = hlo::broadcast_to(b, x1, s1);
    x2 = hlo::broadcast_to(b, x2, s2);
    auto augmented = [&](const Value& x, bool left) {
      Shape col = x.shape();
      col.back() = 1;
      Value sq = hlo::reshape(b, reduce::sum(b, hlo::mul(b, x, x), {n + 1}), col);
      Value ones = hlo::full(b, ir::Type{x.dtype(), col}, 1);
      if (left) return hlo::concatenate(b, {hlo::mul(b, x, hlo::scalar_like(b, x, -2)), sq, ones}, n + 1);
      return hlo::concatenate(b, {x, ones, sq}, n + 1);
    };
    std::vector<int64_t> bd;
    for (int64_t i = 0; i < n; ++i) bd.push_back(i);
    Value sq =
        hlo::dot_general(b, augmented(x1, true), augmented(x2, false), bd, bd, {n + 1}, {n + 1}, out.dtype);
    return {hlo::sqrt(b, hlo::max(b, sq, hlo::scalar_like(b, sq, 0)))};
  }
  return {norm_of_differences(b, differences(b, x1, x2, batch), p)};
}

// _cdist_backward: the gradient with respect to x1 (autograd swaps the
// arguments for x2).
std::vector<Value> lower_cdist_backward(Ctx& c) {
  Builder& b = c.b;
  const double p = c.arg("p").d;
  const Value& grad = c.tensor("grad");
  const Value& dist = c.tensor("cdist");
  const Shape batch = batch_of(dist.shape());
  Value d = differences(b, c.tensor("x1"), c.tensor("x2"), batch);
  if (d.type.numel() == 0) return {hlo::full(b, c.out(), 0)};
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < dist.rank(); ++i) dims.push_back(i);
  Value w = distance_gradient(b, d, hlo::broadcast_in_dim(b, dist, d.shape(), dims), p);
  w = hlo::mul(b, w, hlo::broadcast_in_dim(b, grad, d.shape(), dims));
  Value g = reduce::sum(b, w, {static_cast<int64_t>(batch.size()) + 1});
  return {hlo::reshape(b, g, c.out().shape)};
}

// The upper triangle (i < j) of a [N, N] matrix in row-major order, as pdist lays it out.
Value condensed(Builder& b, const Value& full) {
  const int64_t n = full.shape()[0];
  std::vector<Value> rows;
  for (int64_t i = 0; i + 1 < n; ++i)
    rows.push_back(hlo::reshape(b, hlo::slice(b, full, {i, i + 1}, {i + 1, n}), {n - i - 1}));
  return hlo::concatenate(b, rows, 0);
}

// The symmetric [N, N] matrix with `v` (condensed, as above) on both triangles, 0 on the diagonal.
Value symmetric(Builder& b, const Value& v, int64_t n) {
  std::vector<Value> rows;
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    Value zeros = hlo::full(b, ir::Type{v.dtype(), {i + 1}}, 0);
    Value row =
        i + 1 < n ? hlo::concatenate(b, {zeros, hlo::slice(b, v, {offset}, {offset + n - i - 1})}, 0) : zeros;
    offset += n - i - 1;
    rows.push_back(hlo::reshape(b, row, {1, n}));
  }
  Value upper = hlo::concatenate(b, rows, 0);
  return hlo::add(b, upper, hlo::transpose(b, upper, {1, 0}));
}

// _pdist_forward: distances between the rows of a [N, M] matrix, pairs i < j.
std::vector<Value> lower_pdist_forward(Ctx& c) {
  const Value& x = c.tensor("self");
  if (c.out().numel() == 0) return {hlo::full(c.b, c.out(), 0)};
  return {condensed(c.b, norm_of_differences(c.b, differences(c.b, x, x, {}), c.arg("p").d))};
}

std::vector<Value> lower_pdist_backward(Ctx& c) {
  Builder& b = c.b;
  const Value& x = c.tensor("self");
  const int64_t n = x.shape()[0];
  if (c.tensor("pdist").type.numel() == 0) return {hlo::full(b, c.out(), 0)};
  Value d = differences(b, x, x, {});
  Value dist = hlo::broadcast_in_dim(b, symmetric(b, c.tensor("pdist"), n), d.shape(), {0, 1});
  Value grad = hlo::broadcast_in_dim(b, symmetric(b, c.tensor("grad"), n), d.shape(), {0, 1});
  Value w = hlo::mul(b, distance_gradient(b, d, dist, c.arg("p").d), grad);
  return {reduce::sum(b, w, {1})};
}

}  // namespace

// p is compile-time: it selects the formula.
TPU_LOWERING("aten::_cdist_forward", lower_cdist_forward, reads({"x1", "x2", "compute_mode"}, {"p"}));
TPU_LOWERING("aten::_cdist_backward", lower_cdist_backward, reads({"grad", "x1", "x2", "cdist"}, {"p"}));
TPU_LOWERING("aten::_pdist_forward", lower_pdist_forward, reads({"self"}, {"p"}));
TPU_LOWERING("aten::_pdist_backward", lower_pdist_backward, reads({"grad", "self", "pdist"}, {"p"}));

}  // namespace tpu::lowering
