// Unit tests of the hlo:: emitters: result types inferred as StableHLO defines them (complex
// parts, is_finite, complex, compare, bitcast_convert, fft), operand-type mismatches rejected
// with the op's name, combiners, and programs built from the inferred types accepted and run by
// the plugin.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowering/core/hlo.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::testing::contains;

using tpu::ir::Builder;
using tpu::ir::DType;
using tpu::ir::Type;
using tpu::ir::Value;
using tpu::testing::HostArray;
namespace hlo = tpu::lowering::hlo;

// The module text of `b` with `v` as its only result.
std::string text_of(Builder& b, const Value& v) {
  b.set_results({v});
  return b.module_text();
}

TEST(HloEmitters, ComplexPartsHaveTheRealElementType) {
  Builder b;
  Value z = b.param(Type{DType::C64, {2, 3}});
  Value w = b.param(Type{DType::C128, {4}});
  CHECK_EQ(hlo::real(b, z).type.str(), std::string("tensor<2x3xf32>"));
  CHECK_EQ(hlo::imag(b, z).type.str(), std::string("tensor<2x3xf32>"));
  CHECK_EQ(hlo::abs(b, z).type.str(), std::string("tensor<2x3xf32>"));
  CHECK_EQ(hlo::real(b, w).type.str(), std::string("tensor<4xf64>"));
  CHECK_EQ(hlo::imag(b, w).type.str(), std::string("tensor<4xf64>"));
  CHECK_EQ(hlo::abs(b, w).type.str(), std::string("tensor<4xf64>"));
  Value r = hlo::abs(b, z);
  CHECK(contains(text_of(b, r), "\"stablehlo.abs\"(%0) : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>"));
}

TEST(HloEmitters, RealOperandsKeepTheirTypeThroughAbsAndReal) {
  Builder b;
  Value x = b.param(Type{DType::F32, {5}});
  Value i = b.param(Type{DType::I32, {5}});
  CHECK_EQ(hlo::abs(b, x).type.str(), x.type.str());
  CHECK_EQ(hlo::abs(b, i).type.str(), i.type.str());
  CHECK_EQ(hlo::real(b, x).type.str(), x.type.str());
  CHECK_EQ(hlo::neg(b, i).type.str(), i.type.str());
  CHECK_EQ(hlo::sqrt(b, x).type.str(), x.type.str());
}

TEST(HloEmitters, PredicatesAreBoolOfTheOperandShape) {
  Builder b;
  Value x = b.param(Type{DType::BF16, {3, 1}});
  Value f = hlo::is_finite(b, x);
  CHECK_EQ(f.type.str(), std::string("tensor<3x1xi1>"));
  CHECK_EQ(hlo::compare(b, x, x, "LT").type.str(), std::string("tensor<3x1xi1>"));
  CHECK(contains(text_of(b, f), "\"stablehlo.is_finite\"(%0) : (tensor<3x1xbf16>) -> tensor<3x1xi1>"));
}

TEST(HloEmitters, ComplexOfTwoPartsIsTheirComplexType) {
  Builder b;
  Value re = b.param(Type{DType::F32, {2}});
  Value im = b.param(Type{DType::F32, {2}});
  Value re64 = b.param(Type{DType::F64, {}});
  CHECK_EQ(hlo::complex(b, re, im).type.str(), std::string("tensor<2xcomplex<f32>>"));
  CHECK_EQ(hlo::complex(b, re64, re64).type.str(), std::string("tensor<complex<f64>>"));
}

TEST(HloEmitters, BitcastConvertAddsOrConsumesTheWidthRatio) {
  Builder b;
  Value x = b.param(Type{DType::F64, {3}});
  CHECK_EQ(hlo::bitcast_convert(b, x, DType::I64).type.str(), std::string("tensor<3xi64>"));
  Value narrow = hlo::bitcast_convert(b, x, DType::U16);
  CHECK_EQ(narrow.type.str(), std::string("tensor<3x4xui16>"));
  CHECK_EQ(hlo::bitcast_convert(b, narrow, DType::F64).type.str(), std::string("tensor<3xf64>"));
  CHECK_THROWS_WITH(hlo::bitcast_convert(b, x, DType::C128), std::invalid_argument,
                    "stablehlo.bitcast_convert");
}

