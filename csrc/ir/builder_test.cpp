// Unit tests of the ir layer (Builder, Type, dtype helpers) and of the lowering::hlo emitters,
// whose modules are compiled and run on the plugin and compared with values computed here.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include "ir/builder.h"
#include "ir/dtype.h"
#include "lowering/core/hlo.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::testing::contains;

using tpu::ir::Builder;
using tpu::ir::DType;
using tpu::ir::Shape;
using tpu::ir::Type;
using tpu::ir::Value;
using tpu::testing::HostArray;
namespace hlo = tpu::lowering::hlo;

std::vector<float> iota_f32(int64_t n, float scale = 1.f, float shift = 0.f) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale + shift;
  return v;
}

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// float -> bfloat16 bits, round to nearest even (finite inputs).
uint16_t bf16_bits(float f) {
  uint32_t u = f32_bits(f);
  uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

uint16_t f16_bits(double d) {
  _Float16 h = static_cast<_Float16>(d);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

// Row-major multi-index of flat position `i` in `shape`.
std::vector<int64_t> unflatten(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t flatten(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// dtype and Type
// ---------------------------------------------------------------------------------------------

TEST(IrDType, ItemsizeNamesAndCategories) {
  struct Row {
    DType t;
    int size;
    const char* name;
    bool floating, complex, integral, is_unsigned;
  };
  const Row rows[] = {
      {DType::Bool, 1, "i1", false, false, false, true},
      {DType::U8, 1, "ui8", false, false, true, true},
      {DType::I8, 1, "i8", false, false, true, false},
      {DType::I16, 2, "i16", false, false, true, false},
      {DType::I32, 4, "i32", false, false, true, false},
      {DType::I64, 8, "i64", false, false, true, false},
      {DType::U16, 2, "ui16", false, false, true, true},
      {DType::U32, 4, "ui32", false, false, true, true},
      {DType::U64, 8, "ui64", false, false, true, true},
      {DType::F16, 2, "f16", true, false, false, false},
      {DType::BF16, 2, "bf16", true, false, false, false},
      {DType::F32, 4, "f32", true, false, false, false},
      {DType::F64, 8, "f64", true, false, false, false},
      {DType::C64, 8, "complex<f32>", false, true, false, false},
      {DType::C128, 16, "complex<f64>", false, true, false, false},
      {DType::F8E4M3FN, 1, "f8E4M3FN", true, false, false, false},
      {DType::F8E5M2, 1, "f8E5M2", true, false, false, false},
      {DType::F8E4M3FNUZ, 1, "f8E4M3FNUZ", true, false, false, false},
      {DType::F8E5M2FNUZ, 1, "f8E5M2FNUZ", true, false, false, false},
      {DType::F8E8M0FNU, 1, "f8E8M0FNU", true, false, false, false},
  };
  for (const Row& r : rows) {
    CHECK_EQ(tpu::ir::itemsize(r.t), r.size);
    CHECK_EQ(std::string(tpu::ir::mlir_name(r.t)), std::string(r.name));
    CHECK_EQ(tpu::ir::is_floating(r.t), r.floating);
    CHECK_EQ(tpu::ir::is_complex(r.t), r.complex);
    CHECK_EQ(tpu::ir::is_integral(r.t), r.integral);
    CHECK_EQ(tpu::ir::is_unsigned(r.t), r.is_unsigned);
  }
  CHECK_EQ(tpu::ir::real_type(DType::C64), DType::F32);
  CHECK_EQ(tpu::ir::real_type(DType::C128), DType::F64);
  CHECK_EQ(tpu::ir::real_type(DType::I16), DType::I16);
}

TEST(IrType, StrNumelRank) {
  CHECK_EQ((Type{DType::F32, {2, 3}}).str(), std::string("tensor<2x3xf32>"));
  CHECK_EQ((Type{DType::I64, {}}).str(), std::string("tensor<i64>"));
  CHECK_EQ((Type{DType::Bool, {0, 4}}).str(), std::string("tensor<0x4xi1>"));
  CHECK_EQ((Type{DType::C64, {5}}).str(), std::string("tensor<5xcomplex<f32>>"));
  CHECK_EQ((Type{DType::F32, {2, 3, 4}}).numel(), int64_t{24});
  CHECK_EQ((Type{DType::F32, {}}).numel(), int64_t{1});
  CHECK_EQ((Type{DType::F32, {7, 0}}).numel(), int64_t{0});
  CHECK_EQ((Type{DType::F32, {7, 0}}).rank(), 2);
  CHECK((Type{DType::F32, {2}}) == (Type{DType::F32, {2}}));
  CHECK(!((Type{DType::F32, {2}}) == (Type{DType::F64, {2}})));
  CHECK(!((Type{DType::F32, {2}}) == (Type{DType::F32, {2, 1}})));
  Value v{3, Type{DType::I8, {4, 5, 6}}};
  CHECK_EQ(v.dim(-1), int64_t{6});
  CHECK_EQ(v.dim(0), int64_t{4});
  CHECK(v.valid());
  CHECK(!Value{}.valid());
}

TEST(IrBuilder, AttributeArrays) {
  CHECK_EQ(tpu::ir::i64_array({1, 2, -3}), std::string("array<i64: 1, 2, -3>"));
  CHECK_EQ(tpu::ir::i64_array({}), std::string("array<i64>"));
  CHECK_EQ(tpu::ir::i64_list({0, 5}), std::string("[0, 5]"));
  CHECK_EQ(tpu::ir::i64_list({}), std::string("[]"));
}

// ---------------------------------------------------------------------------------------------
// Builder text
// ---------------------------------------------------------------------------------------------

TEST(IrBuilder, ModuleTextShape) {
  Builder b;
  Value x = b.param(Type{DType::F32, {2, 3}});
  Value y = b.param(Type{DType::F32, {2, 3}});
  CHECK_EQ(b.num_params(), 2);
  Value s = b.op1("stablehlo.add", {x, y}, x.type);
  b.set_results({s});
  std::string text = b.module_text();
  CHECK(contains(text,
                 "func.func public @main(%0: tensor<2x3xf32>, %1: tensor<2x3xf32>) -> (tensor<2x3xf32>)"));
  CHECK(contains(text,
                 "%2 = \"stablehlo.add\"(%0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>"));
  CHECK(contains(text, "\"func.return\"(%2) : (tensor<2x3xf32>) -> ()"));
  CHECK(text.rfind("module", 0) == 0);

  auto out = tpu::testing::run(b, {HostArray::of(DType::F32, {2, 3}, iota_f32(6)),
                                   HostArray::of(DType::F32, {2, 3}, iota_f32(6, 10.f))});
  std::vector<float> expected(6);
  for (int i = 0; i < 6; ++i) expected[i] = i + 10.f * i;
  CHECK_EQ(out.at(0).as<float>(), expected);
}

TEST(IrBuilder, AttributesAndMultipleResultsOfMain) {
  Builder b;
  Value x = b.param(Type{DType::I32, {2, 3}});
  Value t = b.op1("stablehlo.transpose", {x}, Type{DType::I32, {3, 2}}, "permutation = array<i64: 1, 0>");
  Value n = b.op1("stablehlo.negate", {x}, x.type);
  b.set_results({t, n, x});
  std::string text = b.module_text();
  CHECK(contains(text, "{permutation = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>"));
  CHECK(contains(text, "-> (tensor<3x2xi32>, tensor<2x3xi32>, tensor<2x3xi32>)"));
  std::vector<int32_t> in{1, 2, 3, 4, 5, 6};
  auto out = tpu::testing::run(b, {HostArray::of(DType::I32, {2, 3}, in)});
  REQUIRE_EQ(out.size(), size_t{3});
  std::vector<int32_t> tr(6), neg(6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      tr[j * 2 + i] = in[i * 3 + j];
      neg[i * 3 + j] = -in[i * 3 + j];
    }
  CHECK_EQ(out[0].as<int32_t>(), tr);
  CHECK_EQ(out[1].as<int32_t>(), neg);
  CHECK_EQ(out[2].as<int32_t>(), in);
}

TEST(IrBuilder, MultiResultOpWithRegion) {
  // sort (keys, payload) by keys: a two-result op with a comparator region.
  Builder b;
  Value keys = b.param(Type{DType::F32, {6}});
  Value payload = b.param(Type{DType::I64, {6}});
  std::vector<Value> sorted = b.op_with_region(
      "stablehlo.sort", {keys, payload}, {keys.type, payload.type}, "dimension = 0 : i64, is_stable = true",
      {Type{DType::F32, {}}, Type{DType::F32, {}}, Type{DType::I64, {}}, Type{DType::I64, {}}},
      [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
        return {hlo::compare(rb, a[0], a[1], "LT")};
      });
  REQUIRE_EQ(sorted.size(), size_t{2});
  // A later op consuming one member of the pack.
  Value twice = hlo::add(b, sorted[1], sorted[1]);
  b.set_results({sorted[0], sorted[1], twice});
  std::string text = b.module_text();
  CHECK(contains(text, "%r2:2 = \"stablehlo.sort\"(%0, %1) ({"));
  CHECK(contains(text, "^bb0(%4: tensor<f32>, %5: tensor<f32>, %6: tensor<i64>, %7: tensor<i64>):"));
  CHECK(contains(text, "\"stablehlo.compare\"(%4, %5)"));
  CHECK(contains(text, "\"stablehlo.return\"(%8) : (tensor<i1>) -> ()"));
  CHECK(contains(text,
                 "}) {dimension = 0 : i64, is_stable = true} : (tensor<6xf32>, tensor<6xi64>) -> "
                 "(tensor<6xf32>, tensor<6xi64>)"));
  CHECK(contains(text, "\"stablehlo.add\"(%r2#1, %r2#1)"));
  CHECK(contains(text, "\"func.return\"(%r2#0, %r2#1, %9)"));

  std::vector<float> k{3.5f, -1.f, 2.f, 8.f, -1.f, 0.f};
  std::vector<int64_t> p{0, 1, 2, 3, 4, 5};
  auto out = tpu::testing::run(b, {HostArray::of(DType::F32, {6}, k), HostArray::of(DType::I64, {6}, p)});
  REQUIRE_EQ(out.size(), size_t{3});
  // Reference: stable sort of positions by key.
  std::vector<int64_t> order = p;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return k[a] < k[c]; });
  std::vector<float> sk;
  std::vector<int64_t> twice_ref;
  for (int64_t i : order) {
    sk.push_back(k[i]);
    twice_ref.push_back(2 * i);
  }
  CHECK_EQ(out[0].as<float>(), sk);
  CHECK_EQ(out[1].as<int64_t>(), order);
  CHECK_EQ(out[2].as<int64_t>(), twice_ref);
}

TEST(IrBuilder, WhileWithTwoRegions) {
  // while (i < 5) { i += 1; x *= 2 }: a two-result op with a condition and a body region.
  Builder b;
  Value x = b.param(Type{DType::F32, {3}});
  Value i0 = hlo::constant_int(b, DType::I64, 0);
  std::vector<Type> types{i0.type, x.type};
  Builder::Region cond{types, [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                         return {hlo::compare(rb, a[0], hlo::constant_int(rb, DType::I64, 5), "LT")};
                       }};
  Builder::Region body{types, [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                         return {hlo::add(rb, a[0], hlo::constant_int(rb, DType::I64, 1)),
                                 hlo::add(rb, a[1], a[1])};
                       }};
  std::vector<Value> out = b.op_with_regions("stablehlo.while", {i0, x}, types, "", {cond, body});
  REQUIRE_EQ(out.size(), size_t{2});
  b.set_results({out[0], out[1]});
  std::string text = b.module_text();
  CHECK(contains(text, "\"stablehlo.while\"(%1, %0) ({"));
  CHECK(contains(text, "}, {"));
  auto res = tpu::testing::run(b, {HostArray::of(DType::F32, {3}, std::vector<float>{1.f, -2.f, 0.5f})});
  REQUIRE_EQ(res.size(), size_t{2});
  CHECK_EQ(res[0].as<int64_t>(), std::vector<int64_t>{5});
  CHECK_EQ(res[1].as<float>(), (std::vector<float>{32.f, -64.f, 16.f}));
}

TEST(IrBuilder, VariadicReduceArgmax) {
  // reduce_multi over (values, indices): a region with four arguments and two results.
  Builder b;
  Value x = b.param(Type{DType::F32, {3, 4}});
  Value idx = hlo::iota(b, Type{DType::I64, {3, 4}}, 1);
  auto r = hlo::reduce_multi(b, {x, idx},
                             {hlo::constant(b, DType::F32, -std::numeric_limits<double>::infinity()),
                              hlo::constant_int(b, DType::I64, -1)},
                             {1}, [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                               // StableHLO reduce block arguments: (acc_v, acc_i, cur_v, cur_i).
                               Value take = hlo::compare(rb, a[2], a[0], "GT");
                               return {hlo::select(rb, take, a[2], a[0]), hlo::select(rb, take, a[3], a[1])};
                             });
  REQUIRE_EQ(r.size(), size_t{2});
  b.set_results(r);
  std::string text = b.module_text();
  CHECK(contains(text, "\"stablehlo.reduce\""));
  CHECK(contains(text, "#0") && contains(text, "#1"));
  std::vector<float> in{1, 7, 3, 7, -5, -2, -9, -3, 0, 0, 4, 1};
  auto out = tpu::testing::run(b, {HostArray::of(DType::F32, {3, 4}, in)});
  std::vector<float> mx;
  std::vector<int64_t> am;
  for (int i = 0; i < 3; ++i) {
    int best = 0;
    for (int j = 1; j < 4; ++j)
      if (in[i * 4 + j] > in[i * 4 + best]) best = j;
    mx.push_back(in[i * 4 + best]);
    am.push_back(best);
  }
  CHECK_EQ(out.at(0).dims, (std::vector<int64_t>{3}));
  CHECK_EQ(out.at(0).as<float>(), mx);
  // Ties: the reduction order is unspecified, so any maximal index is right.
  auto got = out.at(1).as<int64_t>();
  REQUIRE_EQ(got.size(), size_t{3});
  for (int i = 0; i < 3; ++i) {
    REQUIRE(got[i] >= 0 && got[i] < 4);
    CHECK_EQ(in[i * 4 + got[i]], mx[i]);
  }
}

// ---------------------------------------------------------------------------------------------
// hlo emitters, run on the plugin
// ---------------------------------------------------------------------------------------------

TEST(Hlo, BroadcastTo) {
  struct Case {
    Shape from, to;
  };
  const Case cases[] = {
      {{3}, {2, 3}}, {{2, 1}, {2, 3}}, {{1, 3, 1}, {2, 3, 4}},    {{}, {2, 2}},
      {{4}, {4}},    {{1}, {5}},       {{2, 1, 3}, {4, 2, 5, 3}},
  };
  for (const Case& c : cases) {
    Builder b;
    Value x = b.param(Type{DType::F32, c.from});
    Value y = hlo::broadcast_to(b, x, c.to);
    CHECK_EQ(y.shape(), c.to);
    b.set_results({y});
    int64_t n_in = Type{DType::F32, c.from}.numel(), n_out = Type{DType::F32, c.to}.numel();
    std::vector<float> in = iota_f32(n_in, 1.f, 0.5f);
    auto out = tpu::testing::run(b, {HostArray::of(DType::F32, c.from, in)});
    // Reference: trailing-aligned, size-1 source dims read index 0.
    std::vector<float> expected(n_out);
    size_t off = c.to.size() - c.from.size();
    for (int64_t i = 0; i < n_out; ++i) {
      auto idx = unflatten(i, c.to);
      std::vector<int64_t> src(c.from.size());
      for (size_t d = 0; d < c.from.size(); ++d) src[d] = c.from[d] == 1 ? 0 : idx[d + off];
      expected[i] = in[flatten(src, c.from)];
    }
    CHECK_EQ(out.at(0).as<float>(), expected);
  }
  Builder b;
  Value x = b.param(Type{DType::F32, {3}});
  CHECK_THROWS(hlo::broadcast_to(b, x, {2, 4}), std::invalid_argument);
  CHECK_THROWS(hlo::broadcast_to(b, x, {}), std::invalid_argument);
}

TEST(Hlo, SliceWithStrides) {
  Shape in_shape{5, 7};
  std::vector<float> in = iota_f32(35, 1.f, 100.f);
  struct Case {
    std::vector<int64_t> start, limit, strides;
  };
  const Case cases[] = {
      {{1, 0}, {5, 7}, {2, 3}}, {{0, 2}, {5, 6}, {}},     {{4, 6}, {5, 7}, {1, 1}},
      {{0, 1}, {5, 7}, {4, 5}}, {{2, 3}, {2, 3}, {1, 1}},
  };
  for (const Case& c : cases) {
    Builder b;
    Value x = b.param(Type{DType::F32, in_shape});
    Value y = hlo::slice(b, x, c.start, c.limit, c.strides);
    b.set_results({y});
    std::vector<int64_t> st = c.strides.empty() ? std::vector<int64_t>{1, 1} : c.strides;
    Shape expected_shape;
    for (int d = 0; d < 2; ++d) {
      int64_t n = 0;
      for (int64_t i = c.start[d]; i < c.limit[d]; i += st[d]) ++n;
      expected_shape.push_back(n);
    }
    CHECK_EQ(y.shape(), expected_shape);
    std::vector<float> expected;
    for (int64_t i = c.start[0]; i < c.limit[0]; i += st[0])
      for (int64_t j = c.start[1]; j < c.limit[1]; j += st[1]) expected.push_back(in[i * 7 + j]);
    auto out = tpu::testing::run(b, {HostArray::of(DType::F32, in_shape, in)});
    CHECK_EQ(out.at(0).as<float>(), expected);
  }
  // slice_dim: rows 1, 3 of a 5x7.
  Builder b;
  Value x = b.param(Type{DType::F32, in_shape});
  b.set_results({hlo::slice_dim(b, x, 0, 1, 5, 2)});
  std::vector<float> expected;
  for (int i : {1, 3})
    for (int j = 0; j < 7; ++j) expected.push_back(in[i * 7 + j]);
  CHECK_EQ(tpu::testing::run(b, {HostArray::of(DType::F32, in_shape, in)}).at(0).as<float>(), expected);
}

TEST(Hlo, ConstantsIncludingNonFinite) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Builder b;
  std::vector<Value> r{
      hlo::constant(b, DType::F32, inf),    hlo::constant(b, DType::F32, -inf),
      hlo::constant(b, DType::F32, nan),    hlo::constant(b, DType::F64, -inf),
      hlo::constant(b, DType::F64, nan),    hlo::constant(b, DType::BF16, inf),
      hlo::constant(b, DType::BF16, nan),   hlo::constant(b, DType::F16, -inf),
      hlo::constant(b, DType::F32, 0.1),    hlo::constant(b, DType::F64, 0.1),
      hlo::constant(b, DType::BF16, 0.1),   hlo::constant(b, DType::F16, 0.1),
      hlo::constant(b, DType::F64, 1e300),  hlo::constant(b, DType::F32, -0.0),
      hlo::constant(b, DType::F64, 5e-324),
  };
  for (const Value& v : r) CHECK_EQ(v.shape(), Shape{});
  b.set_results(r);
  auto out = tpu::testing::run(b, {});
  REQUIRE_EQ(out.size(), r.size());
  auto f32 = [&](int i) { return out[i].as<float>().at(0); };
  auto f64 = [&](int i) { return out[i].as<double>().at(0); };
  auto u16 = [&](int i) { return out[i].as<uint16_t>().at(0); };
  CHECK(std::isinf(f32(0)) && f32(0) > 0);
  CHECK(std::isinf(f32(1)) && f32(1) < 0);
  CHECK(std::isnan(f32(2)));
  CHECK(std::isinf(f64(3)) && f64(3) < 0);
  CHECK(std::isnan(f64(4)));
  CHECK_EQ(u16(5), uint16_t{0x7F80});  // bf16 +inf
  CHECK_EQ(u16(6) & 0x7F80, 0x7F80);   // bf16 nan: all exponent bits ...
  CHECK((u16(6) & 0x007F) != 0);       // ... and a non-zero mantissa
  CHECK_EQ(u16(7), uint16_t{0xFC00});  // f16 -inf
  CHECK_EQ(f32(8), 0.1f);
  CHECK_EQ(f64(9), 0.1);
  CHECK_EQ(u16(10), bf16_bits(0.1f));
  CHECK_EQ(u16(11), f16_bits(0.1));
  CHECK_EQ(f64(12), 1e300);
  CHECK_EQ(f32_bits(f32(13)), uint32_t{0x80000000});  // -0.0 keeps its sign
  CHECK_EQ(f64(14), 5e-324);
}

TEST(Hlo, IntegerBoolAndComplexConstants) {
  Builder b;
  std::vector<Value> r{
      hlo::constant_int(b, DType::I64, int64_t{1} << 40),
      hlo::constant_int(b, DType::I64, std::numeric_limits<int64_t>::min()),
      hlo::constant_int(b, DType::I8, -128),
      hlo::constant_int(b, DType::U8, 200),
      hlo::constant_int(b, DType::U64, -1),  // all ones
      hlo::constant(b, DType::I32, -2.75),   // truncates toward zero, like a C++ cast
      hlo::constant(b, DType::Bool, 0.5),
      hlo::constant(b, DType::Bool, 0.0),
      hlo::constant_int(b, DType::F32, 7),  // integers into float types
      hlo::constant(b, DType::C64, 1.5),
  };
  b.set_results(r);
  auto out = tpu::testing::run(b, {});
  REQUIRE_EQ(out.size(), r.size());
  CHECK_EQ(out[0].as<int64_t>().at(0), int64_t{1} << 40);
  CHECK_EQ(out[1].as<int64_t>().at(0), std::numeric_limits<int64_t>::min());
  CHECK_EQ(out[2].as<int8_t>().at(0), int8_t{-128});
  CHECK_EQ(out[3].as<uint8_t>().at(0), uint8_t{200});
  CHECK_EQ(out[4].as<uint64_t>().at(0), std::numeric_limits<uint64_t>::max());
  CHECK_EQ(out[5].as<int32_t>().at(0), int32_t{-2});
  CHECK_EQ(out[6].as<uint8_t>().at(0), uint8_t{1});
  CHECK_EQ(out[7].as<uint8_t>().at(0), uint8_t{0});
  CHECK_EQ(out[8].as<float>().at(0), 7.f);
  CHECK_EQ(out[9].as<float>(), (std::vector<float>{1.5f, 0.f}));
}

TEST(Hlo, FullIotaConcatPadReverse) {
  Builder b;
  Value x = b.param(Type{DType::I32, {2, 3}});
  Value full = hlo::full(b, Type{DType::I32, {2, 2}}, 9);
  Value io = hlo::iota(b, Type{DType::I32, {2, 3}}, 1);
  Value cat = hlo::concatenate(b, {x, full}, 1);  // 2x5
  Value padded =
      hlo::pad(b, x, hlo::constant_int(b, DType::I32, -1), {1, 0}, {0, 2}, {0, 1});  // 3x(3+2+2)=3x7
  Value rev = hlo::reverse(b, x, {0, 1});
  Value sum = hlo::add(b, x, io);
  CHECK_EQ(cat.shape(), (Shape{2, 5}));
  CHECK_EQ(padded.shape(), (Shape{3, 7}));
  b.set_results({cat, padded, rev, sum});
  std::vector<int32_t> in{1, 2, 3, 4, 5, 6};
  auto out = tpu::testing::run(b, {HostArray::of(DType::I32, {2, 3}, in)});
  std::vector<int32_t> cat_ref, pad_ref(21, -1), rev_ref(6), sum_ref(6);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) cat_ref.push_back(in[i * 3 + j]);
    cat_ref.push_back(9);
    cat_ref.push_back(9);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      pad_ref[(i + 1) * 7 + 2 * j] = in[i * 3 + j];  // one low row; interior 1 between columns
      rev_ref[(1 - i) * 3 + (2 - j)] = in[i * 3 + j];
      sum_ref[i * 3 + j] = in[i * 3 + j] + j;
    }
  CHECK_EQ(out.at(0).as<int32_t>(), cat_ref);
  CHECK_EQ(out.at(1).as<int32_t>(), pad_ref);
  CHECK_EQ(out.at(2).as<int32_t>(), rev_ref);
  CHECK_EQ(out.at(3).as<int32_t>(), sum_ref);
}

