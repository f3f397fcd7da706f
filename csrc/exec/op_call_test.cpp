// Unit tests of the exec layer's torch-free parts: OpCall::key(), storage dtype/numel, the
// in-memory CompileCache (LRU), and build_program (run on the plugin).
#include <cstring>
#include <functional>

#include "exec/compile_cache.h"
#include "exec/op_call.h"
#include "exec/op_program.h"
#include "lowering/core/registry.h"
#include "testing/pjrt_fixture.h"
#include "testing/unit_test.h"

namespace {

using tpu::exec::ArgSpec;
using tpu::exec::HostScalar;
using tpu::exec::OpCall;
using tpu::exec::Storage;
using tpu::exec::TensorView;
using tpu::ir::DType;
using Kind = tpu::lowering::Arg::Kind;

const tpu::lowering::Lowering* copy_lowering() {
  const tpu::lowering::Lowering* l = tpu::lowering::find_lowering("torch_tpu::view_copy");
  if (l == nullptr) throw std::runtime_error("torch_tpu::view_copy lowering is not registered");
  return l;
}

// Gives a storage a current value, as a launch that wrote it does. (Storage::set_buffer where it
// exists; older Storage versions keyed "written" on the buffer pointer alone.)
template <typename S>
void give_value(S& s, tpu::runtime::BufferPtr buffer, DType dtype) {
  if constexpr (requires { s.set_buffer(buffer, dtype); }) {
    s.set_buffer(std::move(buffer), dtype);
  } else {
    s.buffer = std::move(buffer);
    s.dtype = dtype;
  }
}

HostScalar f64_scalar(double v) {
  HostScalar h;
  h.dtype = DType::F64;
  std::memcpy(h.bytes.data(), &v, sizeof v);
  return h;
}

// A call with two storages, a read view, a written view, a runtime scalar and one argument of
// every keyed kind. Storage objects are owned by the fixture so calls can be rebuilt freely.
struct CallFixture {
  Storage s0, s1;
  OpCall call;

  CallFixture() {
    s0.nbytes = 24 * 4;
    s1.nbytes = 30 * 4;
    call.lowering = copy_lowering();
    call.op_name = "torch_tpu::view_copy";
    call.storages = {&s0, &s1};
    call.views = {TensorView{0, DType::F32, {{4, 6}, {6, 1}, 0}},
                  TensorView{1, DType::F32, {{6, 4}, {5, 1}, 1}}};
    call.scalars = {f64_scalar(0.5)};
    ArgSpec t;
    t.kind = Kind::Tensor;
    t.view = 0;
    ArgSpec rs;  // runtime scalar: its value travels as scalars[0]
    rs.kind = Kind::Scalar;
    rs.scalar = 0;
    ArgSpec ss;  // static scalar: value in the key
    ss.kind = Kind::Scalar;
    ss.is_static = true;
    ss.d = 2.5;
    ArgSpec i;
    i.kind = Kind::Int;
    i.i = 1;
    ArgSpec il;
    il.kind = Kind::IntList;
    il.ints = {2, 3};
    ArgSpec bo;
    bo.kind = Kind::Bool;
    bo.i = 1;
    ArgSpec st;
    st.kind = Kind::String;
    st.s = "mean";
    ArgSpec none;
    call.args = {t, rs, ss, i, il, bo, st, none};
    call.written_views = {1};
  }
};

using Mutation = std::function<void(CallFixture&)>;

std::string key_after(const Mutation& m) {
  CallFixture f;
  m(f);
  return f.call.key();
}

}  // namespace

TEST(OpCallKey, EqualCallsHaveEqualKeys) {
  CallFixture a, b;
  CHECK(!a.call.key().empty());
  CHECK_EQ(a.call.key(), b.call.key());
  CHECK_EQ(a.call.key(), a.call.key());  // deterministic
}

