// Unit tests of lowering/storage_view: strided view reads and writes of a flat storage, run on the
// plugin and compared with a reference computed here by index arithmetic
// (element at offset + sum_k i_k * stride_k).
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/indexing/storage_view.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::ir::Builder;
using tpu::ir::DType;
using tpu::ir::Type;
using tpu::ir::Value;
using tpu::lowering::ViewGeometry;
using tpu::testing::HostArray;

struct ViewCase {
  const char* name;
  int64_t storage_numel;
  ViewGeometry view;
};

// Views whose elements are pairwise distinct storage elements (readable and writable).
const std::vector<ViewCase>& non_overlapping_cases() {
  static const std::vector<ViewCase> cases = {
      {"whole storage as 2-d", 24, {{4, 6}, {6, 1}, 0}},
      {"contiguous range with offset", 24, {{3, 4}, {4, 1}, 5}},
      {"flat tail range", 24, {{7}, {1}, 17}},
      {"transpose", 24, {{6, 4}, {1, 6}, 0}},
      {"permute(2,0,1) of 2x3x4", 24, {{4, 2, 3}, {1, 12, 4}, 0}},
      {"permute(1,2,0) of 2x3x4 at offset 6", 30, {{3, 4, 2}, {4, 1, 12}, 6}},
      {"x[::2]", 10, {{5}, {2}, 0}},
      {"x[1::3]", 10, {{3}, {3}, 1}},
      {"x[2::3], last block past the end", 10, {{3}, {3}, 2}},
      {"x[:, 1:5:2] of 4x6", 24, {{4, 2}, {6, 2}, 1}},
      {"x[1:3, 2:5] of 4x6", 24, {{2, 3}, {6, 1}, 8}},
      {"x[::2, ::3] of 4x6", 24, {{2, 2}, {12, 3}, 0}},
      {"x[::2, ::2].t() of 4x6", 24, {{3, 2}, {2, 12}, 0}},
      {"size-1 dims with arbitrary strides", 24, {{1, 3, 1}, {99, 2, 7}, 3}},
      {"only size-1 dims", 24, {{1, 1}, {5, 5}, 13}},
      {"0-d view", 24, {{}, {}, 7}},
      {"strides that do not divide (5, 2)", 24, {{2, 2}, {5, 2}, 3}},
      {"negative stride (flip)", 10, {{5}, {-1}, 9}},
      {"negative row stride", 6, {{2, 3}, {-3, 1}, 3}},
      {"4-d mixed permutation and steps", 60, {{2, 1, 3, 2}, {24, 100, 2, 12}, 1}},
      {"0-size [0, 3]", 24, {{0, 3}, {3, 1}, 0}},
      {"0-size [2, 0] with offset", 24, {{2, 0}, {1, 1}, 5}},
  };
  return cases;
}

// Views that read some storage element more than once (read only).
const std::vector<ViewCase>& overlapping_cases() {
  static const std::vector<ViewCase> cases = {
      {"expand a row: stride 0", 24, {{3, 4}, {0, 1}, 2}},
      {"expand a column: stride 0", 24, {{4, 3}, {1, 0}, 5}},
      {"3-d broadcast [0, 4, 0]", 24, {{2, 3, 4}, {0, 4, 0}, 1}},
      {"all strides 0", 24, {{3, 3}, {0, 0}, 5}},
      {"broadcast plus transpose", 24, {{2, 3, 4}, {1, 0, 6}, 0}},
      {"unfold(0, 4, 2) at offset 1", 12, {{4, 4}, {2, 1}, 1}},
      {"as_strided sliding window [3,3] strides [1,1]", 10, {{3, 3}, {1, 1}, 2}},
      {"equal strides with a size-1 dim", 10, {{2, 1, 3}, {1, 0, 1}, 2}},
      {"2-d unfold windows of 4x5", 20, {{3, 4, 2, 2}, {5, 1, 5, 1}, 0}},
      {"empty storage, empty view", 0, {{0}, {1}, 0}},
  };
  return cases;
}

int64_t numel(const std::vector<int64_t>& sizes) { return tpu::testing::numel(sizes); }

// Storage element index of each view element, in row-major order of the view.
std::vector<int64_t> element_positions(const ViewGeometry& v) {
  int64_t n = numel(v.sizes);
  std::vector<int64_t> pos;
  pos.reserve(n);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat, p = v.offset;
    for (size_t d = v.sizes.size(); d-- > 0;) {
      p += (rest % v.sizes[d]) * v.strides[d];
      rest /= v.sizes[d];
    }
    pos.push_back(p);
  }
  return pos;
}

