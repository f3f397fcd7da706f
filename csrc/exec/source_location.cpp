#include "exec/source_location.h"

namespace tpu::exec {

namespace {
std::string (*g_location_hook)() = nullptr;
}  // namespace

void set_source_location_hook(std::string (*hook)()) { g_location_hook = hook; }

std::string current_source_location() { return g_location_hook ? g_location_hook() : std::string(); }

}  // namespace tpu::exec
