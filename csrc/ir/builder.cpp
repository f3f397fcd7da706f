#include "ir/builder.h"

#include <algorithm>
#include <sstream>

namespace tpu::ir {

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Type::str() const {
  std::string s = "tensor<";
  for (int64_t d : shape) s += std::to_string(d) + "x";
  return s + mlir_name(dtype) + ">";
}

std::string i64_array(const std::vector<int64_t>& v) {
  std::string s = "array<i64";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : ": ") + std::to_string(v[i]);
  return s + ">";
}

std::string i64_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

namespace {

std::string operand_types(const std::vector<Value>& vs) {
  std::string s;
  for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + vs[i].type.str();
  return s;
}

std::string type_list(const std::vector<Type>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s;
}

std::string signature(const std::vector<Value>& operands, const std::vector<Type>& results) {
  std::string r = type_list(results);
  return "(" + operand_types(operands) + ") -> " + (results.size() == 1 ? r : "(" + r + ")");
}

}  // namespace

Value Builder::fresh(const Type& t) {
  Value v{next_id_++, t};
  names_.push_back("%" + std::to_string(v.id));
  return v;
}

std::string Builder::names(const std::vector<Value>& vs) const {
  std::string s;
  for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + names_[vs[i].id];
  return s;
}

Value Builder::param(const Type& type) {
  Value v = fresh(type);
  params_.push_back(v);
  return v;
}

void Builder::emit(const std::string& line) { out_->push_back(std::string(2 * depth_, ' ') + line); }

std::vector<Value> Builder::op(const std::string& name, const std::vector<Value>& operands,
                               const std::vector<Type>& results, const std::string& attrs) {
  return op_with_region(name, operands, results, attrs, {}, nullptr);
}

Value Builder::op1(const std::string& name, const std::vector<Value>& operands, const Type& result,
                   const std::string& attrs) {
  return op(name, operands, {result}, attrs)[0];
}

std::vector<Value> Builder::op_with_region(const std::string& name, const std::vector<Value>& operands,
                                           const std::vector<Type>& results, const std::string& attrs,
                                           const std::vector<Type>& region_args, const RegionBody& body) {
  std::vector<Region> regions;
  if (body) regions.push_back(Region{region_args, body});
  return op_with_regions(name, operands, results, attrs, regions);
}

// The text of one region, " ({ ^bb0(args): ... stablehlo.return })" without the outer
// parentheses' closing, written at the current depth.
std::string Builder::region_text(const Region& region) {
  std::vector<Value> args;
  for (const Type& t : region.args) args.push_back(fresh(t));
  std::vector<std::string> lines;
  std::vector<std::string>* saved = out_;
  out_ = &lines;
  ++depth_;
  std::vector<Value> rets = region.body(*this, args);
  emit("\"stablehlo.return\"(" + names(rets) + ") : (" + operand_types(rets) + ") -> ()");
  --depth_;
  out_ = saved;
  std::string head = std::string(2 * depth_ + 2, ' ') + "^bb0(";
  for (size_t i = 0; i < args.size(); ++i)
    head += (i ? ", " : "") + names_[args[i].id] + ": " + args[i].type.str();
  std::string text = "{\n" + head + "):\n";
  for (const auto& l : lines) text += l + "\n";
  return text + std::string(2 * depth_, ' ') + "}";
}

std::vector<Value> Builder::op_with_regions(const std::string& name, const std::vector<Value>& operands,
                                            const std::vector<Type>& results, const std::string& attrs,
                                            const std::vector<Region>& regions) {
  std::vector<Value> outs;
  for (const Type& t : results) outs.push_back(fresh(t));
  std::string lhs;
  if (outs.size() == 1) lhs = names_[outs[0].id] + " = ";
  if (outs.size() > 1) {
    // Multi-result ops bind a pack %rN:k whose members are used as %rN#i.
    std::string pack = "%r" + std::to_string(outs[0].id);
    lhs = pack + ":" + std::to_string(outs.size()) + " = ";
    for (size_t i = 0; i < outs.size(); ++i) names_[outs[i].id] = pack + "#" + std::to_string(i);
  }
  std::string region;
  for (size_t i = 0; i < regions.size(); ++i) region += (i ? ", " : " (") + region_text(regions[i]);
  if (!regions.empty()) region += ")";
  std::string line = lhs + "\"" + name + "\"(" + names(operands) + ")" + region;
  if (!attrs.empty()) line += " {" + attrs + "}";
  line += " : " + signature(operands, results);
  emit(line);
  return outs;
}

std::vector<Value> Builder::call(const ImportedModule& module, const std::vector<Value>& operands,
                                 const std::vector<Type>& results) {
  if (std::find(imported_entries_.begin(), imported_entries_.end(), module.entry) ==
      imported_entries_.end()) {
    imported_entries_.push_back(module.entry);
    imported_functions_ += module.functions;
  }
  return op("func.call", operands, results, "callee = " + module.entry);
}

std::string Builder::module_text() const {
  std::ostringstream s;
  s << "module @torch_tpu {\n  func.func public @main(";
  for (size_t i = 0; i < params_.size(); ++i) {
    s << (i ? ", " : "") << names_[params_[i].id] << ": " << params_[i].type.str();
    for (const auto& [param, result] : aliases_)
      if (param == static_cast<int>(i)) s << " {tf.aliasing_output = " << result << " : i32}";
  }
  s << ") -> (";
  for (size_t i = 0; i < results_.size(); ++i) s << (i ? ", " : "") << results_[i].type.str();
  s << ") {\n";
  for (const auto& l : body_) s << "  " << l << "\n";
  s << "    \"func.return\"(" << names(results_) << ") : (" << operand_types(results_) << ") -> ()\n  }\n";
  s << imported_functions_ << "}\n";
  return s.str();
}

}  // namespace tpu::ir