std::string describe(const ViewCase& c, DType dtype) {
  std::string s = std::string(c.name) + " [" + tpu::ir::mlir_name(dtype) + ", storage " +
                  std::to_string(c.storage_numel) + ", sizes " + tpu::ir::i64_list(c.view.sizes) +
                  ", strides " + tpu::ir::i64_list(c.view.strides) + ", offset " +
                  std::to_string(c.view.offset) + "]";
  return s;
}

// Distinct host values of `dtype` (raw bytes); `salt` makes a second, disjoint set.
std::vector<uint8_t> sample_bytes(DType dtype, int64_t n, int salt) {
  int size = tpu::ir::itemsize(dtype);
  std::vector<uint8_t> out(n * size);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* p = out.data() + i * size;
    switch (dtype) {
      case DType::F32: {
        float f = salt ? -1000.f - 0.5f * i : 0.25f + 1.5f * i;
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::I64: {
        int64_t v = salt ? -(i * 1000003 + 11) : i * 4294967311LL + 7;
        std::memcpy(p, &v, 8);
        break;
      }
      case DType::BF16: {
        float f = salt ? -2.f * (i + 1) : static_cast<float>(i);  // exact in bf16 for small i
        uint32_t u;
        std::memcpy(&u, &f, 4);
        uint16_t h = static_cast<uint16_t>(u >> 16);
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::I8:
        p[0] = static_cast<uint8_t>(salt ? 200 - i : i * 3 + 1);
        break;
      case DType::Bool:
        p[0] = static_cast<uint8_t>(salt ? (i % 3 != 0) : (i % 3 == 0));
        break;
      default:
        throw std::logic_error("sample_bytes: unsupported dtype");
    }
  }
  return out;
}

struct Outcome {
  bool ran = false;
  std::vector<uint8_t> got, expected;
  std::string module;
};

// Adds the params of case `c` to `b` and returns its result value; fills `inputs` and the
// expected bytes of `o`.
Value add_case(Builder& b, const ViewCase& c, DType dtype, bool write, std::vector<HostArray>& inputs,
               Outcome& o) {
  int size = tpu::ir::itemsize(dtype);
  std::vector<uint8_t> storage = sample_bytes(dtype, c.storage_numel, 0);
  std::vector<int64_t> pos = element_positions(c.view);
  Value s = b.param(Type{dtype, {c.storage_numel}});
  inputs.push_back(HostArray{dtype, {c.storage_numel}, storage});
  if (!write) {
    for (int64_t p : pos)
      o.expected.insert(o.expected.end(), storage.begin() + p * size, storage.begin() + (p + 1) * size);
    Value r = tpu::lowering::read_view(b, s, c.view);
    CHECK_EQ(r.type, (Type{dtype, c.view.sizes}));
    return r;
  }
  std::vector<uint8_t> values = sample_bytes(dtype, numel(c.view.sizes), 1);
  o.expected = storage;
  for (size_t k = 0; k < pos.size(); ++k)
    std::memcpy(o.expected.data() + pos[k] * size, values.data() + k * size, size);
  Value v = b.param(Type{dtype, c.view.sizes});
  inputs.push_back(HostArray{dtype, c.view.sizes, values});
  Value r = tpu::lowering::write_view(b, s, v, c.view);
  CHECK_EQ(r.type, s.type);
  return r;
}

// The module text of one case, without running it.
std::string module_of(const ViewCase& c, DType dtype, bool write) {
  Builder b;
  std::vector<HostArray> inputs;
  Outcome o;
  b.set_results({add_case(b, c, dtype, write, inputs, o)});
  return b.module_text();
}

// Runs every case in one module (one compile). When that module fails, runs the cases one by
// one so that the failure names the case.
std::vector<Outcome> run_cases(const std::vector<ViewCase>& cases, DType dtype, bool write) {
  std::vector<Outcome> outs(cases.size());
  Builder b;
  std::vector<HostArray> inputs;
  std::vector<Value> results;
  for (size_t i = 0; i < cases.size(); ++i)
    results.push_back(add_case(b, cases[i], dtype, write, inputs, outs[i]));
  b.set_results(results);
  try {
    auto got = tpu::testing::run(b, inputs);
    for (size_t i = 0; i < cases.size(); ++i) {
      outs[i].got = got.at(i).bytes;
      outs[i].ran = true;
      outs[i].module = module_of(cases[i], dtype, write);
    }
    return outs;
  } catch (const std::exception&) {}
  for (size_t i = 0; i < cases.size(); ++i) {
    Builder one;
    std::vector<HostArray> in;
    Outcome& o = outs[i];
    o.expected.clear();
    one.set_results({add_case(one, cases[i], dtype, write, in, o)});
    o.module = one.module_text();
    try {
      o.got = tpu::testing::run(one, in).at(0).bytes;
      o.ran = true;
    } catch (const std::exception& e) {
      tpu::testing::fail(__FILE__, __LINE__,
                         std::string(write ? "write_view" : "read_view") + " of " +
                             describe(cases[i], dtype) + " failed: " + e.what());
    }
  }
  return outs;
}

void check_cases(const std::vector<ViewCase>& cases, DType dtype, bool write) {
  const char* what = write ? "write_view" : "read_view";
  std::vector<Outcome> outs = run_cases(cases, dtype, write);
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!outs[i].ran) continue;
    std::string label = std::string(what) + " of " + describe(cases[i], dtype) + " (bytes)";
    if (!tpu::testing::check_eq(outs[i].got, outs[i].expected, label.c_str(), "reference", __FILE__,
                                __LINE__))
      std::printf("--- module ---\n%s", outs[i].module.c_str());
  }
}

