// Unit tests of the lowering kit: the types its steps produce and output_mask handling.
#include "lowering/core/kit.h"

#include <stdexcept>

#include "testing/unit_test.h"

namespace {

using tpu::ir::DType;
using tpu::ir::Type;
using tpu::lowering::Arg;

TEST(LoweringKit, ComputeDtypeWidensOnlyHalfFloats) {
  using tpu::lowering::compute_dtype;
  CHECK_EQ(compute_dtype(DType::F16), DType::F32);
  CHECK_EQ(compute_dtype(DType::BF16), DType::F32);
  CHECK_EQ(compute_dtype(DType::F32), DType::F32);
  CHECK_EQ(compute_dtype(DType::F64), DType::F64);
  CHECK_EQ(compute_dtype(DType::I32), DType::I32);
  CHECK_EQ(compute_dtype(DType::C64), DType::C64);
}

TEST(LoweringKit, FinishGivesTheOutputsDtypeAndShape) {
  tpu::ir::Builder b;
  tpu::lowering::Ctx c{b, {}, {Type{DType::BF16, {2, 3}}, Type{DType::F32, {6}}}, {}, {}, nullptr};
  tpu::ir::Value v = b.param(Type{DType::F32, {6}});
  CHECK(tpu::lowering::finish(c, v).type == (Type{DType::BF16, {2, 3}}));
  CHECK_EQ(tpu::lowering::finish(c, v, 1).id, v.id);  // already output 1's type: no op
}

TEST(LoweringKit, OutputMaskPicksComputedOutputsAndZeroesTheOthers) {
  tpu::lowering::Lowering l{"test::backward", nullptr};
  l.signature = tpu::lowering::reads({"grad", "output_mask"});
  l.schema_args = {"grad", "output_mask"};
  Arg mask;
  mask.kind = Arg::Kind::IntList;
  mask.ints = {1, 0};  // shorter than the three outputs: the third counts as wanted
  tpu::ir::Builder b;
  std::vector<Type> outs = {Type{DType::F32, {4}}, Type{DType::F32, {2}}, Type{DType::F16, {3}}};
  tpu::lowering::Ctx c{b, {Arg{}, mask}, outs, {}, {}, &l};
  CHECK(tpu::lowering::output_wanted(c, 0));
  CHECK(!tpu::lowering::output_wanted(c, 1));
  CHECK(tpu::lowering::output_wanted(c, 2));
  tpu::ir::Value g = b.param(Type{DType::F32, {4}});
  tpu::ir::Value h = b.param(Type{DType::F32, {3}});
  std::vector<tpu::ir::Value> r = tpu::lowering::masked_outputs(c, {g, {}, h});
  REQUIRE_EQ(r.size(), size_t{3});
  CHECK_EQ(r[0].id, g.id);
  CHECK(r[1].id != g.id && r[1].type == outs[1]);  // zeros of the placeholder's type
  CHECK(r[2].type == outs[2]);
  // No mask passed (an optional left out): every output is wanted.
  tpu::lowering::Ctx no_mask{b, {Arg{}}, outs, {}, {}, &l};
  CHECK(tpu::lowering::output_wanted(no_mask, 1));
}

TEST(LoweringKit, ComplexHelpersKeepRealTypesAndGiveRealMagnitudes) {
  tpu::ir::Builder b;
  tpu::ir::Value z = b.param(Type{DType::C64, {3}});
  tpu::ir::Value x = b.param(Type{DType::F32, {3}});
  tpu::ir::Value u = b.param(Type{DType::U8, {3}});
  CHECK(tpu::lowering::conj(b, z).type == z.type);
  CHECK_EQ(tpu::lowering::conj(b, x).id, x.id);
  CHECK(tpu::lowering::abs(b, z).type == (Type{DType::F32, {3}}));
  CHECK(tpu::lowering::abs(b, x).type == x.type);
  CHECK_EQ(tpu::lowering::abs(b, u).id, u.id);
  CHECK_THROWS_WITH(tpu::lowering::require_real(DType::C128, "linalg_qr"), std::invalid_argument,
                    "linalg_qr does not support complex");
  tpu::lowering::require_real(DType::F64, "linalg_qr");
}

}  // namespace
