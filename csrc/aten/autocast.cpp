// Autocast for tpu (the AutocastPrivateUse1 key): the same op policy lists CUDA and XPU use
// (ATen's AT_FORALL_* macros), plus CPU's promotion of cat/stack/index_copy, so mixed-precision
// code written for CUDA behaves the same here. Every other op falls through to the tpu kernels.
// The default lower-precision dtype is bfloat16 (what TPUs compute in), float16 also works.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace tpu::aten {

namespace {

// The names ATen's fp32_append_dtype signatures are written with.
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(
      false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
      "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
      "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
      "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
      "safe to autocast.");
}

// Runs before any autocast region can start: set at library load.
const bool g_default_dtype = [] {
  at::autocast::set_autocast_dtype(c10::DeviceType::PrivateUse1, at::kBFloat16);
  return true;
}();

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TPU_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(TPU_LOWER_PRECISION_FP)
#define TPU_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(TPU_FP32)
#define TPU_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(TPU_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define TPU_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(TPU_PROMOTE)
  KERNEL_PRIVATEUSEONE(cat, promote)
  KERNEL_PRIVATEUSEONE(stack, promote)
  KERNEL_PRIVATEUSEONE(index_copy, promote)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
}

}  // namespace tpu::aten
