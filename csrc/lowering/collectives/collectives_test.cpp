// The collective emitters: attribute text, argument checks, and programs they build run on four
// replicas (one launch over four devices of the CPU plugin).
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowering/collectives/collectives.h"
#include "runtime/client.h"
#include "runtime/compile_options.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

namespace coll = tpu::lowering::collective;
using tpu::ir::Builder;
using tpu::ir::DType;
using tpu::ir::Type;
using tpu::ir::Value;

constexpr int kReplicas = 4;

tpu::runtime::Client& four_device_client() {
  static tpu::runtime::Client c(tpu::testing::plugin(), {{"cpu_device_count", kReplicas}});
  return c;
}

// Runs `b`'s program (one i32 input, one i32 result per replica) on four replicas.
std::vector<std::vector<int32_t>> run_i32(const Builder& b, const std::vector<std::vector<int32_t>>& inputs,
                                          size_t out_elems) {
  tpu::runtime::Client& c = four_device_client();
  std::string text = b.module_text();
  tpu::runtime::ExecutablePtr exe;
  try {
    exe = c.compile(text, tpu::runtime::encode_compile_options(kReplicas, 1, false));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "\n--- module ---\n" + text);
  }
  std::vector<tpu::runtime::BufferPtr> keep;
  std::vector<std::vector<PJRT_Buffer*>> args;
  for (size_t r = 0; r < inputs.size(); ++r) {
    keep.push_back(c.buffer_from_host(inputs[r].data(), PJRT_Buffer_Type_S32,
                                      {static_cast<int64_t>(inputs[r].size())}, r));
    args.push_back({keep.back()->raw()});
  }
  std::vector<std::vector<int32_t>> result;
  for (const auto& outs : exe->execute_replicated(args)) {
    result.emplace_back(out_elems);
    outs.at(0)->to_host(result.back().data(), out_elems * sizeof(int32_t));
  }
  return result;
}

const coll::Groups kAll{{0, 1, 2, 3}};
const std::vector<std::vector<int32_t>> kInputs{{1, 6, 0, 9}, {2, 5, 3, 9}, {4, 3, 5, 9}, {8, 7, 6, 9}};

}  // namespace

TEST(Collectives, ReplicaGroupsAttribute) {
  CHECK_EQ(coll::replica_groups_attr({{0, 1}, {2, 3}}),
           std::string("dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>"));
  CHECK_EQ(coll::replica_groups_attr(kAll), std::string("dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>"));
  CHECK_THROWS_WITH(coll::replica_groups_attr({{0, 1}, {2}}), std::invalid_argument, "same size");
  CHECK_THROWS_WITH(coll::replica_groups_attr({{0, 1}, {1, 2}}), std::invalid_argument,
                    "more than one place");
  CHECK_THROWS_WITH(coll::replica_groups_attr({}), std::invalid_argument, "must not be empty");
}

TEST(Collectives, ReductionsAllowedPerDtypeAsTorchDistributed) {
  using coll::ReduceOp;
  CHECK_THROWS_WITH(coll::check_reduction({ReduceOp::BitAnd}, DType::F32), std::invalid_argument,
                    "Cannot use ReduceOp.BAND with non-integral dtype");
  CHECK_THROWS_WITH(coll::check_reduction({ReduceOp::Avg}, DType::Bool), std::invalid_argument,
                    "Cannot use ReduceOp.AVG with boolean inputs");
  CHECK_THROWS_WITH(coll::check_reduction({ReduceOp::PremulSum, 2.0}, DType::I32), std::invalid_argument,
                    "PREMUL_SUM with integer inputs");
  CHECK_THROWS_WITH(coll::check_reduction({ReduceOp::Max}, DType::C64), std::invalid_argument, "complex");
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max,
                      ReduceOp::BitAnd, ReduceOp::BitOr, ReduceOp::BitXor})
    coll::check_reduction({op}, DType::I64);  // every op but PREMUL_SUM is defined on integers
}

TEST(Collectives, AllReduceNativeAndFoldedOpsOnFourReplicas) {
  // add is XLA's own all_reduce; xor has no XLA reduction kind and is gathered and folded.
  for (coll::ReduceOp op : {coll::ReduceOp::Sum, coll::ReduceOp::BitXor, coll::ReduceOp::Min}) {
    Builder b;
    Value x = b.param(Type{DType::I32, {4}});
    b.set_results({coll::all_reduce(b, x, {op}, kAll)});
    std::vector<int32_t> want(4);
    for (size_t i = 0; i < 4; ++i) {
      want[i] = kInputs[0][i];
      for (size_t r = 1; r < kReplicas; ++r) {
        int32_t v = kInputs[r][i];
        want[i] = op == coll::ReduceOp::Sum   ? want[i] + v
                  : op == coll::ReduceOp::Min ? std::min(want[i], v)
                                              : want[i] ^ v;
      }
    }
    for (const auto& got : run_i32(b, kInputs, 4)) CHECK_EQ(got, want);
  }
}

TEST(Collectives, ReduceScatterWithTwoGroupsAndPermute) {
  {
    // Groups {0, 2} and {1, 3}: replica 0 gets block 0 of inputs 0 + 2, replica 2 block 1.
    Builder b;
    Value x = b.param(Type{DType::I32, {4}});
    b.set_results({coll::reduce_scatter(b, x, 0, {coll::ReduceOp::BitOr}, {{0, 2}, {1, 3}})});
    auto got = run_i32(b, kInputs, 2);
    CHECK_EQ(got[0], (std::vector<int32_t>{1 | 4, 6 | 3}));
    CHECK_EQ(got[2], (std::vector<int32_t>{0 | 5, 9}));
    CHECK_EQ(got[1], (std::vector<int32_t>{2 | 8, 5 | 7}));
    CHECK_EQ(got[3], (std::vector<int32_t>{3 | 6, 9}));
  }
  {
    Builder b;
    Value x = b.param(Type{DType::I32, {4}});
    b.set_results({coll::collective_permute(b, x, {{0, 3}, {3, 1}})});
    auto got = run_i32(b, kInputs, 4);
    CHECK_EQ(got[3], kInputs[0]);
    CHECK_EQ(got[1], kInputs[3]);
    CHECK_EQ(got[0], (std::vector<int32_t>{0, 0, 0, 0}));  // no source: zeros
    CHECK_EQ(got[2], (std::vector<int32_t>{0, 0, 0, 0}));
  }
  Builder b;
  Value x = b.param(Type{DType::I32, {4}});
  CHECK_THROWS_WITH(coll::collective_permute(b, x, {{0, 1}, {0, 2}}), std::invalid_argument, "source twice");
  CHECK_THROWS_WITH(coll::reduce_scatter(b, x, 0, {coll::ReduceOp::Sum}, {{0, 1, 2}}), std::invalid_argument,
                    "equal blocks");
}
