// Ops whose output size depends on data: the size is read on the host first (a sync, as on
// CUDA), then a program specialised to that size computes the values.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/all.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/index.h>
#include <torch/library.h>

#include "aten/dynamic_shape_kernels.h"
#include "aten/tpu_tensor.h"

namespace tpu::aten {

// CPU has no float8 kernel for these (lowering/core/float8.h).
static void check_not_float8(const at::Tensor& self, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(!ir::is_float8(to_ir(self.scalar_type())), "\"", op, "\" not implemented for '",
                              self.scalar_type(), "'");
}

at::Tensor nonzero_kernel(const at::Tensor& self) {
  check_not_float8(self, "nonzero");
  c10::DeviceIndex device = self.device().index();
  at::Tensor count_t =
      run_internal("torch_tpu::count_nonzero", {self}, {}, {ir::Type{ir::DType::I64, {}}}, device)[0];
  int64_t count = to_cpu(count_t).item<int64_t>();
  return run_internal("torch_tpu::nonzero", {self}, {}, {ir::Type{ir::DType::I64, {count, self.dim()}}},
                      device)[0];
}

c10::List<std::optional<at::Tensor>> expand_masks(const c10::List<std::optional<at::Tensor>>& indices) {
  c10::List<std::optional<at::Tensor>> out;
  for (const std::optional<at::Tensor>& idx : indices) {
    if (idx && idx->defined() && (idx->scalar_type() == at::kBool || idx->scalar_type() == at::kByte)) {
      at::Tensor nz = nonzero_kernel(*idx);
      for (int64_t d = 0; d < idx->dim(); ++d) out.push_back(nz.select(1, d));
    } else {
      out.push_back(idx);
    }
  }
  return out;
}

bool has_mask(const c10::List<std::optional<at::Tensor>>& indices) {
  for (const std::optional<at::Tensor>& idx : indices)
    if (idx && idx->defined() && (idx->scalar_type() == at::kBool || idx->scalar_type() == at::kByte))
      return true;
  return false;
}

namespace {

at::Tensor masked_select_kernel(const at::Tensor& self, const at::Tensor& mask) {
  auto [s, m] = at::expand_outplace(self, mask);
  // Indexing a 0-d tensor with a 0-d mask would give a 0-d result; masked_select is always 1-d.
  at::Tensor values = s->dim() == 0 ? s->reshape({1}) : *s;
  at::Tensor where = m->dim() == 0 ? m->reshape({1}) : *m;
  return at::index(values, c10::List<std::optional<at::Tensor>>({std::optional<at::Tensor>(where)}));
}

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "masked_select(): self and result must have the same scalar type");
  return into(out, masked_select_kernel(self, mask));
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type", out.scalar_type());
  return into(out, nonzero_kernel(self));
}

// repeat_interleave(repeats, *, output_size): index i repeated repeats[i] times. Without
// output_size the repeats are read on the host (for the size and CPU's checks).
at::Tensor repeat_interleave_kernel(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
              "repeats has to be Long or Int tensor");
  int64_t total = 0;
  if (output_size) {
    total = output_size->expect_int();
  } else {
    at::Tensor host = to_cpu(repeats).to(at::kLong);
    TORCH_CHECK(host.numel() == 0 || host.min().item<int64_t>() >= 0, "repeats can not be negative");
    total = host.sum().item<int64_t>();
  }
  ir::DType dtype = repeats.scalar_type() == at::kLong ? ir::DType::I64 : ir::DType::I32;
  return run_internal("torch_tpu::repeat_interleave", {repeats}, {}, {ir::Type{dtype, {total}}},
                      repeats.device().index())[0];
}

