#include "exec/source_location.h"

namespace tpu::exec {

namespace {
const std::string& (*g_location_hook)() = nullptr;
}  // namespace

void set_source_location_hook(const std::string& (*hook)()) { g_location_hook = hook; }

const std::string& current_source_location() {
  static const std::string none;
  return g_location_hook ? g_location_hook() : none;
}

}  // namespace tpu::exec
