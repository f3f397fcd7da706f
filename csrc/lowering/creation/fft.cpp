// The torch.fft primitives: _fft_r2c, _fft_c2c and _fft_c2r (every torch.fft function, stft and
// istft decompose into these). Each becomes stablehlo.fft, which transforms the innermost 1-3
// dimensions, so the transformed `dim`s are moved to the back (in their order: the last one is
// the halved dimension of r2c/c2r) and moved back afterwards; longer `dim` lists are split into
// chunks of at most three, which is exact because a multidimensional DFT is separable.
//
// Normalisation (PyTorch's fft_norm_mode): 0 none, 1 by 1/sqrt(n), 2 by 1/n, where n is the
// product of the signal sizes (the output's for c2r). stablehlo IFFT/IRFFT divide by n while
// PyTorch's inverse transforms are unnormalised; dividing and then multiplying back would round
// twice, so an unnormalised inverse is computed as conj(FFT(conj(x))) (exact conjugations) and
// PyTorch's scale is applied once. IRFFT serves only c2r by 1/n, where its scale is the one
// wanted.
#include <algorithm>
#include <cmath>
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Type;
using ir::Value;

constexpr size_t kMaxFftRank = 3;  // stablehlo.fft transforms at most three dimensions

DType complex_of(DType real) { return real == DType::F64 ? DType::C128 : DType::C64; }

std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(hlo::wrap_dim(d, rank));
  return out;
}

// stablehlo.fft of `x` over `dims` (at most three, in order) with fft_length `lengths` (the
// real signal sizes). The dims are moved to the back and the result is moved back; the result's
// dtype and the size of its last transformed dim follow the fft type.
Value fft_over(Builder& b, const Value& x, const std::vector<int64_t>& dims, hlo::FftType type,
               const std::vector<int64_t>& lengths) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) perm.push_back(d);
  perm.insert(perm.end(), dims.begin(), dims.end());
  Value r = hlo::fft(b, hlo::transpose(b, x, perm), type, lengths);
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[perm[k]] = static_cast<int64_t>(k);
  return hlo::transpose(b, r, inverse);
}

// Unnormalised complex-to-complex transforms over every dim in `dims`, at most three at a time.
Value c2c_over(Builder& b, Value x, const std::vector<int64_t>& dims, bool forward) {
  if (dims.empty()) return x;
  if (!forward) return conj(b, c2c_over(b, conj(b, x), dims, true));
  for (size_t start = 0; start < dims.size(); start += kMaxFftRank) {
    std::vector<int64_t> chunk(dims.begin() + start,
                               dims.begin() + std::min(dims.size(), start + kMaxFftRank));
    std::vector<int64_t> lengths;
    for (int64_t d : chunk) lengths.push_back(x.dim(d));
    x = fft_over(b, x, chunk, hlo::FftType::Fft, lengths);
  }
  return x;
}

// Unnormalised one-sided inverse along `dim`: x holds entries 0..size/2 of a Hermitian signal of
// length `size`. With the full spectrum X (X[k] = conj(x[size-k]) above size/2),
// sum_k X[k] e^{+2 pi i kn/size} = real(FFT(conj(X))); taking the real part drops the imaginary
// parts of the DC and Nyquist entries, as PyTorch's c2r does.
Value c2r_unnormalized(Builder& b, const Value& x, int64_t dim, int64_t size) {
  const int64_t mirrored = size - x.dim(dim);  // entries size/2+1 .. size-1
  Value spectrum = conj(b, x);
  if (mirrored > 0) {
    Value tail = hlo::reverse(b, hlo::slice_dim(b, x, static_cast<int>(dim), 1, 1 + mirrored), {dim});
    spectrum = hlo::concatenate(b, {spectrum, tail}, dim);
  }
  Value r = c2c_over(b, spectrum, {dim}, true);
  return hlo::real(b, r);
}

// Applies PyTorch's normalisation for signal size `n` to an unnormalised transform.
Value normalize(Builder& b, const Value& x, int64_t normalization, double n) {
  double scale = normalization == 1 ? 1 / std::sqrt(n) : normalization == 2 ? 1 / n : 1;
  if (scale == 1) return x;
  return hlo::mul(b, x, hlo::full(b, x.type, scale));
}

double signal_size(const ir::Shape& shape, const std::vector<int64_t>& dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(shape[d]);
  return n;
}

// _fft_c2c(self, dim, normalization, forward)
std::vector<Value> lower_fft_c2c(Ctx& c) {
  const Type& out = c.out();
  Value x = hlo::convert(c.b, c.tensor("self"), out.dtype);
  std::vector<int64_t> dims = wrap_dims(c.ints("dim"), x.rank());
  const bool forward = c.bool_arg("forward");
  if (dims.empty()) return {x};
  if (out.numel() == 0) return {hlo::full(c.b, out, 0)};
  Value r = c2c_over(c.b, x, dims, forward);
  return {normalize(c.b, r, c.int_arg("normalization"), signal_size(x.shape(), dims))};
}

