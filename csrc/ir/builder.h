// A small SSA builder for one StableHLO function (@main), printed as MLIR text in the generic
// op syntax, which every plugin in the supported StableHLO range accepts. Ops are emitted as
// text when created: IR is only built on a compile-cache miss, so nothing here is hot.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/dtype.h"
#include "ir/imported_module.h"

namespace tpu::ir {

using Shape = std::vector<int64_t>;

struct Type {
  DType dtype = DType::F32;
  Shape shape;
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  std::string str() const;  // tensor<2x3xf32>
  bool operator==(const Type& o) const { return dtype == o.dtype && shape == o.shape; }
};

struct Value {
  int id = -1;
  Type type;
  DType dtype() const { return type.dtype; }
  const Shape& shape() const { return type.shape; }
  int rank() const { return type.rank(); }
  int64_t dim(int i) const { return type.shape[i < 0 ? i + rank() : i]; }
  bool valid() const { return id >= 0; }
};

class Builder {
 public:
  using RegionBody = std::function<std::vector<Value>(Builder&, const std::vector<Value>& args)>;

  // Adds an argument of @main (all parameters must be added before they are used).
  Value param(const Type& type);
  // Emits `name` with the given operands, result types and attribute dictionary body
  // (e.g. "dimensions = array<i64: 0>"), returning one Value per result type.
  std::vector<Value> op(const std::string& name, const std::vector<Value>& operands,
                        const std::vector<Type>& results, const std::string& attrs = "");
  Value op1(const std::string& name, const std::vector<Value>& operands, const Type& result,
            const std::string& attrs = "");
  // As op(), with one region whose block takes `region_args` and ends in stablehlo.return of
  // what `body` returns (reduce, scatter, sort, select_and_scatter, ...).
  std::vector<Value> op_with_region(const std::string& name, const std::vector<Value>& operands,
                                    const std::vector<Type>& results, const std::string& attrs,
                                    const std::vector<Type>& region_args, const RegionBody& body);
  // As op(), with several regions (stablehlo.while: cond then body; stablehlo.case, ...).
  struct Region {
    std::vector<Type> args;
    RegionBody body;
  };
  std::vector<Value> op_with_regions(const std::string& name, const std::vector<Value>& operands,
                                     const std::vector<Type>& results, const std::string& attrs,
                                     const std::vector<Region>& regions);
  // Calls an imported module's entry (ir/imported_module.h); its functions join this module
  // (once per entry name), so the call is part of the program like any other op.
  std::vector<Value> call(const ImportedModule& module, const std::vector<Value>& operands,
                          const std::vector<Type>& results);
  // Sets the values @main returns.
  void set_results(const std::vector<Value>& results) { results_ = results; }
  const std::vector<Value>& results() const { return results_; }
  int num_params() const { return static_cast<int>(params_.size()); }
  // Declares that parameter `param` may share its buffer with result `result` (same type), so
  // a caller that donates the argument saves an allocation and a copy.
  void alias(int param, int result) { aliases_.emplace_back(param, result); }

  std::string module_text() const;

 private:
  Value fresh(const Type& t);
  std::string names(const std::vector<Value>& vs) const;
  void emit(const std::string& line);
  std::string region_text(const Region& region);

  int next_id_ = 0;
  std::vector<std::string> names_;  // SSA name of each value id
  std::vector<Value> params_;
  std::vector<Value> results_;
  std::vector<std::pair<int, int>> aliases_;   // (parameter, result)
  std::vector<std::string> body_;              // lines of @main
  std::vector<std::string>* out_ = &body_;     // current block being written
  std::vector<std::string> imported_entries_;  // entries of the imported modules, in order
  std::string imported_functions_;             // their functions' text
  int depth_ = 1;
};

// "array<i64: 1, 2>" for dense array attributes, "[1, 2]" for lists inside #stablehlo attrs.
std::string i64_array(const std::vector<int64_t>& v);
std::string i64_list(const std::vector<int64_t>& v);

}  // namespace tpu::ir
