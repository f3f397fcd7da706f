// Every lowering written in csrc/lowering is bound in this binary. Registrations are static
// objects that nothing refers to, so a linker drops them when the core is linked as an archive
// member it does not need; the core is therefore an object library (CMakeLists.txt). This test
// reads the sources' TPU_LOWERING("...") names and compares them with the registry.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>

#include "lowering/core/registry.h"
#include "testing/unit_test.h"

namespace {

std::set<std::string> names_in_sources() {
  // A registration starts its line (a comment may mention the macro too).
  const std::regex registration(R"re(^\s*TPU_LOWERING\("([^"]+)")re");
  std::set<std::string> names;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(TORCH_TPU_SOURCE_DIR) + "/csrc/lowering")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream file(entry.path());
    std::smatch match;
    for (std::string line; std::getline(file, line);)
      if (std::regex_search(line, match, registration)) names.insert(match[1].str());
  }
  return names;
}

}  // namespace

TEST(LoweringRegistry, EveryLoweringInTheSourcesIsBound) {
  const std::set<std::string> expected = names_in_sources();
  std::set<std::string> bound;
  for (const auto* lowering : tpu::lowering::all_lowerings()) bound.insert(lowering->name);
  REQUIRE(expected.size() > 500);  // the sources were found and read
  std::string missing;
  for (const std::string& name : expected)
    if (!bound.count(name)) missing += " " + name;
  CHECK_EQ(missing, std::string());
  CHECK_EQ(bound.size(), expected.size());
}

TEST(LoweringRegistry, ArgumentsAreReadByDeclaredSchemaNames) {
  using tpu::lowering::Arg;
  tpu::lowering::Lowering l{"test::scratch", nullptr};
  l.signature = tpu::lowering::reads({"self", "dim"});
  l.schema_args = {"self", "other", "dim"};
  tpu::ir::Builder b;
  Arg dim;
  dim.kind = Arg::Kind::Int;
  dim.i = 2;
  tpu::lowering::Ctx c{b, {Arg{}, Arg{}, dim}, {}, {}, {}, &l};
  CHECK_EQ(c.index("self"), 0);
  CHECK_EQ(c.int_arg("dim"), int64_t{2});
  // Declared names only: reading another schema argument is an error, not a silent read.
  CHECK_THROWS_WITH(c.index("other"), std::logic_error, "does not declare");
  l.signature.reads.push_back("misspelt");
  CHECK_THROWS_WITH(c.index("misspelt"), std::logic_error, "has no argument 'misspelt'");
}

TEST(LoweringRegistry, BindingChecksDeclaredNamesAndSetsStatics) {
  // A scratch registry: unknown declared names come back; statics become the static bit mask.
  tpu::lowering::Registry scratch;
  scratch.add(
      {"aten::addmm", nullptr, 0, false, tpu::lowering::reads({"self", "mat1", "mat2"}, {"alpha"}), {}});
  std::vector<std::string> schema = {"self", "mat1", "mat2", "beta", "alpha"};
  CHECK_EQ(scratch.bind_schema("aten::addmm", schema).size(), size_t{0});
  CHECK_EQ(scratch.find("aten::addmm")->static_args, uint32_t{1u << 4});
  std::vector<std::string> renamed = {"input", "mat1", "mat2", "beta", "alpha"};
  std::vector<std::string> unknown = scratch.bind_schema("aten::addmm", renamed);
  CHECK_EQ(unknown.size(), size_t{1});
  CHECK_EQ(unknown.at(0), std::string("self"));
  CHECK_THROWS_WITH(scratch.add({"aten::addmm", nullptr, 0, false, tpu::lowering::reads({}), {}}),
                    std::logic_error, "duplicate lowering for aten::addmm");
}

TEST(LoweringRegistry, GlueOpsAreBoundToTheirDeclaredNames) {
  // torch_tpu:: ops have no dispatcher schema: the declared names, in order, are their arguments.
  const auto* copy = tpu::lowering::find_lowering("torch_tpu::view_copy");
  REQUIRE(copy != nullptr);
  CHECK(copy->schema_args == std::vector<std::string>{"self"});
  const auto* weighted = tpu::lowering::find_lowering("torch_tpu::bincount_weighted");
  REQUIRE(weighted != nullptr);
  CHECK(weighted->schema_args == (std::vector<std::string>{"self", "weights"}));
}

TEST(LoweringRegistry, OneOfSeveralOverloadNamesIsTheDeclaredOne) {
  tpu::lowering::Lowering l{"test::overload", nullptr};
  l.signature = tpu::lowering::reads({"self", "scalars"});
  l.schema_args = {"self", "scalars", "alpha"};
  tpu::ir::Builder b;
  tpu::lowering::Ctx c{b, {tpu::lowering::Arg{}}, {}, {}, {}, &l};
  CHECK_EQ(c.declared_one_of({"other", "scalar", "scalars"}), std::string_view("scalars"));
  CHECK_THROWS_WITH(c.declared_one_of({"other", "scalar"}), std::logic_error,
                    "declares none of 'other' 'scalar'");
  // A declared argument past the ones passed (an optional left out) is absent, not an error.
  CHECK(!c.has("scalars"));
}
