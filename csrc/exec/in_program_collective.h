// In-program collectives: one StableHLO program holding a collective, compiled for N replicas
// (replica r on device devices[r]) and launched on all N devices by one Execute
// (runtime::Executable::execute_replicated). Programs are cached in the op cache like any
// other; the inputs are the storages of one contiguous array per replica.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/storage.h"
#include "ir/dtype.h"
#include "lowering/collectives/collectives.h"
#include "runtime/buffer.h"

namespace tpu::exec {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll, Permute };
// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute"; parse throws
// std::invalid_argument for another name.
std::string collective_name(CollectiveKind kind);
CollectiveKind parse_collective(const std::string& name);

// Every replica holds a flat array of `numel` elements of `dtype`. The collective works along
// that single dimension: all_gather concatenates, reduce_scatter and all_to_all split it into
// group-size blocks (torch.distributed's *_tensor / *_single collectives on contiguous tensors).
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllReduce;
  lowering::collective::Reduction reduction;  // all_reduce, reduce_scatter
  ir::DType dtype = ir::DType::F32;
  int64_t numel = 0;
  std::vector<int> devices;                        // device index of each replica
  lowering::collective::Groups groups;             // empty: one group of every replica
  std::vector<std::pair<int64_t, int64_t>> pairs;  // permute: (source, target) replicas

  // The compile-cache key: everything above.
  std::string key() const;
  // Elements each replica gets back.
  int64_t output_numel() const;
  // The groups the program uses (`groups`, or all replicas), checked: every replica id in
  // range. Throws std::invalid_argument.
  lowering::collective::Groups effective_groups() const;
};

// The program of `spec`: @main takes one flat array and returns one (per replica).
std::string build_collective_module(const CollectiveSpec& spec);

// Compiles `spec` once (op cache; compiles and hits counted in the metrics) and launches it
// on `inputs[r]`, a storage on device spec.devices[r] holding exactly numel elements of
// dtype (written, no pending value). Returns one output buffer per replica, launched
// asynchronously (tracked for synchronize(); awaited in debug mode).
std::vector<runtime::BufferPtr> run_collective(const CollectiveSpec& spec,
                                               const std::vector<Storage*>& inputs);

}  // namespace tpu::exec
