// Environment variables a PJRT plugin reads when a client starts: what they were (part of the
// persistent compile cache's identity, since they change what the plugin compiles) and whether
// the plugin accepts them (an XLA-based plugin ends the whole process on a bad XLA_FLAGS).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "pjrt_c_api.h"

namespace tpu::runtime {

class Plugin;

// (name, value) of each variable that changes compilation, read now: XLA_FLAGS (XLA's debug
// options, read by every XLA-based plugin) and LIBTPU_INIT_ARGS (libtpu's flags). The value is
// "unset" or "=<value>"; an XLA_FLAGS that names a file of flags (XLA reads a value whose first
// non-blank character is not '-' that way) also carries the file's contents.
std::vector<std::pair<std::string, std::string>> read_compile_environment();

// When XLA_FLAGS is set, makes sure the plugin accepts it before this process creates its
// client: XLA parses XLA_FLAGS there and, on an unknown flag or a bad value, logs one line and
// calls _exit(1). That would end this process without a Python traceback or atexit handlers,
// and silently, since the plugin's start-up output is muted (device_context.cpp). So a forked
// child creates the client with the same `args` first; when it dies complaining about XLA_FLAGS
// this throws std::runtime_error naming XLA_FLAGS, the plugin's complaint (the unknown flags)
// and the fix. Unset XLA_FLAGS costs one getenv; set, a fork and a client start (a few ms for
// XLA:CPU). See the .cpp for why a forked child.
void check_plugin_accepts_flags(const Plugin& plugin, const PJRT_Client_Create_Args& args);

}  // namespace tpu::runtime