TEST(OpCallKey, RuntimeValuesDoNotChangeTheKey) {
  const std::string base = CallFixture().call.key();
  const std::pair<const char*, Mutation> same[] = {
      {"runtime scalar value", [](CallFixture& f) { f.call.scalars[0] = f64_scalar(1e-3); }},
      {"rng seed and offset",
       [](CallFixture& f) {
         f.call.seed = 1234;
         f.call.rng_counter = 99;
       }},
      {"host value of a runtime Scalar arg",
       [](CallFixture& f) {
         f.call.args[1].d = 7.0;
         f.call.args[1].i = 3;
       }},
      {"op_name text (the lowering is what counts)", [](CallFixture& f) { f.call.op_name = "aten::copy_"; }},
      {"device (executables are portable)",
       [](CallFixture& f) {
         f.call.device = 1;
         f.s0.device = 1;
         f.s1.device = 1;
       }},
  };
  for (const auto& [what, m] : same) {
    if (!CHECK_EQ(key_after(m), base)) std::printf("  key changed for: %s\n", what);
  }
}

TEST(OpCallKey, EverythingCompiledInChangesTheKey) {
  const std::string base = CallFixture().call.key();
  const std::pair<const char*, Mutation> different[] = {
      {"read view sizes",
       [](CallFixture& f) {
         f.call.views[0].geometry.sizes = {6, 4};
         f.call.views[0].geometry.strides = {4, 1};
       }},
      {"read view strides", [](CallFixture& f) { f.call.views[0].geometry.strides = {1, 4}; }},
      {"read view offset", [](CallFixture& f) { f.call.views[0].geometry.offset = 1; }},
      {"read view dtype", [](CallFixture& f) { f.call.views[0].dtype = DType::I32; }},
      {"written view geometry", [](CallFixture& f) { f.call.views[1].geometry.offset = 3; }},
      {"written view dtype", [](CallFixture& f) { f.call.views[1].dtype = DType::BF16; }},
      {"storage size", [](CallFixture& f) { f.s1.nbytes = 31 * 4; }},
      {"which storage a view reads", [](CallFixture& f) { f.call.views[0].storage = 1; }},
      {"written views", [](CallFixture& f) { f.call.written_views = {}; }},
      {"written views (other view)", [](CallFixture& f) { f.call.written_views = {0}; }},
      {"static scalar value", [](CallFixture& f) { f.call.args[2].d = 2.75; }},
      {"static integer scalar value", [](CallFixture& f) { f.call.args[2].i = 1; }},
      {"scalar made static", [](CallFixture& f) { f.call.args[1].is_static = true; }},
      {"runtime scalar dtype", [](CallFixture& f) { f.call.scalars[0].dtype = DType::I64; }},
      {"extra runtime scalar", [](CallFixture& f) { f.call.scalars.push_back(f64_scalar(0.5)); }},
      {"int arg", [](CallFixture& f) { f.call.args[3].i = 0; }},
      {"int list arg", [](CallFixture& f) { f.call.args[4].ints = {2, 4}; }},
      {"int list length", [](CallFixture& f) { f.call.args[4].ints = {2, 3, 1}; }},
      {"bool arg", [](CallFixture& f) { f.call.args[5].i = 0; }},
      {"string arg", [](CallFixture& f) { f.call.args[6].s = "sum"; }},
      {"arg kind", [](CallFixture& f) { f.call.args[3].kind = Kind::ScalarType; }},
      {"wrapped number flag", [](CallFixture& f) { f.call.args[1].wrapped_number = true; }},
      {"extra None arg", [](CallFixture& f) { f.call.args.push_back(ArgSpec{}); }},
      {"random flag", [](CallFixture& f) { f.call.random = true; }},
      {"lowering",
       [](CallFixture& f) {
         static const tpu::lowering::Lowering other{"test::other", nullptr};
         f.call.lowering = &other;
       }},
  };
  for (const auto& [what, m] : different) {
    if (!CHECK_NE(key_after(m), base)) std::printf("  key unchanged for: %s\n", what);
  }
}