// _fft_r2c(self, dim, normalization, onesided): a real forward transform. One-sided output
// keeps n/2+1 entries of the last dim; two-sided output is the full complex transform.
std::vector<Value> lower_fft_r2c(Ctx& c) {
  Builder& b = c.b;
  const Type& out = c.out();
  Value x = hlo::convert(b, c.tensor("self"), ir::real_type(out.dtype));
  std::vector<int64_t> dims = wrap_dims(c.ints("dim"), x.rank());
  const bool onesided = c.bool_arg("onesided");
  if (dims.empty()) return {hlo::convert(b, x, out.dtype)};
  if (out.numel() == 0) return {hlo::full(b, out, 0)};
  const double n = signal_size(x.shape(), dims);
  Value r;
  if (!onesided) {
    r = c2c_over(b, hlo::convert(b, x, out.dtype), dims, true);
  } else {
    // RFFT over the innermost chunk (which holds the halved last dim), then FFT over the rest.
    const size_t split = dims.size() > kMaxFftRank ? dims.size() - kMaxFftRank : 0;
    std::vector<int64_t> inner(dims.begin() + split, dims.end()), outer(dims.begin(), dims.begin() + split);
    std::vector<int64_t> lengths;
    for (int64_t d : inner) lengths.push_back(x.dim(d));
    r = fft_over(b, x, inner, hlo::FftType::Rfft, lengths);
    r = c2c_over(b, r, outer, true);
  }
  return {normalize(b, r, c.int_arg("normalization"), n)};
}

// _fft_c2r(self, dim, normalization, last_dim_size): the inverse of a one-sided transform; the
// last dim of the input holds last_dim_size/2+1 entries of a Hermitian signal.
std::vector<Value> lower_fft_c2r(Ctx& c) {
  Builder& b = c.b;
  const Type& out = c.out();
  Value x = hlo::convert(b, c.tensor("self"), complex_of(out.dtype));
  std::vector<int64_t> dims = wrap_dims(c.ints("dim"), x.rank());
  const int64_t last_size = c.int_arg("last_dim_size");
  if (out.numel() == 0 || dims.empty()) return {hlo::full(b, out, 0)};
  // Only the first last_size/2+1 entries take part (missing ones count as zero).
  const int64_t last = dims.back(), half = last_size / 2 + 1;
  if (x.dim(last) > half) x = hlo::slice_dim(b, x, static_cast<int>(last), 0, half);
  if (x.dim(last) < half) {
    std::vector<int64_t> low(x.rank(), 0), high(x.rank(), 0);
    high[last] = half - x.dim(last);
    x = hlo::pad(b, x, hlo::constant(b, x.dtype(), 0), low, high);
  }
  const int64_t normalization = c.int_arg("normalization");
  const double n = signal_size(out.shape, dims);
  if (normalization == 2) {
    // By 1/n, stablehlo's own scale: IFFT over all but the innermost chunk (which holds the
    // last dim), then IRFFT over that chunk. Each divides by its own lengths.
    const size_t split = dims.size() > kMaxFftRank ? dims.size() - kMaxFftRank : 0;
    std::vector<int64_t> inner(dims.begin() + split, dims.end()), outer(dims.begin(), dims.begin() + split);
    Value r = normalize(b, c2c_over(b, x, outer, false), 2, signal_size(x.shape(), outer));
    std::vector<int64_t> lengths;
    for (int64_t d : inner) lengths.push_back(d == last ? last_size : x.dim(d));
    return {fft_over(b, r, inner, hlo::FftType::Irfft, lengths)};
  }
  // Inverse c2c over all other dims first, then the one-sided inverse along the last one (the
  // order PyTorch's c2r uses, which matters for non-Hermitian input).
  std::vector<int64_t> outer(dims.begin(), dims.end() - 1);
  Value r = c2r_unnormalized(b, c2c_over(b, x, outer, false), last, last_size);
  return {normalize(b, r, normalization, n)};
}

}  // namespace

TPU_LOWERING("aten::_fft_c2c", lower_fft_c2c, reads({"self", "dim", "normalization", "forward"}));
TPU_LOWERING("aten::_fft_r2c", lower_fft_r2c, reads({"self", "dim", "normalization", "onesided"}));
TPU_LOWERING("aten::_fft_c2r", lower_fft_c2r, reads({"self", "dim", "normalization", "last_dim_size"}));

}  // namespace tpu::lowering
