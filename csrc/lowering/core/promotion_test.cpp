// Unit tests of lowering/promotion against torch.promote_types / torch.result_type results
// (the tables below are PyTorch's documented behaviour, checked with torch 2.x).
#include "lowering/core/promotion.h"
#include "testing/unit_test.h"

namespace {

using tpu::ir::DType;
using tpu::lowering::Arg;
using tpu::lowering::promote_types;
using tpu::lowering::result_type;

// A tensor argument of the given dtype and rank (its value id is irrelevant to promotion).
Arg tensor(DType t, int rank = 1) {
  Arg a;
  a.kind = Arg::Kind::Tensor;
  a.value = tpu::ir::Value{0, tpu::ir::Type{t, std::vector<int64_t>(rank, 2)}};
  return a;
}

// A Python number wrapped into a 0-d tensor (x + 1.5 via add.Tensor): f64, i64, i1 or c128.
Arg wrapped(DType t) {
  Arg a = tensor(t, 0);
  a.wrapped_number = true;
  return a;
}

// A Scalar schema argument (add.Scalar's `other`), passed as a 0-d runtime value.
Arg scalar(DType t) {
  Arg a;
  a.kind = Arg::Kind::Scalar;
  a.value = tpu::ir::Value{0, tpu::ir::Type{t, {}}};
  return a;
}

DType rt(std::initializer_list<Arg> args) {
  std::vector<Arg> owned(args);
  std::vector<const Arg*> ptrs;
  for (const Arg& a : owned) ptrs.push_back(&a);
  return result_type(ptrs);
}

}  // namespace

TEST(Promotion, PromoteTypesTable) {
  struct Row {
    DType a, b, expected;
  };
  // torch.promote_types(a, b)
  const Row rows[] = {
      {DType::U8, DType::I8, DType::I16},      {DType::BF16, DType::F16, DType::F32},
      {DType::Bool, DType::Bool, DType::Bool}, {DType::U8, DType::I16, DType::I16},
      {DType::I32, DType::I64, DType::I64},    {DType::U8, DType::Bool, DType::U8},
      {DType::I64, DType::BF16, DType::BF16},  {DType::F32, DType::F64, DType::F64},
      {DType::C64, DType::F64, DType::C128},   {DType::F16, DType::F32, DType::F32},
      {DType::I8, DType::F16, DType::F16},     {DType::Bool, DType::F16, DType::F16},
      {DType::I8, DType::I16, DType::I16},     {DType::U8, DType::I64, DType::I64},
      {DType::U8, DType::U8, DType::U8},       {DType::C64, DType::C128, DType::C128},
      {DType::I64, DType::C64, DType::C64},    {DType::BF16, DType::BF16, DType::BF16},
      {DType::Bool, DType::I32, DType::I32},   {DType::F64, DType::C64, DType::C128},
      {DType::U8, DType::F32, DType::F32},     {DType::I16, DType::BF16, DType::BF16},
  };
  for (const Row& r : rows) {
    CHECK_EQ(promote_types(r.a, r.b), r.expected);
    CHECK_EQ(promote_types(r.b, r.a), r.expected);  // symmetric
  }
}