TEST(OpCallKey, StorageBufferPresenceAndDtype) {
  CallFixture a, b;
  // A written storage is keyed by the dtype of its current value, not the view's.
  std::vector<int32_t> data(30, 0);
  give_value(b.s1, tpu::testing::client().buffer_from_host(data.data(), PJRT_Buffer_Type_S32, {30}, 0),
             DType::I32);
  CHECK_EQ(tpu::exec::storage_dtype(a.call, 1), DType::F32);
  CHECK_EQ(tpu::exec::storage_dtype(b.call, 1), DType::I32);
  CHECK_EQ(tpu::exec::storage_numel(b.call, 1), int64_t{30});
  CHECK_NE(a.call.key(), b.call.key());
  // Same bytes, byte-typed buffer: numel and dtype change.
  CallFixture c;
  std::vector<uint8_t> bytes(120, 0);
  give_value(c.s1, tpu::testing::client().buffer_from_host(bytes.data(), PJRT_Buffer_Type_U8, {120}, 0),
             DType::U8);
  CHECK_EQ(tpu::exec::storage_numel(c.call, 1), int64_t{120});
  CHECK_NE(c.call.key(), b.call.key());
  // An F32 value is keyed like the never-written F32 storage except for the "defined" bit
  // (a never-written storage reads as zeros).
  CallFixture d;
  std::vector<float> floats(30, 0.f);
  give_value(d.s1, tpu::testing::client().buffer_from_host(floats.data(), PJRT_Buffer_Type_F32, {30}, 0),
             DType::F32);
  CHECK_NE(d.call.key(), a.call.key());
}

TEST(OpCallKey, ListsAreLengthPrefixed) {
  // ([1, 2], [3]) and ([1], [2, 3]) must not collide.
  auto two_lists = [](std::vector<int64_t> x, std::vector<int64_t> y) {
    CallFixture f;
    f.call.args[4].ints = x;
    ArgSpec extra;
    extra.kind = Kind::IntList;
    extra.ints = y;
    f.call.args.push_back(extra);
    return f.call.key();
  };
  CHECK_NE(two_lists({1, 2}, {3}), two_lists({1}, {2, 3}));
  CHECK_EQ(two_lists({1, 2}, {3}), two_lists({1, 2}, {3}));
  auto two_strings = [](std::string x, std::string y) {
    CallFixture f;
    f.call.args[6].s = x;
    ArgSpec extra;
    extra.kind = Kind::String;
    extra.s = y;
    f.call.args.push_back(extra);
    return f.call.key();
  };
  CHECK_NE(two_strings("ab", "c"), two_strings("a", "bc"));
  // Tensor lists: [v0, None] vs [v0] plus nothing.
  CallFixture l1, l2;
  ArgSpec list;
  list.kind = Kind::TensorList;
  list.list_views = {0, -1};
  l1.call.args.push_back(list);
  list.list_views = {0};
  l2.call.args.push_back(list);
  CHECK_NE(l1.call.key(), l2.call.key());
}

TEST(OpCallStorage, DtypeAndNumelWithoutBuffer) {
  CallFixture f;
  // Never written: the dtype of the first view onto the storage.
  f.call.views[1].dtype = DType::I64;
  CHECK_EQ(tpu::exec::storage_dtype(f.call, 1), DType::I64);
  CHECK_EQ(tpu::exec::storage_numel(f.call, 1), int64_t{15});  // 120 bytes as i64
  CHECK_EQ(f.s1.numel_as(DType::BF16), int64_t{60});
  // A storage no view refers to defaults to f32.
  Storage lone;
  lone.nbytes = 64;
  f.call.storages.push_back(&lone);
  CHECK_EQ(tpu::exec::storage_dtype(f.call, 2), DType::F32);
  CHECK_EQ(tpu::exec::storage_numel(f.call, 2), int64_t{16});
}

// ---------------------------------------------------------------------------------------------
// CompileCache
// ---------------------------------------------------------------------------------------------

namespace {

tpu::exec::CompiledOpPtr op(const std::string& name) {
  auto p = std::make_shared<tpu::exec::CompiledOp>();
  p->op_name = name;
  return p;
}

std::vector<std::string> names_mru_first(const tpu::exec::CompileCache& c) {
  std::vector<std::string> out;
  for (const auto& e : c.entries()) out.push_back(e.op_name);
  return out;
}

}  // namespace