bool uses(const std::string& module, const char* op) { return module.find(op) != std::string::npos; }

}  // namespace

TEST(StorageView, ReadNonOverlappingViewsF32) { check_cases(non_overlapping_cases(), DType::F32, false); }

TEST(StorageView, ReadOverlappingAndBroadcastViewsF32) {
  check_cases(overlapping_cases(), DType::F32, false);
}

TEST(StorageView, ReadOtherDtypes) {
  const std::vector<ViewCase>& a = non_overlapping_cases();
  const std::vector<ViewCase>& o = overlapping_cases();
  std::vector<ViewCase> subset{a[1], a[3], a[8], a[9], a[16], o[0], o[5]};
  for (DType t : {DType::I64, DType::Bool, DType::BF16, DType::I8}) check_cases(subset, t, false);
}

TEST(StorageView, WriteNonOverlappingViewsF32) { check_cases(non_overlapping_cases(), DType::F32, true); }

TEST(StorageView, WriteOtherDtypes) {
  const std::vector<ViewCase>& a = non_overlapping_cases();
  std::vector<ViewCase> subset{a[1], a[4], a[8], a[9], a[15], a[16]};
  for (DType t : {DType::I64, DType::Bool, DType::BF16, DType::I8}) check_cases(subset, t, true);
}

TEST(StorageView, CommonLayoutsAvoidGatherAndScatter) {
  // The header promises slice/reshape/transpose for contiguous ranges, permutations and steps.
  const char* structured[] = {"contiguous range with offset", "transpose",
                              "permute(2,0,1) of 2x3x4",      "x[1::3]",
                              "x[:, 1:5:2] of 4x6",           "x[::2, ::2].t() of 4x6"};
  for (const ViewCase& c : non_overlapping_cases()) {
    bool is_structured = false;
    for (const char* n : structured) is_structured |= std::string(n) == c.name;
    if (!is_structured) continue;
    if (!CHECK(!uses(module_of(c, DType::F32, false), "stablehlo.gather")))
      std::printf("  read of %s used a gather\n", c.name);
    if (!CHECK(!uses(module_of(c, DType::F32, true), "stablehlo.scatter")))
      std::printf("  write of %s used a scatter\n", c.name);
  }
  // Broadcast reads use broadcast_in_dim, not a gather.
  CHECK(!uses(module_of(overlapping_cases()[0], DType::F32, false), "stablehlo.gather"));
}

TEST(StorageView, IsContiguousAndCoversStorage) {
  using tpu::lowering::covers_storage;
  using tpu::lowering::is_contiguous;
  CHECK(is_contiguous({{2, 3}, {3, 1}, 0}));
  CHECK(is_contiguous({{2, 3}, {3, 1}, 4}));  // offset does not matter
  CHECK(!is_contiguous({{2, 3}, {1, 2}, 0}));
  CHECK(!is_contiguous({{2, 3}, {4, 1}, 0}));
  CHECK(is_contiguous({{1, 3}, {100, 1}, 0}));  // size-1 dims take any stride
  CHECK(is_contiguous({{3, 1}, {1, 7}, 0}));
  CHECK(is_contiguous({{}, {}, 0}));
  CHECK(!is_contiguous({{3}, {0}, 0}));
  CHECK(covers_storage({{2, 3}, {3, 1}, 0}, 6));
  CHECK(!covers_storage({{2, 3}, {3, 1}, 1}, 7));
  CHECK(!covers_storage({{2, 3}, {3, 1}, 0}, 7));
  CHECK(!covers_storage({{3, 2}, {1, 3}, 0}, 6));
  CHECK(covers_storage({{}, {}, 0}, 1));
}

