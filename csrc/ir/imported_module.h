// A StableHLO module produced elsewhere (a JAX function lowered by jax.jit(...).lower(...)),
// made into private functions of our own program so that calling it is one op of that program:
// no second client, no copies through another framework's arrays, and a fused graph is not cut.
//
// The module's public @main is renamed to a unique entry name; its other functions get the same
// prefix, so two imported modules never collide with each other or with our @main. Module and
// result attributes (mhlo.num_partitions, jax.result_info, ...) are dropped: the entry is called
// with our operands and its results are ours.
#pragma once
#include <string>

namespace tpu::ir {

struct ImportedModule {
  std::string entry;      // the function to call: "@<prefix>main"
  std::string functions;  // the module's functions, renamed and private, as MLIR text
};

// Throws std::invalid_argument when `module_text` has no `func.func public @main`.
ImportedModule import_module(const std::string& module_text, const std::string& prefix);

}  // namespace tpu::ir