TEST(CompileCache, LruEviction) {
  tpu::exec::CompileCache c(3);
  CHECK_EQ(c.capacity(), size_t{3});
  CHECK_EQ(c.size(), size_t{0});
  CHECK(c.find("a") == nullptr);
  auto a = op("A"), b = op("B"), cc = op("C"), d = op("D");
  c.insert("a", a);
  c.insert("b", b);
  c.insert("c", cc);
  CHECK_EQ(c.size(), size_t{3});
  CHECK_EQ(names_mru_first(c), (std::vector<std::string>{"C", "B", "A"}));
  // Touch a: b becomes least recently used and is evicted by d.
  CHECK(c.find("a") == a);
  c.insert("d", d);
  CHECK_EQ(c.size(), size_t{3});
  CHECK(c.find("b") == nullptr);
  CHECK(c.find("c") == cc);
  CHECK(c.find("d") == d);
  CHECK(c.find("a") == a);
  CHECK_EQ(names_mru_first(c), (std::vector<std::string>{"A", "D", "C"}));
  // Another insert evicts c now.
  c.insert("e", op("E"));
  CHECK(c.find("c") == nullptr);
  CHECK_EQ(names_mru_first(c), (std::vector<std::string>{"E", "A", "D"}));
}

TEST(CompileCache, ReinsertReplacesAndRefreshes) {
  tpu::exec::CompileCache c(2);
  c.insert("x", op("X1"));
  c.insert("y", op("Y"));
  auto x2 = op("X2");
  c.insert("x", x2);  // replaces, no growth, x becomes most recent
  CHECK_EQ(c.size(), size_t{2});
  CHECK(c.find("x") == x2);
  c.insert("z", op("Z"));  // evicts y, not x
  CHECK(c.find("y") == nullptr);
  CHECK(c.find("x") == x2);
  CHECK_EQ(names_mru_first(c), (std::vector<std::string>{"X2", "Z"}));
}

TEST(CompileCache, CapacityChangesAndClear) {
  tpu::exec::CompileCache c(4);
  for (const char* k : {"k1", "k2", "k3", "k4"}) c.insert(k, op(k));
  CHECK_EQ(c.size(), size_t{4});
  c.set_capacity(2);  // keeps the two most recent
  CHECK_EQ(c.capacity(), size_t{2});
  CHECK_EQ(names_mru_first(c), (std::vector<std::string>{"k4", "k3"}));
  c.set_capacity(10);
  c.insert("k5", op("k5"));
  CHECK_EQ(c.size(), size_t{3});
  c.clear();
  CHECK_EQ(c.size(), size_t{0});
  CHECK(c.find("k5") == nullptr);
  c.set_capacity(0);  // a zero-capacity cache keeps nothing
  c.insert("k6", op("k6"));
  CHECK_EQ(c.size(), size_t{0});
  CHECK(c.find("k6") == nullptr);
}

TEST(CompileCache, EntriesReportUsesAndKeyBytes) {
  tpu::exec::CompileCache c(8);
  auto a = op("aten::add.Tensor");
  a->uses = 5;
  a->compile_seconds = 0.25;
  c.insert(std::string(37, 'k'), a);
  auto e = c.entries();
  REQUIRE_EQ(e.size(), size_t{1});
  CHECK_EQ(e[0].op_name, std::string("aten::add.Tensor"));
  CHECK_EQ(e[0].uses, int64_t{5});
  CHECK_EQ(e[0].key_bytes, size_t{37});
  CHECK_EQ(e[0].compile_seconds, 0.25);
  CHECK(&tpu::exec::op_cache() == &tpu::exec::op_cache());
  CHECK(tpu::exec::op_cache().capacity() > 0);
}

// ---------------------------------------------------------------------------------------------
// build_program
// ---------------------------------------------------------------------------------------------

