#include "ir/imported_module.h"

#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace tpu::ir {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A function's signature line without its argument and result attribute dictionaries
// ({jax.result_info = "result"}, {mhlo.sharding = "{replicated}"}): innermost braces first, so a
// brace inside an attribute's string goes with it. The body's opening brace is kept.
std::string without_attributes(std::string signature) {
  const bool opens_body = signature.size() >= 2 && signature.compare(signature.size() - 2, 2, " {") == 0;
  if (opens_body) signature.resize(signature.size() - 2);
  static const std::regex dict(R"(\s*\{[^{}]*\})");
  for (std::string prev; prev != signature;) {
    prev = signature;
    signature = std::regex_replace(signature, dict, "");
  }
  return opens_body ? signature + " {" : signature;
}

}  // namespace

ImportedModule import_module(const std::string& module_text, const std::string& prefix) {
  std::vector<std::string> lines = lines_of(module_text);
  // The functions are the module's body: between its `module ... {` line and the closing `}`.
  size_t first = 0;
  while (first < lines.size() && lines[first].find("module") == std::string::npos) ++first;
  size_t last = lines.size();
  while (last > first && lines[last - 1].find('}') == std::string::npos) --last;
  if (first + 1 >= last)
    throw std::invalid_argument("torch_tpu: the imported StableHLO text is not a module");

  static const std::regex func_name(R"(func\.func\s+(?:public\s+|private\s+)?@([\w.$-]+))");
  std::set<std::string> names;
  for (size_t i = first + 1; i + 1 < last; ++i) {
    std::smatch m;
    if (std::regex_search(lines[i], m, func_name)) names.insert(m[1].str());
  }
  if (!names.count("main"))
    throw std::invalid_argument("torch_tpu: the imported StableHLO module has no `func.func public @main`");

  // Every reference to one of the module's functions (definitions and func.call callees).
  static const std::regex symbol(R"(@([\w.$-]+))");
  std::string body;
  for (size_t i = first + 1; i + 1 < last; ++i) {
    std::string line = lines[i];
    if (line.find("func.func") != std::string::npos) {
      line = without_attributes(line);
      line = std::regex_replace(line, std::regex(R"(func\.func\s+public\s+)"), "func.func private ");
    }
    std::string renamed;
    auto begin = std::sregex_iterator(line.begin(), line.end(), symbol);
    size_t at = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      renamed += line.substr(at, m.position(0) - at);
      renamed += names.count(m[1].str()) ? "@" + prefix + m[1].str() : m[0].str();
      at = m.position(0) + m.length(0);
    }
    body += renamed + line.substr(at) + "\n";
  }
  return {"@" + prefix + "main", body};
}

}  // namespace tpu::ir
