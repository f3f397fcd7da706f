// Unit tests of importing a StableHLO module into a program: renaming, attribute stripping, and a
// module printed the way jax.jit(...).lower(...).as_text() prints one, called from our @main and
// run on the plugin.
#include "ir/imported_module.h"

#include <stdexcept>

#include "ir/builder.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::ir::DType;
using tpu::ir::Type;
using tpu::testing::contains;
using tpu::testing::HostArray;

// y = (x + w) * 2 through a helper function, with the attributes JAX prints.
const char* kJaxStyleModule =
    R"(module @jit_scaled_sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %1 = call @double_sum(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
  func.func private @double_sum(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xf32>
    %1 = stablehlo.add %0, %0 : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}
)";

TEST(ImportedModule, RenamesFunctionsAndDropsAttributes) {
  tpu::ir::ImportedModule m = tpu::ir::import_module(kJaxStyleModule, "jax_op_0_");
  CHECK_EQ(m.entry, std::string("@jax_op_0_main"));
  CHECK(contains(m.functions,
                 "func.func private @jax_op_0_main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>)"));
  CHECK(contains(m.functions, "call @jax_op_0_double_sum("));
  CHECK(contains(m.functions, "func.func private @jax_op_0_double_sum("));
  CHECK(!contains(m.functions, "jax.result_info"));
  CHECK(!contains(m.functions, "mhlo.sharding"));
  CHECK(!contains(m.functions, "module"));
  CHECK_THROWS_WITH(tpu::ir::import_module("module @m {\n  func.func private @f() {\n  }\n}\n", "p_"),
                    std::invalid_argument, "no `func.func public @main`");
}

TEST(ImportedModule, CallRunsInsideTheProgram) {
  tpu::ir::ImportedModule m = tpu::ir::import_module(kJaxStyleModule, "jax_op_0_");
  tpu::ir::Builder b;
  tpu::ir::Value x = b.param(Type{DType::F32, {2, 3}});
  tpu::ir::Value w = b.param(Type{DType::F32, {3}});
  tpu::ir::Value y = b.call(m, {x, w}, {Type{DType::F32, {2, 3}}})[0];
  tpu::ir::Value z = b.call(m, {y, w}, {Type{DType::F32, {2, 3}}})[0];  // a second call shares the functions
  b.set_results({z});
  auto out = tpu::testing::run(b, {HostArray::of<float>(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5}),
                                   HostArray::of<float>(DType::F32, {3}, {1, 1, 1})});
  std::vector<float> r = out.at(0).as<float>();
  REQUIRE_EQ(r.size(), size_t{6});
  for (int i = 0; i < 6; ++i) CHECK_EQ(r[i], ((i + 1.0f) * 2 + 1) * 2);  // ((x + 1) * 2 + 1) * 2
  CHECK_EQ(b.module_text().find("func.func private @jax_op_0_main"),
           b.module_text().rfind("func.func private @jax_op_0_main"));
}

}  // namespace