TEST(OpProgram, CopyThroughViewsRunsCorrectly) {
  // view_copy(transpose of s0) written into a strided window of s1.
  Storage s0, s1;
  s0.nbytes = 24 * 4;
  s1.nbytes = 30 * 4;
  OpCall call;
  call.lowering = copy_lowering();
  call.op_name = "torch_tpu::view_copy";
  call.storages = {&s0, &s1};
  tpu::lowering::ViewGeometry src{{6, 4}, {1, 6}, 0}, dst{{6, 4}, {5, 1}, 1};
  call.views = {TensorView{0, DType::F32, src}, TensorView{1, DType::F32, dst}};
  ArgSpec t;
  t.kind = Kind::Tensor;
  t.view = 0;
  call.args = {t};
  call.written_views = {1};
  tpu::exec::OutputPlan plan;
  plan.result_types = {tpu::ir::Type{DType::F32, {6, 4}}};
  tpu::exec::ProgramLayout layout;
  std::string text = tpu::exec::build_program(call, plan, layout);
  CHECK_EQ(layout.input_storages, (std::vector<int>{0, 1}));
  CHECK_EQ(layout.written_storages, (std::vector<int>{1}));
  CHECK_EQ(layout.written_dtypes, (std::vector<DType>{DType::F32}));

  std::vector<float> a(24), b(30);
  for (int i = 0; i < 24; ++i) a[i] = 1.f + i;
  for (int i = 0; i < 30; ++i) b[i] = -1.f - i;
  auto exe = tpu::testing::client().compile(text);
  auto outs =
      tpu::testing::download(tpu::testing::execute(*exe, {tpu::testing::HostArray::of(DType::F32, {24}, a),
                                                          tpu::testing::HostArray::of(DType::F32, {30}, b)}),
                             {tpu::ir::Type{DType::F32, {30}}});
  std::vector<float> expected = b;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) expected[dst.offset + i * 5 + j] = a[src.offset + i * 1 + j * 6];
  CHECK_EQ(outs.at(0).as<float>(), expected);
}

TEST(OpProgram, NewOutputIsLaidOutByItsStrides) {
  Storage s0;
  s0.nbytes = 12 * 4;
  OpCall call;
  call.lowering = copy_lowering();
  call.op_name = "torch_tpu::view_copy";
  call.storages = {&s0};
  call.views = {TensorView{0, DType::I32, {{3, 4}, {4, 1}, 0}}};
  ArgSpec t;
  t.kind = Kind::Tensor;
  t.view = 0;
  call.args = {t};
  tpu::exec::OutputPlan plan;
  plan.result_types = {tpu::ir::Type{DType::F64, {3, 4}}};
  plan.new_outputs = {{{3, 4}, {1, 3}, DType::F64}};  // column-major result
  plan.return_counts = {1};
  tpu::exec::ProgramLayout layout;
  std::string text = tpu::exec::build_program(call, plan, layout);
  CHECK_EQ(layout.input_storages, (std::vector<int>{0}));
  CHECK(layout.written_storages.empty());
  std::vector<int32_t> a(12);
  for (int i = 0; i < 12; ++i) a[i] = 10 * i - 3;
  auto exe = tpu::testing::client().compile(text);
  auto outs =
      tpu::testing::download(tpu::testing::execute(*exe, {tpu::testing::HostArray::of(DType::I32, {12}, a)}),
                             {tpu::ir::Type{DType::F64, {12}}});
  std::vector<double> expected(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) expected[i * 1 + j * 3] = static_cast<double>(a[i * 4 + j]);
  CHECK_EQ(outs.at(0).as<double>(), expected);
}

TEST(OpProgram, WrongLoweringResultTypeIsReported) {
  Storage s0;
  s0.nbytes = 12 * 4;
  OpCall call;
  call.lowering = copy_lowering();
  call.op_name = "torch_tpu::view_copy";
  call.storages = {&s0};
  call.views = {TensorView{0, DType::F32, {{3, 4}, {4, 1}, 0}}};
  ArgSpec t;
  t.kind = Kind::Tensor;
  t.view = 0;
  call.args = {t};
  tpu::exec::OutputPlan plan;
  plan.result_types = {tpu::ir::Type{DType::F32, {3, 4}},
                       tpu::ir::Type{DType::F32, {3, 4}}};  // two, lowering gives one
  tpu::exec::ProgramLayout layout;
  CHECK_THROWS_WITH(tpu::exec::build_program(call, plan, layout), std::runtime_error, "torch_tpu::view_copy");
}
