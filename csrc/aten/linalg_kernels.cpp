// Glue for the linalg ops PyTorch gives no meta kernel (the generic kernel plans its outputs with
// one), and for linalg_lstsq, whose output shapes depend on the driver and, for gelsd/gelss,
// on the computed rank: it is composed here from lowered ops instead of being one lowering.
//
// - geqrf: lowered (lowering/linalg/qr.cpp); its meta kernel is here. Outputs carry the CPU's
//   column-major (LAPACK) strides.
// - linalg_lstsq: the solution by QR (A = QR for m >= n; the minimum-norm solution from
//   A^T = QR for m < n), which is the CPU drivers' solution for the full-rank matrices they are
//   meant for. residuals, rank and singular_values follow the CPU's rules per driver: residuals
//   only for m > n and drivers other than gelsy (gelsd/gelss: only when every matrix has full
//   rank), rank for all but gels, singular values for gelsd/gelss; otherwise empty tensors.
// - linalg_eigvals.out: the out= form of the lowered _linalg_eigvals (lowering/linalg/eig.cpp),
//   which the generic kernel cannot derive (the names differ), with the CPU's dtype check.
#include <ATen/ExpandUtils.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_eigvals.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_qr.h>
#include <ATen/ops/linalg_solve_triangular.h>
#include <ATen/ops/linalg_svdvals.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/zeros.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include <limits>

#include "aten/tpu_tensor.h"

namespace tpu::aten {

namespace {

// An empty tensor of `sizes` with the last two dimensions column-major, as LAPACK leaves them.
at::Tensor empty_batched_column_major(at::IntArrayRef sizes, const at::TensorOptions& options) {
  std::vector<int64_t> swapped(sizes.begin(), sizes.end());
  std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
  return at::empty(swapped, options).mT();
}

std::tuple<at::Tensor, at::Tensor> geqrf_meta(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "\"geqrf_cpu\" not implemented for '", self.scalar_type(), "'");
  std::vector<int64_t> tau_sizes(self.sizes().begin(), self.sizes().end() - 2);
  tau_sizes.push_back(std::min(self.size(-2), self.size(-1)));
  return {empty_batched_column_major(self.sizes(), self.options()), at::empty(tau_sizes, self.options())};
}

std::tuple<at::Tensor&, at::Tensor&> geqrf_out_meta(const at::Tensor& self, at::Tensor& a, at::Tensor& tau) {
  auto [ra, rtau] = geqrf_meta(self);
  at::native::resize_output(a, ra.sizes());
  at::native::resize_output(tau, rtau.sizes());
  return {a, tau};
}

// PyTorch's vector right-hand side rule for solvers: b is [..., m] rather than [..., m, k].
bool is_vector_rhs(const at::Tensor& a, const at::Tensor& b) {
  if (b.dim() == 1) return true;
  return b.dim() == a.dim() - 1 && b.sizes() == a.sizes().slice(0, a.dim() - 1);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> lstsq_by_qr(
    const at::Tensor& self, const at::Tensor& other, std::optional<double> rcond,
    std::optional<c10::string_view> driver_arg) {
  TORCH_CHECK(self.dim() >= 2, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 1, "torch.linalg.lstsq: other must have at least 1 dimension.");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(),
              "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype ",
              self.scalar_type(), " and other's dtype ", other.scalar_type());
  TORCH_CHECK(self.dim() - other.dim() <= 1 && self.dim() >= other.dim(),
              "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - "
              "other.dim()) <= 1");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "This function doesn't handle types other than float and double");
  std::string driver = driver_arg ? std::string(*driver_arg) : "gelsy";
  TORCH_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  bool vector = is_vector_rhs(self, other);
  at::Tensor b = vector ? other.unsqueeze(-1) : other;
  TORCH_CHECK(self.size(-2) == b.size(-2),
              vector ? "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"
                     : "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  const int64_t m = self.size(-2), n = self.size(-1), k = b.size(-1);
  std::vector<int64_t> batch =
      at::infer_size(self.sizes().slice(0, self.dim() - 2), b.sizes().slice(0, b.dim() - 2));
  auto with = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> s = batch;
    s.insert(s.end(), tail);
    return s;
  };
  at::Tensor a = self.expand(with({m, n}));
  b = b.expand(with({m, k}));
  const auto opts = self.options();

