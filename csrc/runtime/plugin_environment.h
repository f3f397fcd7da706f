// Environment variables a PJRT plugin reads when a client starts: what they were (part of the
// persistent compile cache's identity, since they change what the plugin compiles).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace tpu::runtime {

// (name, value) of each variable that changes compilation, read now: XLA_FLAGS (XLA's debug
// options, read by every XLA-based plugin) and LIBTPU_INIT_ARGS (libtpu's flags). The value is
// "unset" or "=<value>"; an XLA_FLAGS that names a file of flags (XLA reads a value whose first
// non-blank character is not '-' that way) also carries the file's contents.
std::vector<std::pair<std::string, std::string>> read_compile_environment();

}  // namespace tpu::runtime
