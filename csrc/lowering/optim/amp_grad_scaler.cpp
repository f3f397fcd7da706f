// The two ops behind torch.amp.GradScaler, with the semantics of PyTorch's CPU and CUDA kernels
// (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp, cuda/AmpKernels.cu):
//
// _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale): every gradient is
// multiplied in place by inv_scale (in float32 opmath for half types, left untouched when
// inv_scale == 1), and found_inf becomes 1.0 when any element of any gradient is inf or NaN.
// found_inf is never reset to 0: zeroing it is the caller's job.
//
// _amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff, interval): after a step
// with infs the scale backs off and the tracker restarts; otherwise the tracker counts the step,
// and the scale grows (unless that would overflow float32) once it reaches the interval.
//
// Both stay on the device (no host sync): the decisions are selects on 0-d values.
#include <stdexcept>

#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {
namespace {

using ir::DType;
using ir::Value;

// A one-element tensor argument as a 0-d value of dtype `t`.
Value scalar_of(Ctx& c, std::string_view name, DType t) {
  return hlo::reshape(c.b, hlo::convert(c.b, c.tensor(name), t), {});
}

void require_float32(const Ctx& c, std::string_view name, const char* what) {
  if (c.tensor(name).dtype() != DType::F32)
    throw std::invalid_argument(std::string(what) + " must be a float tensor.");
}

// Returns the unscaled gradients, then found_inf (schema order of the written arguments).
std::vector<Value> lower_unscale(Ctx& c) {
  const std::vector<Value>& grads = c.arg("self").values;
  require_float32(c, "found_inf", "found_inf");
  require_float32(c, "inv_scale", "inv_scale");
  Value inv = scalar_of(c, "inv_scale", DType::F32);
  Value inv_is_one = hlo::compare(c.b, inv, hlo::constant(c.b, DType::F32, 1.0), "EQ");
  Value any_bad = hlo::constant(c.b, DType::Bool, 0);
  std::vector<Value> outs;
  for (const Value& g : grads) {
    if (!ir::is_floating(g.dtype()) || ir::is_float8(g.dtype()))
      throw std::invalid_argument(
          std::string("\"_amp_foreach_non_finite_check_and_unscale_tpu\" not implemented for '") +
          ir::torch_name(g.dtype()) + "'");
    // float32 opmath for half types; float64 gradients are scaled in double (val * (double)inv).
    const DType t = g.dtype() == DType::F64 ? DType::F64 : DType::F32;
    Value x = hlo::convert(c.b, g, t);
    Value bad = hlo::logical_not(c.b, hlo::is_finite(c.b, x));
    std::vector<int64_t> dims(g.rank());
    for (int64_t d = 0; d < g.rank(); ++d) dims[d] = d;
    if (g.rank() > 0)
      bad = hlo::reduce(c.b, bad, hlo::constant(c.b, DType::Bool, 0), dims, hlo::Combiner::Or);
    any_bad = hlo::or_(c.b, any_bad, bad);
    Value scaled = hlo::mul(c.b, x, hlo::broadcast_in_dim(c.b, hlo::convert(c.b, inv, t), g.shape(), {}));
    Value keep = hlo::broadcast_in_dim(c.b, inv_is_one, g.shape(), {});
    outs.push_back(hlo::convert(c.b, hlo::select(c.b, keep, x, scaled), g.dtype()));
  }
  const Value& found = c.tensor("found_inf");
  Value bad = hlo::broadcast_in_dim(c.b, any_bad, found.shape(), {});
  outs.push_back(hlo::select(c.b, bad, hlo::full(c.b, found.type, 1.0), found));
  return outs;
}

// Returns the new scale and the new growth tracker.
std::vector<Value> lower_update_scale(Ctx& c) {
  require_float32(c, "self", "current_scale");
  if (c.tensor("growth_tracker").dtype() != DType::I32)
    throw std::invalid_argument("growth_tracker must be an int tensor.");
  require_float32(c, "found_inf", "found_inf");
  const Value& scale0 = c.tensor("self");
  const Value& tracker0 = c.tensor("growth_tracker");
  Value scale = hlo::reshape(c.b, scale0, {});
  Value tracker = hlo::reshape(c.b, tracker0, {});
  // `if (*found_inf)`: any nonzero value, NaN included.
  Value found =
      hlo::compare(c.b, scalar_of(c, "found_inf", DType::F32), hlo::constant(c.b, DType::F32, 0.0), "NE");
  // The factors are doubles: scale * factor is computed in double and rounded to float once.
  Value scale64 = hlo::convert(c.b, scale, DType::F64);
  auto times = [&](std::string_view factor) {
    return hlo::convert(c.b, hlo::mul(c.b, scale64, scalar_of(c, factor, DType::F64)), DType::F32);
  };
  Value backed_off = times("scale_backoff_factor");
  Value grown = times("scale_growth_factor");
  Value successful = hlo::add(c.b, tracker, hlo::constant_int(c.b, DType::I32, 1));
  // The int tracker is compared with the int64 interval as C++ does, after promotion.
  Value reached = hlo::compare(c.b, hlo::convert(c.b, successful, DType::I64),
                               hlo::constant_int(c.b, DType::I64, c.int_arg("growth_interval")), "EQ");
  Value grow = hlo::and_(c.b, reached, hlo::is_finite(c.b, grown));
  Value new_scale = hlo::select(c.b, found, backed_off, hlo::select(c.b, grow, grown, scale));
  Value zero = hlo::constant_int(c.b, DType::I32, 0);
  Value new_tracker = hlo::select(c.b, found, zero, hlo::select(c.b, reached, zero, successful));
  return {hlo::reshape(c.b, new_scale, scale0.shape()), hlo::reshape(c.b, new_tracker, tracker0.shape())};
}

}  // namespace

// Bound as written (they mutate their arguments); the functional forms torch generates
// (_amp_foreach_non_finite_check_and_unscale, _amp_update_scale) clone and call these.
TPU_LOWERING("aten::_amp_foreach_non_finite_check_and_unscale_", lower_unscale,
             reads({"self", "found_inf", "inv_scale"}));
TPU_LOWERING("aten::_amp_update_scale_", lower_update_scale,
             reads({"self", "growth_tracker", "found_inf", "scale_growth_factor", "scale_backoff_factor",
                    "growth_interval"}));

}  // namespace tpu::lowering
