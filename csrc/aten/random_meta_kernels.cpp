// Meta kernels for random-sampling ops PyTorch ships without one, so the boxed tpu kernel can
// plan their outputs (shapes and dtypes as the CPU kernels allocate them).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace tpu::aten {

namespace {

// binomial(count, prob): CPU's result has count's sizes and dtype (prob broadcasts to it).
at::Tensor binomial_meta(const at::Tensor& count, const at::Tensor& /*prob*/,
                         std::optional<at::Generator> /*generator*/) {
  return at::empty(count.sizes(), count.options());
}

// _sample_dirichlet(alpha), _standard_gamma_grad(alpha, x): shaped like their first argument.
at::Tensor sample_dirichlet_meta(const at::Tensor& alpha, std::optional<at::Generator> /*generator*/) {
  return at::empty(alpha.sizes(), alpha.options());
}

at::Tensor standard_gamma_grad_meta(const at::Tensor& self, const at::Tensor& /*output*/) {
  return at::empty(self.sizes(), self.options());
}

// fractional_max_pool3d_backward: the gradient is shaped like the input.
at::Tensor fractional_max_pool3d_backward_meta(const at::Tensor& /*grad_output*/, const at::Tensor& self,
                                               at::IntArrayRef /*kernel_size*/,
                                               at::IntArrayRef /*output_size*/,
                                               const at::Tensor& /*indices*/) {
  return at::empty(self.sizes(), self.options());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("binomial", TORCH_FN(binomial_meta));
  m.impl("_sample_dirichlet", TORCH_FN(sample_dirichlet_meta));
  m.impl("_standard_gamma_grad", TORCH_FN(standard_gamma_grad_meta));
  m.impl("fractional_max_pool3d_backward", TORCH_FN(fractional_max_pool3d_backward_meta));
}

}  // namespace tpu::aten
