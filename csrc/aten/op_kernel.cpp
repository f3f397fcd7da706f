#include "aten/op_kernel.h"

#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "aten/dynamic_shape_kernels.h"
#include "aten/generator.h"
#include "aten/out_of_memory.h"
#include "aten/tpu_tensor.h"
#include "exec/device_context.h"
#include "exec/executor.h"
#include "exec/metrics.h"
#include "lowering/core/float8.h"

namespace tpu::aten {

using lowering::Arg;

namespace {

struct OpBinding {
  const lowering::Lowering* lowering = nullptr;
  Variant variant = Variant::Functional;
  std::optional<c10::OperatorHandle> functional;  // InPlace / Out: the functional twin
  std::string name;
  int num_args = 0;          // schema arguments passed to the lowering
  std::vector<int> written;  // schema arguments written (Mutating: every is_write argument)
  int generator_arg = -1;
};

std::mutex g_bindings_mutex;
std::unordered_map<const c10::FunctionSchema*, OpBinding> g_bindings;

const OpBinding& binding_of(const c10::OperatorHandle& op) {
  std::lock_guard<std::mutex> lock(g_bindings_mutex);
  auto it = g_bindings.find(&op.schema());
  TORCH_INTERNAL_ASSERT(it != g_bindings.end(), "torch_tpu: no lowering bound for ", op.schema().name());
  return it->second;
}

c10::TypePtr unwrap_optional(const c10::TypePtr& t) {
  if (auto opt = t->cast<c10::OptionalType>()) return opt->getElementType();
  return t;
}

const char* device_str(const at::Tensor& t) { return t.device().type() == c10::kCPU ? "cpu" : "tpu"; }

exec::HostScalar host_scalar(const c10::Scalar& s) {
  exec::HostScalar h;
  if (s.isBoolean()) {
    h.dtype = ir::DType::Bool;
    h.bytes[0] = s.toBool();
  } else if (s.isIntegral(false)) {
    h.dtype = ir::DType::I64;
    int64_t v = s.toLong();
    std::memcpy(h.bytes.data(), &v, 8);
  } else if (s.isComplex()) {
    h.dtype = ir::DType::C128;
    c10::complex<double> v = s.toComplexDouble();
    std::memcpy(h.bytes.data(), &v, 16);
  } else {
    h.dtype = ir::DType::F64;
    double v = s.toDouble();
    std::memcpy(h.bytes.data(), &v, 8);
  }
  return h;
}

exec::HostScalar host_scalar(const at::Tensor& cpu0d) {
  exec::HostScalar h;
  h.dtype = to_ir(cpu0d.scalar_type());
  std::memcpy(h.bytes.data(), cpu0d.const_data_ptr(), cpu0d.element_size());
  return h;
}

struct Unpacked {
  exec::OpCall call;
  c10::DeviceIndex device = -1;
  std::optional<at::Generator> generator;
};

void note_device(Unpacked& u, const at::Tensor& t, const std::string& op) {
  c10::DeviceIndex d = t.device().index();
  if (u.device < 0) u.device = d;
  TORCH_CHECK(u.device == d,
              "Expected all tensors to be on the same device, but found at least two devices, tpu:",
              static_cast<int>(u.device), " and tpu:", static_cast<int>(d), "! (when checking arguments for ",
              op, ")");
}

int tensor_view(Unpacked& u, const at::Tensor& t, const std::string& op) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, tpu:0 and ",
              device_str(t), "! (when checking arguments for ", op, ")");
  note_device(u, t, op);
  return add_view(u.call, t);
}

