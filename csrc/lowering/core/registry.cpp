#include "lowering/core/registry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace tpu::lowering {

namespace {

// Sets the lowering's schema names and static bits; returns the declared names the schema lacks.
std::vector<std::string> bind_names(Lowering& l, const std::vector<std::string>& schema_args) {
  l.schema_args = schema_args;
  l.static_args = 0;
  std::vector<std::string> unknown;
  auto position = [&](const std::string& arg) {
    auto it = std::find(schema_args.begin(), schema_args.end(), arg);
    return it == schema_args.end() ? -1 : static_cast<int>(it - schema_args.begin());
  };
  for (const std::string& arg : l.signature.reads)
    if (position(arg) < 0) unknown.push_back(arg);
  for (const std::string& arg : l.signature.statics) {
    int i = position(arg);
    if (i < 0) {
      unknown.push_back(arg);
    } else {
      l.static_args |= 1u << i;
    }
  }
  return unknown;
}

}  // namespace

void Registry::add(const Lowering& lowering) {
  auto [it, added] = lowerings_.emplace(lowering.name, lowering);
  if (!added) throw std::logic_error("duplicate lowering for " + lowering.name);
  if (lowering.name.rfind("aten::", 0) != 0) {
    std::vector<std::string> names = lowering.signature.reads;
    names.insert(names.end(), lowering.signature.statics.begin(), lowering.signature.statics.end());
    bind_names(it->second, names);
  }
}

const Lowering* Registry::find(const std::string& name) const {
  auto it = lowerings_.find(name);
  return it == lowerings_.end() ? nullptr : &it->second;
}

std::vector<const Lowering*> Registry::all() const {
  std::vector<const Lowering*> out;
  for (const auto& [name, l] : lowerings_) out.push_back(&l);
  return out;
}

std::vector<std::string> Registry::bind_schema(const std::string& name,
                                               const std::vector<std::string>& schema_args) {
  return bind_names(lowerings_.at(name), schema_args);
}

Registry& registry() {
  static Registry r;
  return r;
}

void register_lowering(const Lowering& lowering) { registry().add(lowering); }
const Lowering* find_lowering(const std::string& name) { return registry().find(name); }
std::vector<const Lowering*> all_lowerings() { return registry().all(); }

int Ctx::index(std::string_view name) const {
  auto declared = [&](const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (lowering == nullptr || !(declared(lowering->signature.reads) || declared(lowering->signature.statics)))
    throw std::logic_error("torch_tpu internal error: a lowering" +
                           (lowering ? " of " + lowering->name : std::string()) + " reads argument '" +
                           std::string(name) + "', which its Signature does not declare");
  const auto& names = lowering->schema_args;
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end())
    throw std::logic_error("torch_tpu internal error: " + lowering->name + " has no argument '" +
                           std::string(name) + "' (its lowering was not bound to the operator's schema)");
  return static_cast<int>(it - names.begin());
}

bool Ctx::has(std::string_view name) const {
  int i = index(name);
  return i < static_cast<int>(args.size()) && !args[i].is_none();
}

std::string_view Ctx::declared_one_of(std::initializer_list<std::string_view> names) const {
  for (std::string_view name : names)
    if (lowering && std::find(lowering->signature.reads.begin(), lowering->signature.reads.end(), name) !=
                        lowering->signature.reads.end())
      return name;
  std::string listed;
  for (std::string_view name : names) listed += " '" + std::string(name) + "'";
  throw std::logic_error("torch_tpu internal error: a lowering" +
                         (lowering ? " of " + lowering->name : std::string()) + " declares none of" + listed);
}

}  // namespace tpu::lowering
