// Emitters for StableHLO's cross-replica collectives (all_reduce, all_gather, reduce_scatter,
// all_to_all, collective_permute) with torch.distributed's reduce ops, in hlo:: style. A
// program holding them is compiled for N replicas and launched on N devices at once
// (exec/in_program_collective.h); replica ids are positions in that launch.
// This is the emitter layer for these ops, as lowering/core/hlo.h is for the others: the one
// file besides hlo*.cpp that spells StableHLO op names (tests/test_build.py checks).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/builder.h"

namespace tpu::lowering::collective {

using ir::Builder;
using ir::Value;

// torch.distributed.ReduceOp.RedOpType, same numbering (the binding passes it through).
enum class ReduceOp : int {
  Sum = 0,
  Avg = 1,
  Product = 2,
  Min = 3,
  Max = 4,
  BitAnd = 5,
  BitOr = 6,
  BitXor = 7,
  PremulSum = 8,
};
std::string reduce_op_name(ReduceOp op);  // "SUM", "BAND", ... as torch prints ReduceOp

// A reduction: the op and, for PREMUL_SUM, the factor every input is multiplied by first.
struct Reduction {
  ReduceOp op = ReduceOp::Sum;
  double premul = 1.0;
};

// Replica groups: disjoint lists of replica ids of equal length (StableHLO wants a rectangular
// tensor), together covering the replicas that take part.
using Groups = std::vector<std::vector<int64_t>>;
// "dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>"; throws std::invalid_argument on ragged,
// repeated or negative ids.
std::string replica_groups_attr(const Groups& groups);
// Throws std::invalid_argument when `op` is not defined on `dtype` (torch's Gloo rules: bitwise
// ops on integers and bool only, AVG and PREMUL_SUM not on bool or integers for PREMUL_SUM,
// MIN/MAX not on complex).
void check_reduction(const Reduction& r, ir::DType dtype);

// Each replica gets the reduction over its group of every replica's `x` (same type).
Value all_reduce(Builder& b, const Value& x, const Reduction& r, const Groups& groups);
// Each replica gets its group's `x`s concatenated along `dim` in group order.
Value all_gather(Builder& b, const Value& x, int64_t dim, const Groups& groups);
// `x` split along `dim` into group-size blocks; the replica at position i of its group gets the
// reduction of every member's block i.
Value reduce_scatter(Builder& b, const Value& x, int64_t dim, const Reduction& r, const Groups& groups);
// `x` split along `split_dim` into group-size blocks, block i sent to the member at position i;
// each replica concatenates what it receives along `concat_dim`, in group order.
Value all_to_all(Builder& b, const Value& x, int64_t split_dim, int64_t concat_dim, const Groups& groups);
// Replica `source` sends `x` to replica `target` for each (source, target) pair; a replica that
// is no pair's target gets zeros. Sources are distinct and so are targets.
Value collective_permute(Builder& b, const Value& x, const std::vector<std::pair<int64_t, int64_t>>& pairs);

}  // namespace tpu::lowering::collective