void unpack_arg(Unpacked& u, const OpBinding& bind, int index, const c10::Argument& schema_arg,
                const c10::IValue& v) {
  exec::OpCall& call = u.call;
  exec::ArgSpec a;
  const c10::TypePtr type = unwrap_optional(schema_arg.real_type());
  const c10::TypeKind kind = type->kind();
  if (kind == c10::TypeKind::GeneratorType) {
    if (!v.isNone()) u.generator = v.toGenerator();
    a.kind = Arg::Kind::Other;
  } else if (kind == c10::TypeKind::DeviceObjType) {
    if (!v.isNone()) {
      c10::Device d = v.toDevice();
      if (d.type() == c10::DeviceType::PrivateUse1 && d.has_index() && u.device < 0) u.device = d.index();
    }
    a.kind = Arg::Kind::Other;
  } else if (v.isNone()) {
    a.kind = Arg::Kind::None;
  } else if (kind == c10::TypeKind::TensorType) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      a.kind = Arg::Kind::None;
    } else if (t.device().is_cpu() && t.dim() == 0) {
      // CPU scalars (Python numbers wrapped by the arg parser, torch.tensor(2.)) mix with
      // device tensors as in CUDA; they travel as runtime 0-d inputs.
      a.kind = Arg::Kind::Tensor;
      a.scalar = static_cast<int>(call.scalars.size());
      call.scalars.push_back(host_scalar(t));
      a.wrapped_number = t.unsafeGetTensorImpl()->is_wrapped_number();
    } else {
      a.kind = Arg::Kind::Tensor;
      a.view = tensor_view(u, t, bind.name);
    }
  } else if (kind == c10::TypeKind::ListType) {
    c10::TypePtr elem = unwrap_optional(type->castRaw<c10::ListType>()->getElementType());
    if (elem->kind() == c10::TypeKind::TensorType) {
      a.kind = Arg::Kind::TensorList;
      const auto& list = v.toListRef();
      auto cpu_scalar = [](const c10::IValue& e) {
        return e.isTensor() && e.toTensor().defined() && e.toTensor().device().is_cpu() &&
               e.toTensor().dim() == 0;
      };
      if (!list.empty() && std::all_of(list.begin(), list.end(), cpu_scalar)) {
        // A list of CPU 0-d tensors (a compiled optimizer's per-parameter bias corrections)
        // travels as runtime scalars, like a single CPU scalar argument.
        for (const c10::IValue& e : list) {
          a.list_scalars.push_back(static_cast<int>(call.scalars.size()));
          call.scalars.push_back(host_scalar(e.toTensor()));
        }
        call.args.push_back(std::move(a));
        return;
      }
      for (const c10::IValue& e : list) {
        if (e.isNone() || !e.toTensor().defined()) {
          a.list_views.push_back(-1);
        } else {
          a.list_views.push_back(tensor_view(u, e.toTensor(), bind.name));
        }
      }
    } else if (elem->kind() == c10::TypeKind::NumberType) {
      // Scalar lists (the per-tensor scalars of _foreach_*.ScalarList) arrive as a TensorList
      // of runtime 0-d values, so changing them (bias corrections every step) never recompiles.
      a.kind = Arg::Kind::TensorList;
      a.wrapped_number = true;
      for (const c10::IValue& e : v.toListRef()) {
        a.list_scalars.push_back(static_cast<int>(call.scalars.size()));
        call.scalars.push_back(host_scalar(e.toScalar()));
      }
    } else if (elem->kind() == c10::TypeKind::FloatType) {
      TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: float lists are not supported for ", bind.name);
    } else {
      a.kind = Arg::Kind::IntList;
      if (v.isIntList()) {
        a.ints = v.toIntVector();
      } else {
        // bool[] (e.g. output_mask) arrives as 0/1.
        for (const c10::IValue& e : v.toListRef())
          a.ints.push_back(e.isInt()    ? e.toInt()
                           : e.isBool() ? e.toBool()
                                        : e.toSymInt().guard_int(__FILE__, __LINE__));
      }
    }
  } else if (kind == c10::TypeKind::NumberType || kind == c10::TypeKind::FloatType) {
    a.kind = Arg::Kind::Scalar;
    c10::Scalar s = v.toScalar();
    a.wrapped_number = true;
    if (bind.lowering->static_args & (1u << index)) {
      a.is_static = true;
      a.d = s.isComplex() ? s.toComplexDouble().real() : s.toDouble();
      a.i = s.isIntegral(true) ? s.toLong() : static_cast<int64_t>(a.d);
    }
    a.scalar = static_cast<int>(call.scalars.size());
    call.scalars.push_back(host_scalar(s));
  } else if (kind == c10::TypeKind::IntType || kind == c10::TypeKind::SymIntType) {
    a.kind = Arg::Kind::Int;
    a.i = v.isInt() ? v.toInt() : v.toSymInt().guard_int(__FILE__, __LINE__);
  } else if (kind == c10::TypeKind::BoolType) {
    a.kind = Arg::Kind::Bool;
    a.i = v.toBool();
  } else if (kind == c10::TypeKind::StringType) {
    a.kind = Arg::Kind::String;
    a.s = v.toStringRef();
  } else if (kind == c10::TypeKind::ScalarTypeType) {
    a.kind = Arg::Kind::ScalarType;
    a.i = static_cast<int64_t>(to_ir(static_cast<c10::ScalarType>(v.toInt())));
  } else {
    a.kind = Arg::Kind::Other;  // layout, memory format, pin_memory
  }
  call.args.push_back(std::move(a));
}

