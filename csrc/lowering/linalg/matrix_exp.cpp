// linalg_matrix_exp: scaling and squaring around a Taylor polynomial, in float64.
// Each matrix is scaled by 2^-s with s = max(0, ceil(log2 ||A||_1)), so that ||A / 2^s||_1 <= 1,
// where the degree-18 Taylor polynomial is exact to 1 / 19! (below float64 rounding); the result is
// then squared s times. s differs per matrix of a batch: the squaring loop runs max(s) times and
// each matrix stops at its own s. Working in float64 puts a float32 result within rounding of the
// exact exponential (PyTorch's own float32 CPU kernel is several ulp from it).
#include <cmath>

#include "lowering/core/linalg_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

constexpr int kTaylorDegree = 18;

std::vector<Value> lower_matrix_exp(Ctx& c) {
  ir::Builder& b = c.b;
  Value x = c.tensor("self");
  require_real(x.dtype(), "linalg.matrix_exp");
  const int r = x.rank();
  Value a = hlo::convert(b, x, DType::F64);
  Shape batch = linalg::batch_of(a.shape());
  std::vector<int64_t> batch_dims;
  for (int i = 0; i < r - 2; ++i) batch_dims.push_back(i);

  Value col_sums = reduce::sum(b, hlo::abs(b, a), {r - 2});
  Value norm = reduce::max(b, col_sums, {r - 2});
  Type bt{DType::F64, batch};
  Value log2n = hlo::div(b, hlo::log(b, norm), hlo::full(b, bt, std::log(2.0)));
  Value s = hlo::ceil(b, log2n);
  // No squaring for small norms (and zero, whose log is -inf); NaN/inf inputs give NaN/inf anyway,
  // and 1100 squarings overflow any finite float64.
  s = hlo::select(b, hlo::compare(b, s, s, "NE"), hlo::full(b, bt, 0), s);
  s = hlo::max(b, s, hlo::full(b, bt, 0));
  s = hlo::min(b, s, hlo::full(b, bt, 1100));
  Value scale = hlo::power(b, hlo::full(b, bt, 2.0), hlo::neg(b, s));
  a = hlo::mul(b, a, hlo::broadcast_in_dim(b, scale, a.shape(), batch_dims));

  Value eye = linalg::eye(b, a.type);
  Value t = eye;
  for (int k = kTaylorDegree; k >= 1; --k)
    t = hlo::add(b, eye, hlo::mul(b, linalg::matmul(b, a, t), hlo::full(b, a.type, 1.0 / k)));

  Value steps = hlo::convert(b, s, DType::I64);
  std::vector<int64_t> all(batch.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  Value max_steps = all.empty() ? steps : reduce::max(b, steps, all);
  Value result = linalg::fori_loop(
      b, max_steps, {t, steps}, [&](ir::Builder& rb, const Value& i, const std::vector<Value>& st) {
        Value go = hlo::compare(rb, hlo::broadcast_in_dim(rb, i, st[1].shape(), {}), st[1], "LT");
        Value squared = linalg::matmul(rb, st[0], st[0]);
        Value pick = hlo::broadcast_in_dim(rb, go, st[0].shape(), batch_dims);
        return std::vector<Value>{hlo::select(rb, pick, squared, st[0]), st[1]};
      })[0];
  return {hlo::convert(b, result, c.out().dtype)};
}

}  // namespace

TPU_LOWERING("aten::linalg_matrix_exp", lower_matrix_exp, reads({"self"}));

}  // namespace tpu::lowering