// ---------------------------------------------------------------------------------------------
// reinterpret
// ---------------------------------------------------------------------------------------------

namespace {

// Runs reinterpret(storage of `from`, `to`) and returns the result bytes.
std::vector<uint8_t> run_reinterpret(DType from, const std::vector<uint8_t>& bytes, DType to,
                                     int64_t expect_numel) {
  int64_t n = static_cast<int64_t>(bytes.size()) / tpu::ir::itemsize(from);
  Builder b;
  Value s = b.param(Type{from, {n}});
  Value r = tpu::lowering::reinterpret(b, s, to);
  CHECK_EQ(r.type, (Type{to, {expect_numel}}));
  b.set_results({r});
  return tpu::testing::run(b, {HostArray{from, {n}, bytes}}).at(0).bytes;
}

template <typename T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace

TEST(StorageView, ReinterpretMatchesMemcpy) {
  std::vector<float> f{1.f, -2.5f, 3.1415926f, 1e-30f, -0.f, 65504.f};
  std::vector<uint8_t> fb = raw(f);
  // f32 -> u8: the storage's bytes, little-endian, as memcpy sees them.
  CHECK_EQ(run_reinterpret(DType::F32, fb, DType::U8, 24), fb);
  // u8 -> f32 and back.
  CHECK_EQ(run_reinterpret(DType::U8, fb, DType::F32, 6), fb);
  // A tail shorter than one element is not visible: 10 bytes hold two f32.
  std::vector<uint8_t> ten(fb.begin(), fb.begin() + 10);
  CHECK_EQ(run_reinterpret(DType::U8, ten, DType::F32, 2), std::vector<uint8_t>(fb.begin(), fb.begin() + 8));
  // Same size: f32 <-> i32 keeps the bits.
  CHECK_EQ(run_reinterpret(DType::F32, fb, DType::I32, 6), fb);
  // i64 -> i32 pairs and back.
  std::vector<int64_t> l{1, -1, int64_t{0x0123456789ABCDEF}, std::numeric_limits<int64_t>::min()};
  CHECK_EQ(run_reinterpret(DType::I64, raw(l), DType::I32, 8), raw(l));
  CHECK_EQ(run_reinterpret(DType::I32, raw(l), DType::I64, 4), raw(l));
  // f64 -> bf16 (four per element).
  std::vector<double> d{1.0, -3.75, 1e200};
  CHECK_EQ(run_reinterpret(DType::F64, raw(d), DType::BF16, 12), raw(d));
}

TEST(StorageView, ReinterpretBoolAsBytes) {
  // PyTorch stores bools as bytes 0/1.
  std::vector<uint8_t> bits{1, 0, 0, 1, 1, 1, 0, 0};
  CHECK_EQ(run_reinterpret(DType::Bool, bits, DType::U8, 8), bits);
  CHECK_EQ(run_reinterpret(DType::U8, bits, DType::Bool, 8), bits);
  // bool -> i32: four bools per int, as memcpy of the bytes.
  std::vector<int32_t> ints(2);
  std::memcpy(ints.data(), bits.data(), 8);
  CHECK_EQ(run_reinterpret(DType::Bool, bits, DType::I32, 2), raw(ints));
  // i16 -> bool: bytes 0/1 of small values.
  std::vector<int16_t> shorts{1, 256, 0, 257};
  std::vector<uint8_t> sb = raw(shorts);
  CHECK_EQ(run_reinterpret(DType::I16, sb, DType::Bool, 8), sb);
}

TEST(StorageView, ReinterpretComplexAsParts) {
  // complex64 is (re, im) f32 pairs in memory; XLA's bitcast_convert refuses complex types.
  std::vector<float> parts{1.f, -2.f, 0.5f, 3.f, -0.f, 7.25f};
  std::vector<uint8_t> pb = raw(parts);
  CHECK_EQ(run_reinterpret(DType::C64, pb, DType::F32, 6), pb);
  CHECK_EQ(run_reinterpret(DType::F32, pb, DType::C64, 3), pb);
  // Through another width: c64 <-> u8 bytes, and an odd f32 tail not visible as complex.
  CHECK_EQ(run_reinterpret(DType::C64, pb, DType::U8, 24), pb);
  CHECK_EQ(run_reinterpret(DType::U8, pb, DType::C64, 3), pb);
  std::vector<uint8_t> five(pb.begin(), pb.begin() + 20);
  CHECK_EQ(run_reinterpret(DType::F32, five, DType::C64, 2),
           std::vector<uint8_t>(pb.begin(), pb.begin() + 16));
  std::vector<double> d{1.0, -3.75, 1e200, 0.125};
  CHECK_EQ(run_reinterpret(DType::C128, raw(d), DType::F64, 4), raw(d));
  CHECK_EQ(run_reinterpret(DType::F64, raw(d), DType::C128, 2), raw(d));
}

// ---------------------------------------------------------------------------------------------
// dense_permutation and to_storage
// ---------------------------------------------------------------------------------------------

namespace {

// Independent check: laying out sizes in `perm` order row-major reproduces `strides`.
bool perm_reproduces(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                     const std::vector<int64_t>& perm) {
  if (perm.size() != sizes.size()) return false;
  int64_t expected = 1;
  for (size_t k = perm.size(); k-- > 0;) {
    int64_t d = perm[k];
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

}  // namespace

TEST(StorageView, DensePermutation) {
  using tpu::lowering::dense_permutation;
  using V = std::vector<int64_t>;
  struct Case {
    V sizes, strides, expected;
  };
  const Case dense[] = {
      {{2, 3, 4}, {12, 4, 1}, {0, 1, 2}},            // contiguous
      {{4, 3}, {1, 4}, {1, 0}},                      // transpose
      {{4, 2, 3}, {1, 12, 4}, {1, 2, 0}},            // permute(2, 0, 1)
      {{2, 1, 3}, {3, 100, 1}, {0, 2, 1}},           // size-1 dims go last
      {{2, 3, 4, 5}, {60, 1, 15, 3}, {0, 2, 3, 1}},  // channels_last
      {{5}, {1}, {0}},
  };
  for (const Case& c : dense) {
    V p = dense_permutation(c.sizes, c.strides);
    CHECK_EQ(p, c.expected);
    CHECK(perm_reproduces(c.sizes, c.strides, p));
  }
  const Case not_dense[] = {
      {{2, 3}, {4, 1}, {}},  // gap between rows
      {{2, 3}, {1, 1}, {}},  // overlap
      {{2, 3}, {0, 1}, {}},  // broadcast
      {{3}, {2}, {}},        // stepped
      {{2, 2}, {1, 3}, {}},  // gap, transposed
  };
  for (const Case& c : not_dense) CHECK_EQ(dense_permutation(c.sizes, c.strides), c.expected);
}

TEST(StorageView, ToStorageLaysOutByStrides) {
  struct Case {
    std::vector<int64_t> sizes, strides;
  };
  const Case cases[] = {
      {{2, 3}, {3, 1}}, {{2, 3}, {1, 2}}, {{2, 3, 4, 5}, {60, 1, 15, 3}}, {{3, 1, 2}, {1, 9, 3}}, {{}, {}}};
  for (const Case& c : cases) {
    int64_t n = numel(c.sizes);
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = 0.5f * i - 7.f;
    Builder b;
    Value x = b.param(Type{DType::F32, c.sizes});
    Value s = tpu::lowering::to_storage(b, x, c.strides);
    CHECK_EQ(s.type, (Type{DType::F32, {n}}));
    b.set_results({s});
    auto out = tpu::testing::run(b, {HostArray::of(DType::F32, c.sizes, v)}).at(0).as<float>();
    std::vector<float> expected(n);
    std::vector<int64_t> pos = element_positions({c.sizes, c.strides, 0});
    for (int64_t i = 0; i < n; ++i) expected[pos[i]] = v[i];
    CHECK_EQ(out, expected);
  }
}

TEST(StorageView, ReadAfterWriteRoundtrip) {
  // Writing through a view and reading the same view back (one module) returns the written values;
  // the rest of the storage is unchanged.
  const ViewCase& c = non_overlapping_cases()[9];  // x[:, 1:5:2] of 4x6, crosses the end
  Builder b;
  Value s = b.param(Type{DType::F32, {c.storage_numel}});
  Value v = b.param(Type{DType::F32, c.view.sizes});
  Value s2 = tpu::lowering::write_view(b, s, v, c.view);
  Value back = tpu::lowering::read_view(b, s2, c.view);
  b.set_results({back});
  std::vector<float> storage(c.storage_numel, 3.f), values(numel(c.view.sizes));
  for (size_t i = 0; i < values.size(); ++i) values[i] = -1.f - i;
  auto out = tpu::testing::run(b, {HostArray::of(DType::F32, {c.storage_numel}, storage),
                                   HostArray::of(DType::F32, c.view.sizes, values)});
  CHECK_EQ(out.at(0).as<float>(), values);
}