// --- meta inference -----------------------------------------------------------------------

at::Tensor to_meta(const at::Tensor& t) {
  if (!t.defined()) return t;
  if (t.device().is_cpu()) {
    // Wrapped Python numbers stay CPU tensors: meta kernels written in Python (add.Tensor's)
    // turn them back into numbers, which PyTorch only allows for CPU tensors.
    if (t.unsafeGetTensorImpl()->is_wrapped_number()) return t;
    return at::empty({}, t.options().device(c10::kMeta));
  }
  int64_t storage_elems = static_cast<int64_t>(t.storage().nbytes()) / t.element_size();
  at::Tensor base = at::empty({storage_elems}, t.options().device(c10::kMeta));
  return base.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

c10::IValue to_meta(const c10::IValue& v) {
  if (v.isTensor()) return to_meta(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(to_meta(t));
    return out;
  }
  if (v.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> out;
    for (const c10::IValue& e : v.toListRef())
      out.push_back(e.isNone() ? std::optional<at::Tensor>()
                               : std::optional<at::Tensor>(to_meta(e.toTensor())));
    return out;
  }
  if (v.isDevice() && v.toDevice().type() == c10::DeviceType::PrivateUse1) return c10::Device(c10::kMeta);
  if (v.isGenerator()) return c10::IValue();
  return v;
}

// Runs `op` on meta copies of `args`; returns the meta stack after the call (its returns),
// and the meta arguments (to read back in-place/out results).
std::vector<c10::IValue> run_meta(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                  std::vector<c10::IValue>* meta_args) {
  at::AutoDispatchBelowADInplaceOrView guard;
  std::vector<c10::IValue> stack;
  stack.reserve(args.size());
  for (const c10::IValue& v : args) stack.push_back(to_meta(v));
  if (meta_args) *meta_args = stack;
  op.callBoxed(stack);
  return stack;
}

void collect_tensors(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) out.push_back(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) collect_tensors(e, out);
  }
}

ir::Type type_of(const at::Tensor& t) { return ir::Type{to_ir(t.scalar_type()), t.sizes().vec()}; }

exec::OutputPlan::NewOutput new_output(const at::Tensor& m) {
  std::vector<int64_t> strides = m.strides().vec();
  if (lowering::dense_permutation(m.sizes().vec(), strides).empty()) strides = dense_strides(m.sizes());
  return {m.sizes().vec(), strides, to_ir(m.scalar_type())};
}

bool has_meta_kernel(const c10::OperatorHandle& op) {
  return op.hasKernelForDispatchKey(c10::DispatchKey::Meta) ||
         op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
         op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) ||
         op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional);
}