TEST(HloEmitters, FftResultTypesFollowTheFftType) {
  Builder b;
  Value x = b.param(Type{DType::F32, {2, 8}});
  Value spectrum = hlo::fft(b, x, hlo::FftType::Rfft, {8});
  CHECK_EQ(spectrum.type.str(), std::string("tensor<2x5xcomplex<f32>>"));
  CHECK_EQ(hlo::fft(b, spectrum, hlo::FftType::Fft, {5}).type.str(), spectrum.type.str());
  CHECK_EQ(hlo::fft(b, spectrum, hlo::FftType::Irfft, {8}).type.str(), std::string("tensor<2x8xf32>"));
}

TEST(HloEmitters, OperandTypeMismatchesNameTheOp) {
  Builder b;
  Value x = b.param(Type{DType::F32, {2}});
  Value y = b.param(Type{DType::F32, {3}});
  Value d = b.param(Type{DType::F64, {2}});
  Value i = b.param(Type{DType::I32, {2}});
  Value p = b.param(Type{DType::Bool, {3}});
  CHECK_THROWS_WITH(hlo::add(b, x, y), std::invalid_argument,
                    "stablehlo.add: operand types tensor<2xf32> and tensor<3xf32> differ");
  CHECK_THROWS_WITH(hlo::atan2(b, x, d), std::invalid_argument, "stablehlo.atan2");
  CHECK_THROWS_WITH(hlo::shift_left(b, i, x), std::invalid_argument, "stablehlo.shift_left");
  CHECK_THROWS_WITH(hlo::rem(b, x, d), std::invalid_argument, "stablehlo.remainder");
  CHECK_THROWS_WITH(hlo::compare(b, x, y, "EQ"), std::invalid_argument, "stablehlo.compare");
  CHECK_THROWS_WITH(hlo::complex(b, x, d), std::invalid_argument, "stablehlo.complex");
  CHECK_THROWS_WITH(hlo::complex(b, i, i), std::invalid_argument, "stablehlo.complex");
  CHECK_THROWS_WITH(hlo::select(b, p, x, x), std::invalid_argument, "stablehlo.select");
  CHECK_THROWS_WITH(hlo::select(b, hlo::compare(b, x, x, "EQ"), x, d), std::invalid_argument,
                    "stablehlo.select");
  CHECK_THROWS_WITH(hlo::is_finite(b, i), std::invalid_argument, "stablehlo.is_finite");
  CHECK_THROWS_WITH(hlo::combine(b, hlo::Combiner::Max, x, d), std::invalid_argument, "stablehlo.maximum");
}

TEST(HloEmitters, CombinersEmitTheirOps) {
  const std::vector<std::pair<hlo::Combiner, std::string>> cases{
      {hlo::Combiner::Add, "stablehlo.add"},     {hlo::Combiner::Mul, "stablehlo.multiply"},
      {hlo::Combiner::Max, "stablehlo.maximum"}, {hlo::Combiner::Min, "stablehlo.minimum"},
      {hlo::Combiner::And, "stablehlo.and"},     {hlo::Combiner::Or, "stablehlo.or"},
      {hlo::Combiner::Xor, "stablehlo.xor"}};
  for (const auto& [combiner, op] : cases) {
    Builder b;
    Value x = b.param(Type{DType::I32, {4}});
    Value r = hlo::reduce(b, x, hlo::constant_int(b, DType::I32, 0), {0}, combiner);
    CHECK(contains(text_of(b, r), "\"" + op + "\"(%"));
  }
}

