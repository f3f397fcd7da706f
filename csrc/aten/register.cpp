// Binds every lowering to its ATen operator (and the derived in-place and out= variants), and
// installs the fallback for everything else: an error naming the op, or the opt-in CPU fallback.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "aten/register.h"

#include "aten/op_kernel.h"
#include "exec/metrics.h"

namespace tpu::aten {

namespace {

std::atomic<bool> g_cpu_fallback{false};
// What bind_schemas found wrong with the process's registry (register_lowered_ops).
std::vector<std::string> g_registration_problems;

std::vector<std::string> argument_names(const c10::FunctionSchema& schema) {
  std::vector<std::string> names;
  for (const c10::Argument& a : schema.arguments()) names.push_back(a.name());
  return names;
}

std::optional<c10::OperatorHandle> find_op(const std::string& qualified) {
  auto dot = qualified.find('.', qualified.find("::"));
  std::string name = qualified.substr(0, dot);
  std::string overload = dot == std::string::npos ? "" : qualified.substr(dot + 1);
  return c10::Dispatcher::singleton().findSchema({name, overload});
}

std::string qualified_name(const c10::OperatorName& n) {
  return n.name + (n.overload_name.empty() ? "" : "." + n.overload_name);
}

bool same_args(const c10::FunctionSchema& a, const c10::FunctionSchema& b, size_t count) {
  if (a.arguments().size() < count || b.arguments().size() < count) return false;
  for (size_t i = 0; i < count; ++i) {
    if (a.arguments()[i].name() != b.arguments()[i].name()) return false;
    if (a.arguments()[i].type()->str() != b.arguments()[i].type()->str()) return false;
  }
  return true;
}

bool is_mutating(const c10::FunctionSchema& s) {
  for (const auto& a : s.arguments())
    if (a.alias_info() && a.alias_info()->isWrite()) return true;
  return false;
}

void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = qualified_name(op.schema().operator_name());
  TORCH_CHECK_NOT_IMPLEMENTED(
      g_cpu_fallback.load(), "The operator '", name,
      "' is not currently implemented for the tpu device. Set TORCH_TPU_CPU_FALLBACK=1 (or use "
      "torch_tpu.cpu_fallback()) to run it on the CPU instead, at a performance cost.");
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (warned.insert(name).second)
      TORCH_WARN("torch_tpu: the operator '", name,
                 "' has no tpu lowering and runs on the CPU (fallback enabled); this is slow.");
  }
  exec::count_fallback(name);
  at::native::cpu_fallback(op, stack);
}

}  // namespace

void set_cpu_fallback(bool enabled) { g_cpu_fallback.store(enabled); }
bool cpu_fallback_enabled() { return g_cpu_fallback.load(); }

std::vector<std::string> bind_schemas(lowering::Registry& registry, bool strict) {
  std::vector<std::string> problems;
  for (const lowering::Lowering* l : registry.all()) {
    if (l->name.rfind("aten::", 0) != 0) continue;
    auto op = find_op(l->name);
    if (!op) {
      problems.push_back(l->name + ": names no operator of this torch");
      continue;
    }
    for (const std::string& arg : registry.bind_schema(l->name, argument_names(op->schema())))
      problems.push_back(l->name + ": no argument '" + arg + "' in " + c10::toString(op->schema()));
  }
  TORCH_CHECK(!strict || problems.empty(),
              "torch_tpu: lowerings that do not match this torch's operators: ", c10::Join("; ", problems));
  return problems;
}

std::vector<std::string> registration_problems() { return g_registration_problems; }

int register_lowered_ops() {
  static int count = -1;
  if (count >= 0) return count;
  count = 0;
  static torch::Library lib(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  // Overloads of each base name, to find the out= variants of a functional op.
  std::map<std::string, std::vector<c10::OperatorName>> by_name;
  for (const c10::OperatorName& n : c10::Dispatcher::singleton().getAllOpNames())
    by_name[n.name].push_back(n);
  std::set<std::string> bound;
  auto bind = [&](const c10::OperatorHandle& op, const lowering::Lowering* l, Variant v,
                  const c10::OperatorHandle* functional) {
    std::string name = qualified_name(op.schema().operator_name());
    if (!bound.insert(name).second) return;
    bind_op(op, l, v, functional);
    lib.impl(name.substr(6).c_str(), torch::CppFunction::makeFromBoxedFunction<&lowered_op_kernel>());
    ++count;
  };
#ifdef NDEBUG
  const bool strict = false;
#else
  const bool strict = true;  // a debug build refuses to import with a mismatched lowering
#endif
  g_registration_problems = bind_schemas(lowering::registry(), strict);
  std::set<std::string> unbound;  // listed by registration_problems(), which tests/test_build.py checks
  for (const std::string& problem : g_registration_problems)
    unbound.insert(problem.substr(0, problem.find(": ")));
  for (const lowering::Lowering* l : lowering::all_lowerings()) {
    if (l->name.rfind("aten::", 0) != 0 || unbound.count(l->name)) continue;
    auto op = find_op(l->name);
    const c10::FunctionSchema& schema = op->schema();
    if (is_mutating(schema)) {
      bind(*op, l, Variant::Mutating, nullptr);
      continue;
    }
    bind(*op, l, Variant::Functional, nullptr);
    const auto& n = schema.operator_name();
    auto inplace = c10::Dispatcher::singleton().findSchema({n.name + "_", n.overload_name});
    if (inplace && same_args(inplace->schema(), schema, schema.arguments().size()) &&
        inplace->schema().arguments().size() == schema.arguments().size())
      bind(*inplace, l, Variant::InPlace, &*op);
    for (const c10::OperatorName& cand : by_name[n.name]) {
      auto out = c10::Dispatcher::singleton().findSchema(cand);
      if (!out || !out->schema().is_mutable()) continue;
      const auto& oargs = out->schema().arguments();
      size_t first_out = oargs.size();
      for (size_t i = 0; i < oargs.size(); ++i)
        if (oargs[i].is_out()) {
          first_out = i;
          break;
        }
      if (first_out == oargs.size() || first_out != schema.arguments().size()) continue;
      if (!same_args(out->schema(), schema, first_out)) continue;
      if (oargs.size() - first_out != schema.returns().size()) continue;
      bind(*out, l, Variant::Out, &*op);
    }
  }
  return count;
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>());
}

}  // namespace tpu::aten
