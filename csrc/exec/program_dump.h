// TORCH_TPU_DUMP_DIR=DIR: every program this process compiles, or loads from the disk cache,
// written out for reading. Per program, `<pid>-<seq>-<name>-<key>.stablehlo.mlir` (the module
// we built) and, where the plugin exposes it, `....hlo.pb` (its optimized HLO: a serialized
// HloModuleProto); DIR/index.jsonl gets one JSON object per program (the files, the op or
// graph, the cache key's fingerprint, compiled or loaded, compile seconds, and the Python lines
// that led to it). Several processes may share DIR: names carry the pid, index lines are
// appended whole.
#pragma once
#include <string>
#include <vector>

#include "runtime/executable.h"

namespace tpu::exec {

struct DumpedProgram {
  std::string name;  // "aten::add.Tensor", "fused graph of 12 ops"
  const std::string& key;
  const std::string& stablehlo;
  const runtime::Executable& executable;
  bool from_disk_cache = false;
  double compile_seconds = 0;
  // Where the user's code caused it: the op's call, or the lines that recorded a fused graph.
  std::vector<std::string> python_lines;
};

bool dump_enabled();  // TORCH_TPU_DUMP_DIR is set (read once)
void dump_program(const DumpedProgram& program);

}  // namespace tpu::exec