TEST(Hlo, CompareSelectConvertReduceDot) {
  Builder b;
  Value x = b.param(Type{DType::F32, {2, 3}});
  Value y = b.param(Type{DType::F32, {3, 2}});
  Value gt = hlo::compare(b, x, hlo::full(b, x.type, 0), "GT");
  Value relu = hlo::select(b, gt, x, hlo::full(b, x.type, 0));
  Value as_int = hlo::convert(b, x, DType::I32);
  Value row_sum = hlo::reduce(b, x, hlo::constant(b, DType::F32, 0), {1}, hlo::Combiner::Add);
  Value mm = hlo::dot_general(b, x, y, {}, {}, {1}, {0}, DType::F32);
  Value notgt = hlo::logical_not(b, gt);
  CHECK_EQ(mm.shape(), (Shape{2, 2}));
  b.set_results({relu, as_int, row_sum, mm, notgt});
  std::vector<float> xv{-1.5f, 2.5f, 0.f, 3.75f, -0.25f, 8.f}, yv{1, 2, 3, 4, 5, 6};
  auto out =
      tpu::testing::run(b, {HostArray::of(DType::F32, {2, 3}, xv), HostArray::of(DType::F32, {3, 2}, yv)});
  std::vector<float> relu_ref, sum_ref(2, 0.f), mm_ref(4, 0.f);
  std::vector<int32_t> int_ref;
  std::vector<uint8_t> not_ref;
  for (float v : xv) {
    relu_ref.push_back(v > 0 ? v : 0.f);
    int_ref.push_back(static_cast<int32_t>(v));
    not_ref.push_back(!(v > 0));
  }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) {
      sum_ref[i] += xv[i * 3 + k];
      for (int j = 0; j < 2; ++j) mm_ref[i * 2 + j] += xv[i * 3 + k] * yv[k * 2 + j];
    }
  CHECK_EQ(out.at(0).as<float>(), relu_ref);
  CHECK_EQ(out.at(1).as<int32_t>(), int_ref);
  CHECK_EQ(out.at(2).as<float>(), sum_ref);
  CHECK_EQ(out.at(3).as<float>(), mm_ref);
  CHECK_EQ(out.at(4).as<uint8_t>(), not_ref);
}