  at::Tensor x;
  if (a.numel() == 0 || b.numel() == 0) {
    x = at::zeros(with({n, k}), opts);
  } else if (m >= n) {
    auto [q, r] = at::linalg_qr(a);
    x = at::linalg_solve_triangular(r, at::matmul(q.mT(), b), /*upper=*/true);
  } else {
    auto [q, r] = at::linalg_qr(a.mT());
    x = at::matmul(q, at::linalg_solve_triangular(r.mT(), b, /*upper=*/false));
  }

  at::Tensor sv = at::empty({0}, opts);
  at::Tensor rank = at::empty({0}, opts.dtype(at::kLong));
  if (driver != "gels") {
    if (a.numel() == 0) {
      rank = at::zeros(batch, opts.dtype(at::kLong));
    } else {
      // Singular values below rcond times the largest count as zero (CPU's default rcond:
      // machine epsilon times max(m, n)).
      double eps = self.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                     : std::numeric_limits<float>::epsilon();
      double tol = rcond && *rcond > 0 ? *rcond : eps * std::max(m, n);
      at::Tensor s = at::linalg_svdvals(a);
      rank = (s > s.amax(-1, true) * tol).sum(-1);
      if (driver == "gelsd" || driver == "gelss") sv = s;
    }
  }
  if (driver == "gelsd" || driver == "gelss")
    if (a.numel() == 0) sv = at::empty(with({std::min(m, n)}), opts);

  at::Tensor residuals = at::empty({0}, opts);
  if (m > n && driver != "gelsy") {
    bool full_rank = true;
    if (driver != "gels") full_rank = (rank == n).all().item<bool>();
    if (full_rank) residuals = (at::matmul(a, x) - b).square().sum(-2);
  }
  if (vector) x = x.squeeze(-1);
  return {x, residuals, rank, sv};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> linalg_lstsq_out(
    const at::Tensor& self, const at::Tensor& other, std::optional<double> rcond,
    std::optional<c10::string_view> driver, at::Tensor& solution, at::Tensor& residuals, at::Tensor& rank,
    at::Tensor& singular_values) {
  auto [x, res, rk, sv] = lstsq_by_qr(self, other, rcond, driver);
  at::Tensor* outs[] = {&solution, &residuals, &rank, &singular_values};
  const at::Tensor* vals[] = {&x, &res, &rk, &sv};
  for (int i = 0; i < 4; ++i) {
    TORCH_CHECK(outs[i]->scalar_type() == vals[i]->scalar_type(), "Expected out tensor to have dtype ",
                vals[i]->scalar_type(), ", but got ", outs[i]->scalar_type(), " instead");
    into(*outs[i], *vals[i]);
  }
  return {solution, residuals, rank, singular_values};
}

at::Tensor& linalg_eigvals_out(const at::Tensor& self, at::Tensor& out) {
  at::Tensor values = at::_linalg_eigvals(self);
  TORCH_CHECK(at::canCast(values.scalar_type(), out.scalar_type()),
              "torch.linalg.eigvals: Expected eigenvalues to be safely castable from ", values.scalar_type(),
              " dtype, but got eigenvalues with dtype ", out.scalar_type());
  into(out, values);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("geqrf", TORCH_FN(geqrf_meta));
  m.impl("geqrf.a", TORCH_FN(geqrf_out_meta));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lstsq", TORCH_FN(lstsq_by_qr));
  m.impl("linalg_lstsq.out", TORCH_FN(linalg_lstsq_out));
  m.impl("linalg_eigvals.out", TORCH_FN(linalg_eigvals_out));
}

}  // namespace tpu::aten
