// Glue for the nn ops PyTorch hands to an out-of-tree backend through hooks rather than through
// an op with a lowering-friendly schema:
//
// - Convolution: aten::_convolution checks the arguments (PyTorch's own messages), views 1-d
//   convolutions as 2-d and calls convolution_overrideable; convolution_backward calls
//   convolution_backward_overrideable. Both are lowered (lowering/nn/convolution.cpp), but PyTorch
//   gives them no meta kernel, which the generic kernel needs to plan its outputs: the meta
//   kernels are here. Outputs are contiguous, as PyTorch's fake tensors assume for an
//   Overrideable backend (torch._C._conv_determine_backend_memory_format).
// - Batch norm: native_batch_norm updates running_mean/var in place although its schema does not
//   say so. As PyTorch's own decomposition of it does, it is routed to the ops whose schemas do:
//   _native_batch_norm_legit (training, with or without running stats) and
//   _native_batch_norm_legit_no_training (eval), which are lowered.
// - multi_margin_loss_backward / multilabel_margin_loss_backward: lowered
//   (lowering/nn/margin_loss.cpp) but without a PyTorch meta kernel; theirs are here.
// - _ctc_loss_backward: lowered (lowering/nn/ctc_loss.cpp), no PyTorch meta kernel; its gradient
//   is shaped like log_probs.
#include <ATen/core/Tensor.h>
#include <ATen/ops/_native_batch_norm_legit.h>
#include <ATen/ops/_native_batch_norm_legit_no_training.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <sstream>

#include "aten/tpu_tensor.h"

namespace tpu::aten {

namespace {

// The dtype checks of PyTorch's CPU convolution kernels, with their messages (_convolution
// leaves dtype checks to the backend).
void check_conv_types(const at::Tensor& input, const at::Tensor& weight,
                      const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", weight.scalar_type());
  TORCH_CHECK(!bias || !bias->defined() || input.scalar_type() == bias->scalar_type(), "Input type (",
              input.dtype(), ") and bias type (", bias->dtype(), ") should be the same");
  TORCH_CHECK_NOT_IMPLEMENTED(input.scalar_type() != at::kBool,
                              "\"convolution_tpu\" not implemented for 'Bool'");
}

int64_t param(at::IntArrayRef v, size_t i, int64_t fill) {
  if (v.empty()) return fill;
  return v.size() == 1 ? v[0] : v[i];
}

at::Tensor convolution_overrideable_meta(const at::Tensor& input, const at::Tensor& weight,
                                         const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                         at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                         at::IntArrayRef output_padding, int64_t groups) {
  check_conv_types(input, weight, bias);
  if (transposed) {
    // CPU's transposed-convolution kernels reject an output_padding that is neither below the
    // stride nor below the dilation (_convolution does not check it).
    static const char* names2[] = {"height", "width"};
    static const char* names3[] = {"depth", "height", "width"};
    const int64_t n = input.dim() - 2;
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) {
      int64_t op = param(output_padding, i, 0);
      ok &= op < param(stride, i, 1) || op < param(dilation, i, 1);
    }
    if (!ok && (n == 2 || n == 3)) {
      const char** names = n == 2 ? names2 : names3;
      std::ostringstream msg;
      msg << "output padding must be smaller than either stride or dilation, but got";
      const char* what[] = {"output_padding", "stride", "dilation"};
      for (int k = 0; k < 3; ++k)
        for (int64_t i = 0; i < n; ++i) {
          at::IntArrayRef v = k == 0 ? output_padding : k == 1 ? stride : dilation;
          msg << " " << what[k] << "_" << names[i] << ": " << param(v, i, k == 0 ? 0 : 1);
        }
      TORCH_CHECK(false, msg.str());
    }
    TORCH_CHECK(ok, "output padding must be smaller than either stride or dilation");
  }
  std::vector<int64_t> size(input.dim());
  size[0] = input.size(0);
  size[1] = transposed ? weight.size(1) * groups : weight.size(0);
  for (int64_t d = 2; d < input.dim(); ++d) {
    size_t i = static_cast<size_t>(d - 2);
    int64_t kernel = param(dilation, i, 1) * (weight.size(d) - 1) + 1;
    if (transposed) {
      size[d] = (input.size(d) - 1) * param(stride, i, 1) - 2 * param(padding, i, 0) + kernel +
                param(output_padding, i, 0);
    } else {
      size[d] = (input.size(d) + 2 * param(padding, i, 0) - kernel) / param(stride, i, 1) + 1;
    }
  }
  return at::empty(size, input.options());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable_meta(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef /*stride*/, at::IntArrayRef /*padding*/, at::IntArrayRef /*dilation*/,
    bool /*transposed*/, at::IntArrayRef /*output_padding*/, int64_t /*groups*/,
    std::array<bool, 3> output_mask) {
  check_conv_types(input, weight, std::nullopt);
  at::Tensor gi, gw, gb;
  if (output_mask[0]) gi = at::empty(input.sizes(), grad_output.options());
  if (output_mask[1]) gw = at::empty(weight.sizes(), grad_output.options());
  if (output_mask[2]) gb = at::empty({grad_output.size(1)}, grad_output.options());
  return {gi, gw, gb};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    bool training, double momentum, double eps) {
  bool has_mean = running_mean && running_mean->defined();
  bool has_var = running_var && running_var->defined();
  TORCH_CHECK_VALUE(has_mean == has_var,
                    "running_mean and running_var must either both be None or neither be None");
  if (!has_mean) {
    TORCH_CHECK(training, "running_mean and running_var must be defined in evaluation mode");
    return at::_native_batch_norm_legit(input, weight, bias, training, momentum, eps);
  }
  at::Tensor mean = *running_mean, var = *running_var;
  if (training) return at::_native_batch_norm_legit(input, weight, bias, mean, var, training, momentum, eps);
  return at::_native_batch_norm_legit_no_training(input, weight, bias, mean, var, momentum, eps);
}

// out= forms: the functional op, then its three results resized into the out tensors
// (native_batch_norm is glue itself; _native_batch_norm_legit.out also writes running_mean/var,
// so register.cpp does not pair either with a functional).
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> into3(std::tuple<at::Tensor, at::Tensor, at::Tensor> r,
                                                        at::Tensor& out, at::Tensor& save_mean,
                                                        at::Tensor& save_invstd) {
  into(out, std::get<0>(r));
  into(save_mean, std::get<1>(r));
  into(save_invstd, std::get<2>(r));
  return {out, save_mean, save_invstd};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> native_batch_norm_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    bool training, double momentum, double eps, at::Tensor& out, at::Tensor& save_mean,
    at::Tensor& save_invstd) {
  return into3(native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps),
               out, save_mean, save_invstd);
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> native_batch_norm_legit_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps,
    at::Tensor& out, at::Tensor& save_mean, at::Tensor& save_invstd) {
  return into3(
      at::_native_batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps),
      out, save_mean, save_invstd);
}

