// Unit tests of lowering/padded_view: views of padded storages read and written with runtime
// sizes, strides and offsets, run on the plugin and compared with index arithmetic on the
// storage's real elements (element at offset + sum_k i_k * stride_k).
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/indexing/padded_view.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::ir::Builder;
using tpu::ir::DType;
using tpu::ir::Type;
using tpu::ir::Value;
using tpu::lowering::DynamicView;
using tpu::lowering::StorageValue;
using tpu::lowering::ViewGeometry;
using tpu::testing::HostArray;

constexpr float kPadding = -7777.f;

struct Case {
  const char* name;
  std::vector<int64_t> sizes, bounds;  // storage: real sizes and array bounds (equal where static)
  ViewGeometry view;
  std::vector<int64_t> view_bounds;  // the view's bounds (its sizes where static)
  bool runtime_geometry;             // strides and offset given at run time
  bool flat = false;                 // the storage is flat (sizes = {numel})
  int also_dynamic = -1;             // a storage dimension that is dynamic at its bound
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"KV cache, whole",
       {1, 4, 10, 8},
       {1, 4, 16, 8},
       {{1, 4, 10, 8}, {320, 80, 8, 1}, 0},
       {1, 4, 16, 8},
       true},
      {"keys transposed",
       {1, 4, 10, 8},
       {1, 4, 16, 8},
       {{1, 4, 8, 10}, {320, 80, 1, 8}, 0},
       {1, 4, 8, 16},
       true},
      {"heads split off hidden",
       {1, 10, 32},
       {1, 16, 32},
       {{1, 4, 10, 8}, {320, 8, 32, 1}, 0},
       {1, 4, 16, 8},
       true},
      {"heads merged into hidden",
       {1, 10, 4, 8},
       {1, 16, 4, 8},
       {{1, 10, 32}, {320, 32, 1}, 0},
       {1, 16, 32},
       true},
      {"last position", {1, 10}, {1, 16}, {{1, 1}, {10, 1}, 9}, {1, 1}, true},
      {"rows 4..6 of a batch", {2, 10, 6}, {2, 16, 6}, {{2, 3, 6}, {60, 6, 1}, 24}, {2, 3, 6}, true},
      {"every other position", {1, 10}, {1, 16}, {{1, 5}, {10, 2}, 0}, {1, 8}, true},
      {"batch merged with a dynamic length (gather)", {3, 10}, {3, 16}, {{30}, {1}, 0}, {32}, true},
      {"static cache, growing prefix",
       {640},
       {640},
       {{1, 4, 10, 8}, {640, 160, 8, 1}, 0},
       {1, 4, 16, 8},
       false,
       true},
      {"static cache prefix at bound past the end",
       {4 * 12 * 8},
       {4 * 12 * 8},
       {{4, 10, 8}, {96, 8, 1}, 0},
       {4, 16, 8},
       false,
       true},
      {"two dynamic dims", {3, 5}, {4, 8}, {{5, 3}, {1, 5}, 0}, {8, 4}, true},
      {"real size at the bound", {2, 16}, {2, 16}, {{16, 2}, {1, 16}, 0}, {16, 2}, true, false, 1},
      {"rows of a static-offset slice", {3, 10, 4}, {3, 16, 4}, {{10, 4}, {4, 1}, 40}, {16, 4}, false},
  };
  return c;
}

int64_t numel(const std::vector<int64_t>& v) { return tpu::testing::numel(v); }

std::vector<int64_t> positions(const ViewGeometry& v) {
  std::vector<int64_t> pos;
  for (int64_t flat = 0; flat < numel(v.sizes); ++flat) {
    int64_t rest = flat, p = v.offset;
    for (size_t d = v.sizes.size(); d-- > 0;) {
      p += (rest % v.sizes[d]) * v.strides[d];
      rest /= v.sizes[d];
    }
    pos.push_back(p);
  }
  return pos;
}

// Position in the padded array of storage element `e` (row-major over the real sizes).
int64_t padded_index(const Case& c, int64_t e) {
  int64_t idx = 0, stride = 1;
  for (size_t k = c.sizes.size(); k-- > 0;) {
    idx += (e % c.sizes[k]) * stride;
    e /= c.sizes[k];
    stride *= c.bounds[k];
  }
  return idx;
}

struct Program {
  Builder b;
  std::vector<HostArray> inputs;
  StorageValue storage;
  DynamicView view;
};

Value runtime_i64(Program& p, int64_t v) {
  Value param = p.b.param(Type{DType::I64, {}});
  p.inputs.push_back(HostArray::of(DType::I64, {}, std::vector<int64_t>{v}));
  return param;
}

// Declares the storage array and the runtime values of case `c`.
void setup(Program& p, const Case& c) {
  std::vector<float> data(numel(c.bounds), kPadding);
  for (int64_t e = 0; e < numel(c.sizes); ++e) data[padded_index(c, e)] = 0.5f + static_cast<float>(e);
  p.storage.data = p.b.param(Type{DType::F32, c.bounds});
  p.inputs.push_back(HostArray::of(DType::F32, c.bounds, data));
  p.storage.sizes = c.sizes;
  if (!c.flat) {
    p.storage.dims.resize(c.sizes.size());
    for (size_t k = 0; k < c.sizes.size(); ++k)
      if (c.sizes[k] != c.bounds[k] || static_cast<int>(k) == c.also_dynamic)
        p.storage.dims[k] = runtime_i64(p, c.sizes[k]);
  }
  p.view.geometry = c.view;
  p.view.bounds = c.view_bounds;
  p.view.sizes.resize(c.view.sizes.size());
  p.view.strides.resize(c.view.sizes.size());
  for (size_t j = 0; j < c.view.sizes.size(); ++j) {
    if (c.view.sizes[j] != c.view_bounds[j]) p.view.sizes[j] = runtime_i64(p, c.view.sizes[j]);
    if (c.runtime_geometry) p.view.strides[j] = runtime_i64(p, c.view.strides[j]);
  }
  if (c.runtime_geometry) p.view.offset = runtime_i64(p, c.view.offset);
}

