#include "lowering/registry.h"

#include <map>
#include <stdexcept>

namespace tpu::lowering {

namespace {
std::map<std::string, Lowering>& table() {
  static std::map<std::string, Lowering> t;
  return t;
}
}  // namespace

void register_lowering(const Lowering& lowering) {
  if (!table().emplace(lowering.name, lowering).second)
    throw std::logic_error("duplicate lowering for " + lowering.name);
}

const Lowering* find_lowering(const std::string& name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<const Lowering*> all_lowerings() {
  std::vector<const Lowering*> out;
  for (const auto& [name, l] : table()) out.push_back(&l);
  return out;
}

}  // namespace tpu::lowering