TEST(Hlo, DynamicSliceAndUpdate) {
  Builder b;
  Value x = b.param(Type{DType::I64, {4, 5}});
  Value i = b.param(Type{DType::I64, {}});
  Value j = b.param(Type{DType::I64, {}});
  Value ds = hlo::dynamic_slice(b, x, {i, j}, {2, 3});
  Value upd = hlo::dynamic_update_slice(b, x, hlo::full(b, Type{DType::I64, {2, 3}}, -7), {i, j});
  b.set_results({ds, upd});
  std::vector<int64_t> in(20);
  for (int k = 0; k < 20; ++k) in[k] = 10 * k;
  int64_t si = 1, sj = 2;
  auto out = tpu::testing::run(
      b, {HostArray::of(DType::I64, {4, 5}, in), HostArray::of(DType::I64, {}, std::vector<int64_t>{si}),
          HostArray::of(DType::I64, {}, std::vector<int64_t>{sj})});
  std::vector<int64_t> ds_ref, upd_ref = in;
  for (int64_t r = si; r < si + 2; ++r)
    for (int64_t c = sj; c < sj + 3; ++c) {
      ds_ref.push_back(in[r * 5 + c]);
      upd_ref[r * 5 + c] = -7;
    }
  CHECK_EQ(out.at(0).as<int64_t>(), ds_ref);
  CHECK_EQ(out.at(1).as<int64_t>(), upd_ref);
}