exec::OutputPlan plan_outputs(const c10::OperatorHandle& op, const OpBinding& bind,
                              const std::vector<c10::IValue>& args) {
  exec::OutputPlan plan;
  const auto& returns = op.schema().returns();
  switch (bind.variant) {
    case Variant::Functional: {
      std::vector<c10::IValue> out = run_meta(op, args, nullptr);
      for (const c10::IValue& v : out) {
        std::vector<at::Tensor> ts;
        collect_tensors(v, ts);
        for (const at::Tensor& t : ts) {
          if (!t.defined()) {
            plan.result_types.push_back(ir::Type{ir::DType::F32, {0}});
            plan.new_outputs.push_back({{0}, {1}, ir::DType::F32, /*undefined=*/true});
            continue;
          }
          plan.result_types.push_back(type_of(t));
          plan.new_outputs.push_back(new_output(t));
        }
        plan.return_counts.push_back(static_cast<int>(ts.size()));
      }
      break;
    }
    case Variant::InPlace: {
      run_meta(op, args, nullptr);  // PyTorch's own checks of the in-place form
      std::vector<c10::IValue> fargs(args.begin(), args.begin() + bind.num_args);
      std::vector<c10::IValue> out = run_meta(*bind.functional, fargs, nullptr);
      std::vector<at::Tensor> ts;
      for (const c10::IValue& v : out) collect_tensors(v, ts);
      for (const at::Tensor& t : ts) plan.result_types.push_back(type_of(t));
      break;
    }
    case Variant::Mutating: {
      bool fresh_returns = false;
      for (const auto& r : returns) fresh_returns |= r.alias_info() == nullptr;
      if (!fresh_returns && !has_meta_kernel(op)) {
        // Some in-place ops have no meta kernel (_fused_sgd_, _fused_adamw_.tensor_lr); when
        // they return nothing new, their result types are those of the tensors they write.
        for (int w : bind.written) {
          std::vector<at::Tensor> ts;
          collect_tensors(args[w], ts);
          for (const at::Tensor& t : ts) plan.result_types.push_back(type_of(t));
        }
        break;
      }
      std::vector<c10::IValue> meta_args;
      std::vector<c10::IValue> out = run_meta(op, args, &meta_args);
      for (int w : bind.written) {
        std::vector<at::Tensor> ts;
        collect_tensors(meta_args[w], ts);
        for (const at::Tensor& t : ts) plan.result_types.push_back(type_of(t));
      }
      for (size_t r = 0; r < returns.size(); ++r) {
        if (returns[r].alias_info()) continue;
        std::vector<at::Tensor> ts;
        collect_tensors(out[r], ts);
        for (const at::Tensor& t : ts) {
          plan.result_types.push_back(type_of(t));
          plan.new_outputs.push_back(new_output(t));
        }
        plan.return_counts.push_back(static_cast<int>(ts.size()));
      }
      break;
    }
    case Variant::Out:
      TORCH_INTERNAL_ASSERT(false, "out variants are run through their functional twin");
  }
  return plan;
}

// float8 tensors reach only the ops PyTorch's CPU kernels compute on them (lowering/core/float8.h);
// any other raises CPU's NotImplementedError for the dtype, at the call, before compiling.
void check_float8(const OpBinding& bind, const exec::OpCall& call, const exec::OutputPlan& plan) {
  std::vector<ir::DType> inputs;
  for (const exec::TensorView& v : call.views) inputs.push_back(v.dtype);
  std::optional<ir::DType> f8;
  for (ir::DType t : inputs)
    if (!f8 && ir::is_float8(t)) f8 = t;
  for (const ir::Type& t : plan.result_types)
    if (!f8 && ir::is_float8(t.dtype)) f8 = t.dtype;
  if (!f8) return;
  using lowering::float8::Support;
  const Support support = lowering::float8::support(bind.lowering->name);
  bool scalar_operand = false;
  for (const exec::ArgSpec& a : call.args) scalar_operand |= a.scalar >= 0;
  // CPU's mul has no float8 kernel for a Python-number operand ("mul_cpu_reduced_float").
  TORCH_CHECK_NOT_IMPLEMENTED(
      support != Support::None && !(bind.lowering->name == "aten::mul.Tensor" && scalar_operand), "\"",
      bind.name, "\" not implemented for '", ir::torch_name(*f8), "'");
  if (support == Support::Widened)
    for (ir::DType t : inputs)
      TORCH_CHECK(!ir::is_floating(t) || t == *f8,
                  "Promotion for Float8 Types is not supported, attempted to promote ", ir::torch_name(*f8),
                  " and ", ir::torch_name(t));
}

// --- the kernel ---------------------------------------------------------------------------

void run_out_variant(const c10::OperatorHandle& op, const OpBinding& bind, torch::jit::Stack* stack) {
  // out= ops: the functional op, then resize_output + copy_ into each out tensor.
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - n, stack->end());
  std::vector<c10::IValue> fstack(args.begin(), args.begin() + bind.num_args);
  bind.functional->callBoxed(fstack);
  std::vector<at::Tensor> results, outs;
  for (const c10::IValue& v : fstack) collect_tensors(v, results);
  // An out= list (split_with_sizes_copy.out, unbind_copy.int_out) holds one tensor per result.
  for (int w : bind.written) collect_tensors(args[w], outs);
  TORCH_CHECK(results.size() == outs.size(), op.schema().name(), "(): expected an out= argument of size ",
              results.size(), ", got ", outs.size());
  for (size_t k = 0; k < results.size(); ++k) into(outs[k], results[k]);
  torch::jit::drop(*stack, n);
  // Schemas that write a list return nothing.
  if (!op.schema().returns().empty())
    for (int w : bind.written) stack->push_back(args[w]);
}

}  // namespace

