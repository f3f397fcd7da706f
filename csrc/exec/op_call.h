// A torch-free description of one op invocation: which storages and views it reads, which views
// it writes, its non-tensor arguments and runtime scalars. The aten glue builds it from the
// dispatcher stack; exec keys, compiles and runs it.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/storage.h"
#include "lowering/core/registry.h"
#include "lowering/indexing/storage_view.h"

namespace tpu::exec {

struct TensorView {
  int storage = -1;  // index into OpCall::storages
  ir::DType dtype = ir::DType::F32;
  lowering::ViewGeometry geometry;
};

struct HostScalar {
  ir::DType dtype = ir::DType::F64;
  std::array<uint8_t, 16> bytes{};
};

struct ArgSpec {
  lowering::Arg::Kind kind = lowering::Arg::Kind::None;
  int view = -1;                  // Tensor living in a device storage
  int scalar = -1;                // Tensor or Scalar passed as a runtime 0-d value (host scalar)
  std::vector<int> list_views;    // TensorList (-1 for None entries)
  std::vector<int> list_scalars;  // Scalar[]/float[] lists: runtime 0-d values (into scalars)
  bool wrapped_number = false;
  bool is_static = false;  // Scalar whose value is compile-time (i / d below)
  int64_t i = 0;
  double d = 0;
  std::vector<int64_t> ints;
  std::string s;
  // IntList that lists result types (dtype, rank, sizes...) of a glue op (run_internal): its sizes
  // may vary with the inputs' as any other size does.
  bool result_types = false;
};

// A call run by a program compiled for buckets (docs/dynamic_shapes.md): its varying quantities
// are symbols, entries of one i64 runtime input; -1 marks a quantity that is a compile-time
// constant. Sizes that are symbols are compiled at their bucket.
struct DynamicSpec {
  std::vector<int64_t> values;  // the symbols' values for this call
  struct View {
    std::vector<int> sizes, strides;
    int offset = -1;
  };
  std::vector<View> views;                 // per view
  std::vector<std::vector<int>> storages;  // per storage: per padded dimension (empty when flat)
  std::vector<std::vector<int>> results;   // per plan result type: per dimension
  std::vector<bool> is_size;               // per symbol: a size (shared by equal sizes)
  int add(int64_t value) {
    values.push_back(value);
    is_size.push_back(false);
    return static_cast<int>(values.size()) - 1;
  }
  // Equal sizes share one symbol, as Dynamo's duck sizing: a view spanning a whole dynamic
  // dimension then reads that dimension's own size, and masks of one length are computed once.
  // Keys carry which sizes share (bucketed_key), so a coincidence compiles its own program.
  int add_size(int64_t value) {
    for (size_t i = 0; i < values.size(); ++i)
      if (is_size[i] && values[i] == value) return static_cast<int>(i);
    const int i = add(value);
    is_size[i] = true;
    return i;
  }
};

struct OpCall {
  const lowering::Lowering* lowering = nullptr;
  std::string op_name;
  int device = 0;
  std::vector<ArgSpec> args;  // the functional op's arguments
  std::vector<TensorView> views;
  std::vector<Storage*> storages;  // unique
  std::vector<HostScalar> scalars;
  std::vector<int> written_views;  // views the op writes, in result order
  bool random = false;
  uint64_t seed = 0, rng_counter = 0;
  std::shared_ptr<const DynamicSpec> dynamic;  // null: every quantity is a constant

  // Compact bytes identifying everything the compiled program depends on.
  std::string key() const;
  // The key without sizes, strides, offsets and storage sizes: calls that differ only there
  // are the same op applied to other shapes (automatic dynamic dimensions compare them).
  std::string shape_free_key() const;
};

// Types and layouts of an op's results, computed once by PyTorch's meta kernels on a cache miss.
struct OutputPlan {
  struct NewOutput {
    std::vector<int64_t> sizes, strides;
    ir::DType dtype;
    // An undefined tensor in the meta result (e.g. a gradient that output_mask did not ask
    // for): the lowering returns an empty f32[0] placeholder and the op returns undefined.
    bool undefined = false;
  };
  std::vector<ir::Type> result_types;  // what the lowering returns
  std::vector<NewOutput> new_outputs;  // results after the written ones
  std::vector<int> return_counts;      // new outputs per non-aliasing return (lists > 1)
};

// Appends the bytes of `v` to a key (op, graph and layout keys are compact bytes, not text).
template <typename T>
void append_bytes(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Dtype that the storage holds (or will hold once first written through `view`).
ir::DType storage_dtype(const OpCall& call, int storage);
int64_t storage_numel(const OpCall& call, int storage);

}  // namespace tpu::exec