TEST(Hlo, WrapDim) {
  CHECK_EQ(hlo::wrap_dim(-1, 3), int64_t{2});
  CHECK_EQ(hlo::wrap_dim(-3, 3), int64_t{0});
  CHECK_EQ(hlo::wrap_dim(2, 3), int64_t{2});
  CHECK_EQ(hlo::wrap_dim(0, 0), int64_t{0});  // 0-d tensors accept dim 0 and -1
  CHECK_EQ(hlo::wrap_dim(-1, 0), int64_t{0});
  CHECK_THROWS_WITH(hlo::wrap_dim(3, 3), std::out_of_range, "Dimension out of range");
  CHECK_THROWS(hlo::wrap_dim(-4, 3), std::out_of_range);
  CHECK_EQ(hlo::with_dtype(Type{DType::F32, {2}}, DType::I8), (Type{DType::I8, {2}}));
}

namespace {

// Runs a module returning one scalar made by `make`; records a failure (and returns empty bytes)
// when the module does not compile.
std::vector<uint8_t> scalar_constant(const char* what, const std::function<Value(Builder&)>& make) {
  Builder b;
  b.set_results({make(b)});
  try {
    return tpu::testing::run(b, {}).at(0).bytes;
  } catch (const std::exception& e) {
    tpu::testing::fail(__FILE__, __LINE__, std::string(what) + " does not compile: " + e.what());
    return {};
  }
}

template <typename T>
std::optional<T> scalar_as(const std::vector<uint8_t>& bytes) {
  if (bytes.size() != sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

}  // namespace

TEST(Hlo, OutOfRangeConstantsFollowCasts) {
  // A float too large for f32 is +inf there (torch.tensor(1e300, dtype=torch.float32) == inf),
  // a too small one is 0; a negative integer in an unsigned type wraps (torch: uint8 * -1 == 255).
  auto big = scalar_as<float>(scalar_constant(
      "constant(F32, 1e300)", [](Builder& b) { return hlo::constant(b, DType::F32, 1e300); }));
  if (big) CHECK(std::isinf(*big) && *big > 0);
  auto tiny = scalar_as<float>(scalar_constant(
      "constant(F32, 1e-50)", [](Builder& b) { return hlo::constant(b, DType::F32, 1e-50); }));
  if (tiny) CHECK_EQ(*tiny, 0.f);
  // Exactly representable powers of ten print without a '.' under %g ("1e+20").
  auto e20 = scalar_as<double>(
      scalar_constant("constant(F64, 1e20)", [](Builder& b) { return hlo::constant(b, DType::F64, 1e20); }));
  if (e20) CHECK_EQ(*e20, 1e20);
  auto e20f = scalar_as<float>(
      scalar_constant("constant(F32, 1e20)", [](Builder& b) { return hlo::constant(b, DType::F32, 1e20); }));
  if (e20f) CHECK_EQ(*e20f, 1e20f);
  auto u8 = scalar_as<uint8_t>(scalar_constant(
      "constant_int(U8, -1)", [](Builder& b) { return hlo::constant_int(b, DType::U8, -1); }));
  if (u8) CHECK_EQ(*u8, uint8_t{255});
  auto u32 = scalar_as<uint32_t>(scalar_constant(
      "constant_int(U32, -1)", [](Builder& b) { return hlo::constant_int(b, DType::U32, -1); }));
  if (u32) CHECK_EQ(*u32, uint32_t{0xFFFFFFFF});
}
