#include "aten/tpu_tensor.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>

#include "exec/device_context.h"
#include "exec/executor.h"
#include "exec/fused_graph.h"

namespace tpu::aten {

using ir::DType;

ir::DType to_ir(c10::ScalarType t) {
  switch (t) {
    case c10::kBool:
      return DType::Bool;
    case c10::kByte:
      return DType::U8;
    case c10::kChar:
      return DType::I8;
    case c10::kShort:
      return DType::I16;
    case c10::kInt:
      return DType::I32;
    case c10::kLong:
      return DType::I64;
    case c10::kUInt16:
      return DType::U16;
    case c10::kUInt32:
      return DType::U32;
    case c10::kUInt64:
      return DType::U64;
    case c10::kHalf:
      return DType::F16;
    case c10::kBFloat16:
      return DType::BF16;
    case c10::kFloat:
      return DType::F32;
    case c10::kDouble:
      return DType::F64;
    case c10::kComplexFloat:
      return DType::C64;
    case c10::kComplexDouble:
      return DType::C128;
    case c10::kFloat8_e4m3fn:
      return DType::F8E4M3FN;
    case c10::kFloat8_e5m2:
      return DType::F8E5M2;
    case c10::kFloat8_e4m3fnuz:
      return DType::F8E4M3FNUZ;
    case c10::kFloat8_e5m2fnuz:
      return DType::F8E5M2FNUZ;
    case c10::kFloat8_e8m0fnu:
      return DType::F8E8M0FNU;
    case c10::kComplexHalf:
      TORCH_CHECK_NOT_IMPLEMENTED(false,
                                  "torch_tpu stores ComplexHalf tensors but computes only copies, "
                                  "conversions and views of them (XLA has no complex32 type); "
                                  "convert with .cfloat() first");
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu does not support dtype ", t);
  }
}

c10::ScalarType to_torch(ir::DType t) {
  switch (t) {
    case DType::Bool:
      return c10::kBool;
    case DType::U8:
      return c10::kByte;
    case DType::I8:
      return c10::kChar;
    case DType::I16:
      return c10::kShort;
    case DType::I32:
      return c10::kInt;
    case DType::I64:
      return c10::kLong;
    case DType::U16:
      return c10::kUInt16;
    case DType::U32:
      return c10::kUInt32;
    case DType::U64:
      return c10::kUInt64;
    case DType::F16:
      return c10::kHalf;
    case DType::BF16:
      return c10::kBFloat16;
    case DType::F32:
      return c10::kFloat;
    case DType::F64:
      return c10::kDouble;
    case DType::C64:
      return c10::kComplexFloat;
    case DType::C128:
      return c10::kComplexDouble;
    case DType::F8E4M3FN:
      return c10::kFloat8_e4m3fn;
    case DType::F8E5M2:
      return c10::kFloat8_e5m2;
    case DType::F8E4M3FNUZ:
      return c10::kFloat8_e4m3fnuz;
    case DType::F8E5M2FNUZ:
      return c10::kFloat8_e5m2fnuz;
    case DType::F8E8M0FNU:
      return c10::kFloat8_e8m0fnu;
  }
  return c10::kFloat;
}

std::vector<int64_t> dense_strides(c10::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

exec::Storage* storage_of(const at::TensorBase& t) {
  auto* s = static_cast<exec::Storage*>(t.storage().data_ptr().get_context());
  TORCH_INTERNAL_ASSERT(s != nullptr, "tpu tensor without a device storage");
  return s;
}

int add_view(exec::OpCall& call, const at::Tensor& t) {
  exec::Storage* s = storage_of(t);
  int index = -1;
  for (size_t i = 0; i < call.storages.size(); ++i)
    if (call.storages[i] == s) index = static_cast<int>(i);
  if (index < 0) {
    // The call's key names the storage's layout (padded or flat): a value a fused graph
    // produced takes its layout when the graph has run, which a strict op waits for.
    if (fused_mode()) {
      s->resolve();
    } else {
      exec::concrete_buffer(s);
    }
    index = static_cast<int>(call.storages.size());
    call.storages.push_back(s);
  }
  exec::TensorView v;
  v.storage = index;
  v.dtype = to_ir(t.scalar_type());
  v.geometry.sizes = t.sizes().vec();
  v.geometry.strides = t.strides().vec();
  v.geometry.offset = t.storage_offset();
  call.views.push_back(std::move(v));
  return static_cast<int>(call.views.size()) - 1;
}

at::Tensor empty_tpu(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype,
                     c10::DeviceIndex device) {
  c10::DeviceIndex saved = current_device();
  set_current_device(device);
  at::Tensor t = at::detail::empty_strided_generic(sizes, strides, tpu_allocator(),
                                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype);
  set_current_device(saved);
  return t;
}

bool fused_mode() { return exec::mode() == exec::Mode::Fused; }

std::vector<at::Tensor> run_op(const exec::CompiledOpPtr& op, exec::OpCall& call, std::string key) {
  std::vector<at::Tensor> result;
  const auto& news = op->plan.new_outputs;
  if (fused_mode()) {
    const auto device = static_cast<c10::DeviceIndex>(call.device);
    std::vector<std::shared_ptr<exec::PendingValue>> pending =
        exec::record(op, std::move(call), std::move(key));
    for (size_t k = 0; k < pending.size(); ++k) {
      if (news[k].undefined) {
        result.emplace_back();
        continue;
      }
      at::Tensor t = empty_tpu(news[k].sizes, news[k].strides, to_torch(news[k].dtype), device);
      exec::Storage* s = storage_of(t);
      s->pending = pending[k];
      s->dtype = news[k].dtype;
      s->defined = true;
      result.push_back(std::move(t));
    }
    return result;
  }
  std::vector<runtime::BufferPtr> outs = launch_checked(*op, call);
  for (size_t k = 0; k < outs.size(); ++k)
    result.push_back(news[k].undefined
                         ? at::Tensor()
                         : wrap_buffer(outs[k], news[k].sizes, news[k].strides, to_torch(news[k].dtype),
                                       static_cast<c10::DeviceIndex>(call.device),
                                       k < op->output_forms.size() ? op->output_forms[k] : nullptr));
  return result;
}

at::Tensor wrap_buffer(runtime::BufferPtr buffer, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       c10::ScalarType dtype, c10::DeviceIndex device, exec::PaddedFormPtr form) {
  at::Tensor t = empty_tpu(sizes, strides, dtype, device);
  exec::Storage* s = storage_of(t);
  s->set_buffer(std::move(buffer), to_ir(dtype), std::move(form));
  return t;
}

exec::OpCall internal_call(const char* name, c10::DeviceIndex device) {
  const lowering::Lowering* l = lowering::find_lowering(name);
  TORCH_INTERNAL_ASSERT(l != nullptr, "missing internal lowering ", name);
  exec::OpCall call;
  call.lowering = l;
  call.op_name = name;
  call.device = device;
  return call;
}

std::vector<at::Tensor> run_internal(const char* name, const std::vector<at::Tensor>& inputs,
                                     const std::vector<at::Tensor>& written,
                                     const std::vector<ir::Type>& result_types, c10::DeviceIndex device) {
  exec::OpCall call = internal_call(name, device);
  for (const at::Tensor& t : inputs) {
    exec::ArgSpec a;
    a.kind = lowering::Arg::Kind::Tensor;
    a.view = add_view(call, t);
    call.args.push_back(a);
  }
  return run_internal_call(call, written, result_types);
}

std::vector<at::Tensor> run_internal_call(exec::OpCall& call, const std::vector<at::Tensor>& written,
                                          const std::vector<ir::Type>& result_types) {
  for (const at::Tensor& t : written) call.written_views.push_back(add_view(call, t));
  // The caller chooses the result types (nonzero's row count comes from the data), so they
  // are part of the compile-cache key: a trailing argument the lowerings ignore.
  exec::ArgSpec types;
  types.kind = lowering::Arg::Kind::IntList;
  types.result_types = true;
  for (const ir::Type& t : result_types) {
    types.ints.push_back(static_cast<int64_t>(t.dtype));
    types.ints.push_back(t.rank());
    types.ints.insert(types.ints.end(), t.shape.begin(), t.shape.end());
  }
  call.args.push_back(types);
  std::string key = call.key();
  exec::CompiledOpPtr op = exec::find_or_compile(
      call, key,
      [&] {
        exec::OutputPlan plan;
        plan.result_types = result_types;
        for (size_t k = written.size(); k < result_types.size(); ++k) {
          const ir::Type& t = result_types[k];
          plan.new_outputs.push_back({t.shape, dense_strides(t.shape), t.dtype});
        }
        return plan;
      },
      !fused_mode());
  return run_op(op, call, std::move(key));
}

void raise_check_failure(const exec::CheckFailure& e) {
  switch (e.kind) {
    case lowering::CheckError::Index:
      TORCH_CHECK_INDEX(false, e.what());
    case lowering::CheckError::LinAlg:
      TORCH_CHECK_LINALG(false, e.what());
    default:
      TORCH_CHECK(false, e.what());
  }
}

std::vector<runtime::BufferPtr> launch_checked(const exec::CompiledOp& op, const exec::OpCall& call) {
  try {
    return exec::launch(op, call);
  } catch (const exec::CheckFailure& e) {
    raise_check_failure(e);
  }
}

void raise_failed_checks() {
  try {
    exec::raise_failed_checks();
  } catch (const exec::CheckFailure& e) {
    raise_check_failure(e);
  }
}

at::Tensor& into(at::Tensor& out, const at::Tensor& result) {
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

bool covers_its_storage(const at::Tensor& t) {
  return lowering::covers_storage({t.sizes().vec(), t.strides().vec(), t.storage_offset()},
                                  storage_of(t)->numel_as(to_ir(t.scalar_type())));
}

void download_into(const at::Tensor& t, const at::Tensor& out) {
  if (t.scalar_type() == c10::kComplexHalf) {  // stored as (re, im) pairs of halves
    at::view_as_real(out).copy_(to_cpu(at::view_as_real(t)));
    return;
  }
  at::Tensor src = t;
  exec::Storage* s = storage_of(src);
  DType dtype = to_ir(t.scalar_type());
  runtime::BufferPtr buffer = exec::concrete_buffer(s);
  bool whole = buffer && s->dtype == dtype && covers_its_storage(t);
  // A part of a small storage (the last token of the ids, a loss of a batch) is cut out on the
  // host: one transfer and no program to compile for its position and shape.
  constexpr int64_t kSmallStorage = 1 << 20;
  if (!whole && buffer && s->dtype == dtype && s->nbytes <= kSmallStorage) {
    raise_failed_checks();
    at::Tensor host = at::empty({s->numel_as(dtype)}, out.options());
    if (host.numel() > 0)
      exec::download_elements(*buffer, s->padded.get(), static_cast<int>(out.element_size()), host.data_ptr(),
                              host.nbytes());
    out.copy_(host.as_strided(t.sizes(), t.strides(), t.storage_offset()));
    return;
  }
  if (!whole) {
    src = run_internal("torch_tpu::view_copy", {t}, {}, {ir::Type{dtype, t.sizes().vec()}},
                       t.device().index())[0];
    buffer = exec::concrete_buffer(storage_of(src));
  }
  // After the value exists (a fused graph just ran): its own checks are reported here too.
  raise_failed_checks();
  exec::Storage* held = storage_of(src);
  if (out.numel() > 0)
    exec::download_elements(*buffer, held->padded.get(), static_cast<int>(out.element_size()), out.data_ptr(),
                            out.nbytes());
}

void adopt_host_tensor(const at::Tensor& dst, const at::Tensor& host) {
  if (dst.numel() == 0) return;
  exec::Storage* s = storage_of(dst);
  DType dtype = to_ir(dst.scalar_type());
  bool whole = host.is_contiguous() && host.scalar_type() == dst.scalar_type() &&
               host.sizes() == dst.sizes() && dst.scalar_type() != c10::kComplexHalf && !dst.is_conj() &&
               !dst.is_neg() && covers_its_storage(dst);
  if (!whole) {
    dst.copy_(host);
    return;
  }
  auto owner = std::make_shared<at::Tensor>(host);
  s->set_buffer(
      exec::upload_aliasing(host.const_data_ptr(), dtype, {host.numel()}, dst.device().index(), owner),
      dtype);
}

at::Tensor to_cpu(const at::Tensor& t) {
  at::Tensor out = at::empty(t.sizes(), t.options().device(c10::kCPU));
  download_into(t, out);
  return out;
}

}  // namespace tpu::aten