TEST(Promotion, ResultTypeCategories) {
  // torch.result_type(...) for the argument mixes below.
  CHECK_EQ(rt({tensor(DType::U8), tensor(DType::I8)}), DType::I16);
  CHECK_EQ(rt({tensor(DType::BF16), tensor(DType::F16)}), DType::F32);
  CHECK_EQ(rt({tensor(DType::Bool), tensor(DType::Bool)}), DType::Bool);
  // int tensor + 1.5 -> default float dtype
  CHECK_EQ(rt({tensor(DType::I64), wrapped(DType::F64)}), DType::F32);
  CHECK_EQ(rt({tensor(DType::I32), scalar(DType::F64)}), DType::F32);
  // 0-d f64 tensor + f32 tensor -> f32 (dimensioned tensors win within a category)
  CHECK_EQ(rt({tensor(DType::F64, 0), tensor(DType::F32)}), DType::F32);
  CHECK_EQ(rt({tensor(DType::F32), tensor(DType::F64, 0)}), DType::F32);
  // ... but a higher category in a 0-d tensor wins: int32 tensor + 0-d f64 -> f64
  CHECK_EQ(rt({tensor(DType::I32), tensor(DType::F64, 0)}), DType::F64);
  CHECK_EQ(rt({tensor(DType::I32), tensor(DType::I64, 0)}), DType::I32);
  CHECK_EQ(rt({tensor(DType::U8), wrapped(DType::I64)}), DType::U8);
  CHECK_EQ(rt({tensor(DType::U8), scalar(DType::I64)}), DType::U8);
  CHECK_EQ(rt({tensor(DType::Bool), wrapped(DType::I64)}), DType::I64);
  CHECK_EQ(rt({tensor(DType::Bool), wrapped(DType::F64)}), DType::F32);
  CHECK_EQ(rt({tensor(DType::Bool), scalar(DType::Bool)}), DType::Bool);
  CHECK_EQ(rt({tensor(DType::I32), scalar(DType::Bool)}), DType::I32);
  CHECK_EQ(rt({tensor(DType::F16), wrapped(DType::F64)}), DType::F16);
  CHECK_EQ(rt({tensor(DType::BF16), scalar(DType::F64)}), DType::BF16);
  CHECK_EQ(rt({tensor(DType::I64), wrapped(DType::C128)}), DType::C64);
  CHECK_EQ(rt({tensor(DType::F64), wrapped(DType::C128)}), DType::C128);
  CHECK_EQ(rt({tensor(DType::F32), scalar(DType::C128)}), DType::C64);
  // Only 0-d tensors and numbers.
  CHECK_EQ(rt({tensor(DType::I64, 0), wrapped(DType::F64)}), DType::F32);
  CHECK_EQ(rt({tensor(DType::U8, 0), tensor(DType::I8, 0)}), DType::I16);
  CHECK_EQ(rt({tensor(DType::F32, 0), tensor(DType::F64, 0)}), DType::F64);
  CHECK_EQ(rt({tensor(DType::F64, 0), wrapped(DType::C128)}), DType::C128);
  CHECK_EQ(rt({tensor(DType::Bool, 0), tensor(DType::U8)}), DType::U8);
  CHECK_EQ(rt({tensor(DType::F16, 0), tensor(DType::BF16)}), DType::BF16);
  CHECK_EQ(rt({tensor(DType::I64, 0), tensor(DType::Bool)}), DType::I64);
  // Numbers alone: 1 + 2.5 in a float context -> default dtype; ints -> int64.
  CHECK_EQ(rt({wrapped(DType::I64), wrapped(DType::F64)}), DType::F32);
  CHECK_EQ(rt({wrapped(DType::I64), wrapped(DType::I64)}), DType::I64);
  // None and non-tensor arguments are ignored.
  Arg none, dim;
  dim.kind = Arg::Kind::Int;
  dim.i = 3;
  CHECK_EQ(rt({tensor(DType::I16), none, dim}), DType::I16);
}

TEST(Promotion, TensorListsAndCtx) {
  // torch.cat-like lists promote their members; None entries (invalid values) are skipped.
  Arg list;
  list.kind = Arg::Kind::TensorList;
  list.values = {tpu::ir::Value{0, {DType::I8, {2}}}, tpu::ir::Value{}, tpu::ir::Value{1, {DType::U8, {3}}}};
  std::vector<const Arg*> args{&list};
  CHECK_EQ(result_type(args), DType::I16);

  tpu::ir::Builder b;
  tpu::lowering::Lowering l{"test::promote", nullptr};
  l.signature = tpu::lowering::reads({"a", "b", "c", "d", "e"});
  l.schema_args = {"a", "b", "c", "d", "e"};
  tpu::lowering::Ctx ctx{
      b, {tensor(DType::I32), Arg{}, wrapped(DType::F64), tensor(DType::F64, 0)}, {}, {}, {}, &l};
  CHECK_EQ(result_type(ctx, {"a", "b", "c"}), DType::F32);
  CHECK_EQ(result_type(ctx, {"a", "d"}), DType::F64);
  CHECK_EQ(result_type(ctx, {"a", "e"}), DType::I32);  // an argument not passed counts as absent
}

TEST(Promotion, ToFloating) {
  using tpu::lowering::to_floating;
  CHECK_EQ(to_floating(DType::I64), DType::F32);
  CHECK_EQ(to_floating(DType::Bool), DType::F32);
  CHECK_EQ(to_floating(DType::U8), DType::F32);
  CHECK_EQ(to_floating(DType::F16), DType::F16);
  CHECK_EQ(to_floating(DType::BF16), DType::BF16);
  CHECK_EQ(to_floating(DType::F64), DType::F64);
  CHECK_EQ(to_floating(DType::C64), DType::C64);
}
