// Compiled op programs kept across processes in the disk cache (disk_cache.h).
//
// The entry key is the identity of everything an executable depends on besides the op call
// (cache_identity) followed by the op call's key made process-independent (persistent_key).
// The payload is the CompiledOp: its output plan, program layout and serialized executable.
#pragma once
#include <cstdint>
#include <string>

#include "exec/compile_cache.h"
#include "exec/op_call.h"
#include "runtime/client.h"

namespace tpu::exec {

// Version of the payload encoding; part of every entry key.
constexpr uint32_t kCompiledOpFormat = 1;

// Versions only the Python layer knows (torch, torch_tpu), set at import; part of the identity.
void set_cache_identity_extra(const std::string& extra);
// The plugin's platform name and version, PJRT API version and attributes (xla_version, ...),
// the plugin file's path, size and mtime (xla_version alone does not change between builds),
// the device count and kind, the environment that changes compilation as the client read it
// (XLA_FLAGS, LIBTPU_INIT_ARGS: Client::compile_environment), this library's file size and
// mtime (lowerings change with it), the payload format and the extra versions, as
// length-prefixed bytes. Computed once per client and extra.
std::string cache_identity(const runtime::Client& client);

// OpCall::key() names its lowering by address, which differs between processes: the same key
// with the lowering's name instead. Empty when `key` does not have that form.
std::string persistent_key(const OpCall& call, const std::string& key);

// Serializes the executable; op_name and compile statistics are not stored.
std::string encode_compiled_op(const CompiledOp& op);
bool same_plan(const OutputPlan& a, const OutputPlan& b);
// Throws std::runtime_error (or runtime::PjrtError) when `bytes` is malformed or the executable
// does not load.
CompiledOpPtr decode_compiled_op(const std::string& bytes, const runtime::Client& client);

// Fills `op`'s layout and executable from the disk cache entry of `call` (whose OpCall::key() is
// `key`) and returns true (a disk hit), or returns false (a disk miss; not counted when the cache
// is disabled). The entry's output plan must equal `op.plan`, which the caller computed with
// the meta kernels: a key that misses a shape-determining value can then never carry a wrong
// program into another process. An entry that does not decode is discarded with a warning.
bool load_compiled_op(const OpCall& call, const std::string& key, CompiledOp& op);
// Writes `op` to the disk cache (when enabled). Failures are counted and warned about, never
// thrown: the program is already compiled and usable.
void store_compiled_op(const OpCall& call, const std::string& key, const CompiledOp& op);
// The same under a key already made process-independent (fused graphs compose theirs from
// their nodes' persistent keys).
bool load_compiled_op(const std::string& persistent_key, CompiledOp& op);
void store_compiled_op(const std::string& persistent_key, const CompiledOp& op);

}  // namespace tpu::exec