// The inferred types are the ones XLA expects: the program compiles and computes.
TEST(HloEmitters, ProgramsOfInferredTypesRun) {
  Builder b;
  Value re = b.param(Type{DType::F32, {3}});
  Value im = b.param(Type{DType::F32, {3}});
  Value z = hlo::complex(b, re, im);
  Value magnitude = hlo::abs(b, z);
  Value sum = hlo::add(b, hlo::real(b, z), hlo::imag(b, z));
  Value finite = hlo::convert(b, hlo::is_finite(b, hlo::div(b, re, im)), DType::F32);
  b.set_results({magnitude, sum, finite});
  const float inf = std::numeric_limits<float>::infinity();
  auto out = tpu::testing::run(b, {HostArray::of(DType::F32, {3}, std::vector<float>{3.f, 1.f, inf}),
                                   HostArray::of(DType::F32, {3}, std::vector<float>{4.f, 0.f, 1.f})});
  std::vector<float> m = out.at(0).as<float>();
  CHECK_NEAR(m.at(0), 5.0, 1e-6);
  CHECK_NEAR(m.at(1), 1.0, 1e-6);
  CHECK(std::isinf(m.at(2)));
  CHECK_EQ(out.at(1).as<float>().at(0), 7.f);
  CHECK_EQ(out.at(2).as<float>(), (std::vector<float>{1.f, 0.f, 0.f}));
}

TEST(HloEmitters, ScatterReplacesOrCombines) {
  for (bool combine : {false, true}) {
    Builder b;
    Value base = b.param(Type{DType::I32, {4}});
    Value upd = b.param(Type{DType::I32, {2}});
    hlo::ScatterDims d;
    d.inserted_window_dims = {0};
    d.scatter_dims_to_operand_dims = {0};
    d.index_vector_dim = 1;
    Value at = hlo::reshape(b, hlo::i64_vector(b, {1, 3}), {2, 1});
    b.set_results({hlo::scatter(b, base, at, upd, d,
                                combine ? hlo::ScatterCombiner(hlo::Combiner::Add) : hlo::kReplace)});
    auto out = tpu::testing::run(b, {HostArray::of(DType::I32, {4}, std::vector<int32_t>{1, 2, 3, 4}),
                                     HostArray::of(DType::I32, {2}, std::vector<int32_t>{10, 20})});
    std::vector<int32_t> expected =
        combine ? std::vector<int32_t>{1, 12, 3, 24} : std::vector<int32_t>{1, 10, 3, 20};
    CHECK_EQ(out.at(0).as<int32_t>(), expected);
  }
}

TEST(HloEmitters, FullIntIsOneExactSplatConstant) {
  Builder b;
  Value bits = hlo::full_int(b, Type{DType::U64, {3}}, 0x3FF0000000000000);
  Value wrapped = hlo::full_int(b, Type{DType::U8, {2}}, -1);
  b.set_results({bits, wrapped});
  std::string text = b.module_text();
  CHECK(contains(text, "dense<4607182418800017408> : tensor<3xui64>"));
  CHECK(contains(text, "dense<255> : tensor<2xui8>"));
}

TEST(HloEmitters, WhileLoopAndSortRun) {
  Builder b;
  Value x = b.param(Type{DType::F32, {4}});
  // Doubles x three times: state (i, x) while i < 3.
  auto cond = [](Builder& rb, const std::vector<Value>& s) -> std::vector<Value> {
    return {hlo::compare(rb, s[0], hlo::constant_int(rb, DType::I64, 3), "LT")};
  };
  auto body = [](Builder& rb, const std::vector<Value>& s) -> std::vector<Value> {
    return {hlo::add(rb, s[0], hlo::constant_int(rb, DType::I64, 1)), hlo::add(rb, s[1], s[1])};
  };
  Value doubled = hlo::while_loop(b, {hlo::constant_int(b, DType::I64, 0), x}, cond, body)[1];
  Value idx = hlo::iota(b, Type{DType::I32, {4}}, 0);
  std::vector<Value> sorted = hlo::sort(b, {doubled, idx}, 0, /*stable=*/true,
                                        [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                                          return {hlo::compare(rb, a[0], a[1], "LT")};
                                        });
  b.set_results({sorted[0], sorted[1]});
  auto out = tpu::testing::run(b, {HostArray::of(DType::F32, {4}, std::vector<float>{3.f, -1.f, 2.f, 0.f})});
  CHECK_EQ(out.at(0).as<float>(), (std::vector<float>{-8.f, 0.f, 16.f, 24.f}));
  CHECK_EQ(out.at(1).as<int32_t>(), (std::vector<int32_t>{1, 3, 2, 0}));
}

}  // namespace
