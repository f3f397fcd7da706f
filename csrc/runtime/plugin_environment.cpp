#include "runtime/plugin_environment.h"

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace tpu::runtime {

namespace {

constexpr const char* kCompileVariables[] = {"XLA_FLAGS", "LIBTPU_INIT_ARGS"};
constexpr size_t kMaxFlagFile = 1 << 20;

// XLA reads flags from a file when the value's first non-blank character is not '-'.
bool names_a_flag_file(const std::string& value) {
  const size_t first = value.find_first_not_of(" \t\r\n");
  return first != std::string::npos && value[first] != '-';
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_compile_environment() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* name : kCompileVariables) {
    const char* v = std::getenv(name);
    std::string value = v == nullptr ? "unset" : std::string("=") + v;
    if (v != nullptr && std::string(name) == "XLA_FLAGS" && names_a_flag_file(v)) {
      std::ifstream f(v, std::ios::binary);
      std::string contents(std::istreambuf_iterator<char>(f), {});
      value += f ? "\nfile contents:\n" + contents.substr(0, kMaxFlagFile) : "\n(file unreadable)";
    }
    out.emplace_back(name, value);
  }
  return out;
}

}  // namespace tpu::runtime
