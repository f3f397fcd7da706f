// Every lowering written in csrc/lowering is bound in this binary. Registrations are static
// objects that nothing refers to, so a linker drops them when the core is linked as an archive
// member it does not need; the core is therefore an object library (CMakeLists.txt). This test
// reads the sources' TPU_LOWERING("...") names and compares them with the registry.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "lowering/registry.h"
#include "testing/unit_test.h"

namespace {

std::set<std::string> names_in_sources() {
  // A registration starts its line (a comment may mention the macro too).
  const std::regex registration(R"re(^\s*TPU_LOWERING\("([^"]+)")re");
  std::set<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TORCH_TPU_SOURCE_DIR) + "/csrc/lowering")) {
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