void bind_op(const c10::OperatorHandle& op, const lowering::Lowering* lowering, Variant variant,
             const c10::OperatorHandle* functional) {
  OpBinding b;
  b.lowering = lowering;
  b.variant = variant;
  if (functional) b.functional = *functional;
  const auto& schema = op.schema();
  b.name = schema.name() + (schema.overload_name().empty() ? "" : "." + schema.overload_name());
  const auto& args = schema.arguments();
  b.num_args = static_cast<int>(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const auto* alias = args[i].alias_info();
    bool write = alias && alias->isWrite();
    if (unwrap_optional(args[i].real_type())->kind() == c10::TypeKind::GeneratorType) b.generator_arg = i;
    if (variant == Variant::Out && args[i].is_out()) {
      b.written.push_back(static_cast<int>(i));
      b.num_args = std::min(b.num_args, static_cast<int>(i));
    } else if (variant == Variant::Mutating && write) {
      b.written.push_back(static_cast<int>(i));
    }
  }
  if (variant == Variant::InPlace) b.written = {0};
  std::lock_guard<std::mutex> lock(g_bindings_mutex);
  g_bindings[&schema] = std::move(b);
}

namespace {

// One boolean mask and no other index tensor.
bool single_mask(const c10::List<std::optional<at::Tensor>>& indices) {
  int masks = 0, others = 0;
  for (const std::optional<at::Tensor>& idx : indices) {
    if (!idx || !idx->defined()) continue;
    (idx->scalar_type() == at::kBool || idx->scalar_type() == at::kByte ? masks : others)++;
  }
  return masks == 1 && others == 0;
}

// Lowerings that handle a single boolean mask themselves (lowering/indexing/indexing.cpp).
bool takes_static_mask(const OpBinding& bind) {
  const std::string& n = bind.lowering->name;
  return n == "aten::index_put" || n == "aten::_index_put_impl" || n == "aten::_unsafe_index_put";
}

// Conjugate and negative views reach this kernel with their bits still set only for the ops
// ATen lets through to backends that read the bits themselves (mm, bmm, addmm, dot, ... for
// BLAS). Lowerings read stored values, so such an input is materialized first; a written one
// cannot be.
// Every op runs this check: arguments are only rewritten when a bit is actually set.
bool has_lazy_bits(const at::Tensor& t) { return t.defined() && (t.is_conj() || t.is_neg()); }

at::Tensor resolved(const at::Tensor& t, bool written, const std::string& op) {
  TORCH_CHECK_NOT_IMPLEMENTED(!written, "torch_tpu: ", op,
                              " cannot write into a conjugate or negative view; call resolve_conj() / "
                              "resolve_neg() on it first");
  return t.resolve_conj().resolve_neg();
}

void resolve_lazy_bits(torch::jit::Stack::iterator args_begin, const std::vector<c10::Argument>& schema_args,
                       const std::string& op) {
  for (size_t i = 0; i < schema_args.size(); ++i) {
    c10::IValue& v = *(args_begin + i);
    const bool written = schema_args[i].alias_info() && schema_args[i].alias_info()->isWrite();
    if (v.isTensor()) {
      if (has_lazy_bits(v.toTensor())) v = resolved(v.toTensor(), written, op);
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      for (size_t k = 0; k < list.size(); ++k)
        if (has_lazy_bits(list.get(k))) list.set(k, resolved(list.get(k), written, op));
    }
  }
}

void run_lowered_op(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OpBinding& bind = binding_of(op);
  if (bind.variant == Variant::Out) return run_out_variant(op, bind, stack);

  const auto& schema_args = op.schema().arguments();
  const size_t n = schema_args.size();
  auto args_begin = stack->end() - n;
  resolve_lazy_bits(args_begin, schema_args, bind.name);
  // Boolean masks in index lists (x[mask], x[mask] = v) become long indices: a host sync for
  // their size, then the integer-index lowering.
  // Writes through a single mask (x[mask] = v) stay static: the index_put lowerings take the
  // mask itself and select, so no sync is needed.
  for (size_t i = 0; i < n; ++i) {
    c10::IValue& v = *(args_begin + i);
    if (v.isOptionalTensorList()) {
      auto list = v.toOptionalTensorList();
      // CPU index tensors are accepted, as on CUDA: they move to the indexed tensor's device.
      c10::Device device(c10::DeviceType::PrivateUse1, current_device());
      for (size_t a = 0; a < n; ++a)
        if ((args_begin + a)->isTensor() && (args_begin + a)->toTensor().defined() &&
            (args_begin + a)->toTensor().device().type() == c10::DeviceType::PrivateUse1) {
          device = (args_begin + a)->toTensor().device();
          break;
        }
      bool moved = false;
      for (size_t k = 0; k < list.size(); ++k) {
        std::optional<at::Tensor> idx = list.get(k);
        if (idx && idx->defined() && idx->device().is_cpu() && idx->dim() > 0) {
          list.set(k, idx->to(device));
          moved = true;
        }
      }
      if (moved) v = list;
      if (has_mask(list) && !(takes_static_mask(bind) && single_mask(list))) v = expand_masks(list);
    }
  }
  Unpacked u;
  u.call.lowering = bind.lowering;
  u.call.op_name = bind.name;
  u.call.args.reserve(bind.num_args);
  u.call.views.reserve(n);
  u.call.storages.reserve(n);
  for (int i = 0; i < bind.num_args; ++i) unpack_arg(u, bind, i, schema_args[i], *(args_begin + i));
  // Views written by the op, in result order.
  for (int w : bind.written) {
    std::vector<at::Tensor> ts;
    collect_tensors(*(args_begin + w), ts);
    for (const at::Tensor& t : ts) u.call.written_views.push_back(tensor_view(u, t, bind.name));
  }
  if (u.device < 0) u.device = current_device();
  u.call.device = u.device;
  u.call.random = bind.lowering->random || bind.generator_arg >= 0;

  std::string key = u.call.key();
  exec::CompiledOpPtr compiled = exec::find_or_compile(
      u.call, key,
      [&] {
        exec::OutputPlan plan = plan_outputs(op, bind, std::vector<c10::IValue>(args_begin, stack->end()));
        check_float8(bind, u.call, plan);
        return plan;
      },
      !fused_mode());
  if (u.call.random) {
    at::Generator gen = u.generator ? *u.generator : default_generator(u.device);
    TORCH_CHECK(gen.device().type() == c10::DeviceType::PrivateUse1,
                "Expected a 'tpu' device type for generator but found '", gen.device().type(), "'");
    uint64_t count = 1;
    for (const ir::Type& t : compiled->plan.result_types) count += static_cast<uint64_t>(t.numel());
    std::lock_guard<std::mutex> lock(gen.mutex());
    auto [seed, counter] = gen.get<TpuGeneratorImpl>()->next(count);
    u.call.seed = seed;
    u.call.rng_counter = counter;
  }
  std::vector<at::Tensor> outs = run_op(compiled, u.call, std::move(key));

  // Box the returns: aliases of written arguments, then fresh outputs in order.
  std::vector<c10::IValue> args(args_begin, stack->end());
  torch::jit::drop(*stack, n);
  size_t next_new = 0, next_return = 0;
  auto fresh = [&]() { return outs[next_new++]; };
  const auto& returns = op.schema().returns();
  for (size_t r = 0; r < returns.size(); ++r) {
    const auto* alias = returns[r].alias_info();
    if (alias) {
      // The argument sharing this alias set.
      for (size_t i = 0; i < schema_args.size(); ++i) {
        const auto* a = schema_args[i].alias_info();
        if (a && a->beforeSets() == alias->beforeSets()) {
          stack->push_back(args[i]);
          break;
        }
      }
    } else if (returns[r].real_type()->kind() == c10::TypeKind::ListType) {
      // Tensor[] returns: as many fresh outputs as the meta call produced for it.
      c10::List<at::Tensor> list;
      int count = compiled->plan.return_counts[next_return++];
      for (int k = 0; k < count; ++k) list.push_back(fresh());
      stack->push_back(list);
    } else {
      ++next_return;
      stack->push_back(fresh());
    }
  }
}

}  // namespace

void lowered_op_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  translating_out_of_memory([&] { run_lowered_op(op, stack); });
}

}  // namespace tpu::aten