TEST(PaddedView, ReadsTheRealElements) {
  for (const Case& c : cases()) {
    Program p;
    setup(p, c);
    Value r = tpu::lowering::read_dynamic(p.b, p.storage, p.view);
    REQUIRE_EQ(r.type, (Type{DType::F32, c.view_bounds}));
    p.b.set_results({r});
    std::vector<float> got;
    try {
      got = tpu::testing::run(p.b, p.inputs).at(0).as<float>();
    } catch (const std::exception& e) {
      tpu::testing::fail(__FILE__, __LINE__, std::string(c.name) + ": " + e.what());
      continue;
    }
    // The real part of the result, in row-major order of the view's real sizes.
    std::vector<int64_t> pos = positions(c.view);
    std::vector<float> real, expected;
    for (int64_t flat = 0; flat < numel(c.view.sizes); ++flat) {
      int64_t rest = flat, idx = 0, stride = 1;
      for (size_t d = c.view.sizes.size(); d-- > 0;) {
        idx += (rest % c.view.sizes[d]) * stride;
        rest /= c.view.sizes[d];
        stride *= c.view_bounds[d];
      }
      real.push_back(got[idx]);
      expected.push_back(0.5f + static_cast<float>(pos[flat]));
    }
    CHECK_EQ(real, expected);
    if (real != expected) std::printf("case: %s\n", c.name);
  }
}

TEST(PaddedView, WritesOnlyTheViewsRealElements) {
  for (const Case& c : cases()) {
    Program p;
    setup(p, c);
    std::vector<float> values(numel(c.view_bounds));
    for (size_t i = 0; i < values.size(); ++i) values[i] = -1000.f - static_cast<float>(i);
    Value v = p.b.param(Type{DType::F32, c.view_bounds});
    p.inputs.push_back(HostArray::of(DType::F32, c.view_bounds, values));
    StorageValue out = tpu::lowering::write_dynamic(p.b, p.storage, v, p.view);
    REQUIRE_EQ(out.data.type, p.storage.data.type);
    p.b.set_results({out.data});
    std::vector<float> got;
    try {
      got = tpu::testing::run(p.b, p.inputs).at(0).as<float>();
    } catch (const std::exception& e) {
      tpu::testing::fail(__FILE__, __LINE__, std::string(c.name) + ": " + e.what());
      continue;
    }
    std::vector<float> expected(numel(c.sizes)), real(numel(c.sizes));
    for (int64_t e = 0; e < numel(c.sizes); ++e) expected[e] = 0.5f + static_cast<float>(e);
    std::vector<int64_t> pos = positions(c.view);
    for (int64_t flat = 0; flat < numel(c.view.sizes); ++flat) {
      int64_t rest = flat, idx = 0, stride = 1;
      for (size_t d = c.view.sizes.size(); d-- > 0;) {
        idx += (rest % c.view.sizes[d]) * stride;
        rest /= c.view.sizes[d];
        stride *= c.view_bounds[d];
      }
      expected[pos[flat]] = values[idx];
    }
    for (int64_t e = 0; e < numel(c.sizes); ++e) real[e] = got[padded_index(c, e)];
    CHECK_EQ(real, expected);
    if (real != expected) std::printf("case: %s\n", c.name);
  }
}

TEST(PaddedView, CommonViewsAreSlicesNotGathers) {
  for (const Case& c : cases()) {
    Program p;
    setup(p, c);
    const bool box = tpu::lowering::plan_view(c.view, c.sizes,
                                              [&] {
                                                std::vector<bool> d;
                                                for (size_t k = 0; k < c.sizes.size(); ++k)
                                                  d.push_back(!c.flat && p.storage.dims[k].valid());
                                                return d;
                                              }())
                         .has_value();
    CHECK_EQ(box, std::string(c.name).find("gather") == std::string::npos);
  }
}

TEST(PaddedView, FreshResultsArePaddedInStrideOrder) {
  Builder b;
  Value v = b.param(Type{DType::F32, {16, 3}});
  Value n = b.param(Type{DType::I64, {}});
  StorageValue s = tpu::lowering::result_storage(b, v, {n, Value{}}, {10, 3}, {1, 10});
  CHECK_EQ(s.data.shape(), (std::vector<int64_t>{3, 16}));
  CHECK_EQ(s.sizes, (std::vector<int64_t>{3, 10}));
  CHECK(!s.dims[0].valid() && s.dims[1].valid());
  StorageValue flat = tpu::lowering::result_storage(b, v, {Value{}, Value{}}, {16, 3}, {3, 1});
  CHECK_EQ(flat.data.shape(), (std::vector<int64_t>{48}));
}

}  // namespace