// bincount(self, weights, minlength): the length max(self) + 1 (at least minlength) is read on
// the host, as are PyTorch's checks on the values. Counts are int64; weights give float32 for
// float32 weights and float64 otherwise, as on CPU.
at::Tensor bincount_kernel(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                           c10::SymInt minlength_s) {
  const int64_t minlength = minlength_s.expect_int();
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK(self.dim() == 1 && at::isIntegralType(self.scalar_type(), /*includeBool=*/false),
              "bincount only supports 1-d non-negative integral inputs.");
  const bool weighted = weights.has_value() && weights->defined();
  if (weighted)
    TORCH_CHECK(weights->dim() == 1 && weights->size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
  int64_t size = minlength;
  if (self.numel() > 0) {
    at::Tensor host = to_cpu(self).to(at::kLong);
    TORCH_CHECK(host.min().item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
    size = std::max(size, host.max().item<int64_t>() + 1);
  }
  ir::DType dtype =
      !weighted ? ir::DType::I64 : (weights->scalar_type() == at::kFloat ? ir::DType::F32 : ir::DType::F64);
  std::vector<at::Tensor> inputs{self};
  if (weighted) inputs.push_back(*weights);
  return run_internal(weighted ? "torch_tpu::bincount_weighted" : "torch_tpu::bincount", inputs, {},
                      {ir::Type{dtype, {size}}}, self.device().index())[0];
}

// (values, inverse, counts) of unique / unique_consecutive over all elements, or over the slices
// along `dim`; inverse and counts are empty when not asked for, as on CPU.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_runs(const at::Tensor& self, bool consecutive,
                                                           std::optional<int64_t> dim, bool return_inverse,
                                                           bool return_counts) {
  check_not_float8(self, consecutive ? "unique_consecutive" : "unique");
  c10::DeviceIndex device = self.device().index();
  at::Tensor rows;
  if (dim) {
    int64_t d = c10::maybe_wrap_dim(*dim, self.dim());
    rows = self.movedim(d, 0);
    rows = rows.reshape({rows.size(0), rows.numel() / std::max<int64_t>(rows.size(0), 1)});
  } else {
    rows = self.reshape({self.numel(), 1});
  }
  const char* count_op = consecutive ? "torch_tpu::unique_consecutive_count" : "torch_tpu::unique_count";
  at::Tensor count_t = run_internal(count_op, {rows}, {}, {ir::Type{ir::DType::I64, {}}}, device)[0];
  int64_t count = to_cpu(count_t).item<int64_t>();
  const int64_t n = rows.size(0);
  std::vector<ir::Type> types = {ir::Type{to_ir(self.scalar_type()), {count, rows.size(1)}},
                                 ir::Type{ir::DType::I64, {n}}, ir::Type{ir::DType::I64, {count}}};
  std::vector<at::Tensor> r = run_internal(
      consecutive ? "torch_tpu::unique_consecutive" : "torch_tpu::unique", {rows}, {}, types, device);
  at::Tensor values, inverse;
  if (dim) {
    int64_t d = c10::maybe_wrap_dim(*dim, self.dim());
    std::vector<int64_t> sizes = self.movedim(d, 0).sizes().vec();
    sizes[0] = count;
    values = r[0].reshape(sizes).movedim(0, d).contiguous();
    inverse = r[1];
  } else {
    values = r[0].reshape({count});
    inverse = r[1].reshape(self.sizes());
  }
  at::Tensor none = at::empty({0}, self.options().dtype(at::kLong));
  return {values, return_inverse ? inverse : none, return_counts ? r[2] : none};
}

// _unique2(self, sorted, return_inverse, return_counts): always sorted (a valid order for
// sorted=False too).
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool, bool return_inverse,
                                                       bool return_counts) {
  return unique_runs(self, false, std::nullopt, return_inverse, return_counts);
}

std::tuple<at::Tensor, at::Tensor> unique1(const at::Tensor& self, bool, bool return_inverse) {
  auto [values, inverse, counts] = unique_runs(self, false, std::nullopt, return_inverse, false);
  return {values, inverse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts,
                                                                  std::optional<int64_t> dim) {
  return unique_runs(self, true, dim, return_inverse, return_counts);
}

bool equal(const at::Tensor& self, const at::Tensor& other) {
  if (self.sizes() != other.sizes()) return false;
  return to_cpu(at::all(at::eq(self, other))).item<bool>();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", TORCH_FN(nonzero_kernel));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("masked_select", TORCH_FN(masked_select_kernel));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("equal", TORCH_FN(equal));
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("_unique", TORCH_FN(unique1));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave_kernel));
  m.impl("bincount", TORCH_FN(bincount_kernel));
}

}  // namespace tpu::aten