// The margin losses' backward ops have no meta kernel either; their gradient is shaped like self
// (contiguous, as the CPU kernels return it).
at::Tensor multi_margin_loss_backward_meta(const at::Tensor& /*grad_output*/, const at::Tensor& self,
                                           const at::Tensor& /*target*/, const at::Scalar& /*p*/,
                                           const at::Scalar& /*margin*/,
                                           const std::optional<at::Tensor>& /*weight*/,
                                           int64_t /*reduction*/) {
  return at::empty(self.sizes(), self.options());
}

at::Tensor multilabel_margin_loss_backward_meta(const at::Tensor& /*grad_output*/, const at::Tensor& self,
                                                const at::Tensor& /*target*/, int64_t /*reduction*/,
                                                const at::Tensor& /*is_target*/) {
  return at::empty(self.sizes(), self.options());
}

at::Tensor ctc_loss_backward_meta(const at::Tensor& /*grad*/, const at::Tensor& log_probs,
                                  const at::Tensor& /*targets*/, at::IntArrayRef /*input_lengths*/,
                                  at::IntArrayRef /*target_lengths*/,
                                  const at::Tensor& /*neg_log_likelihood*/, const at::Tensor& /*log_alpha*/,
                                  int64_t /*blank*/, bool /*zero_infinity*/) {
  return at::empty(log_probs.sizes(), log_probs.options());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("_ctc_loss_backward", TORCH_FN(ctc_loss_backward_meta));
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable_meta));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable_meta));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_loss_backward_meta));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabel_margin_loss_backward_meta));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm", TORCH_FN(native_batch_norm));
  m.impl("native_batch_norm.out", TORCH_FN(native_batch_norm_out));
  m.impl("_native_batch_norm_legit.out", TORCH_FN(native_batch_norm_legit_out));
}

}  // namespace tpu::aten
