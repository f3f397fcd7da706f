// unique and unique_consecutive, in two steps as nonzero: the number of distinct runs is read on
// the host, then a program of that size computes (values, inverse, counts). The glue passes the
// input as rows [n, rest] (one element per row without `dim`, the slices along `dim` with it).
// unique sorts first (stably; rows of one element only), unique_consecutive keeps the order; a
// run starts wherever a row differs from the one before it (NaN differs from everything, as on
// CPU).
#include <tuple>

#include "lowering/core/hlo.h"
#include "lowering/core/index_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"
#include "lowering/reduction/sort_util.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Type;
using ir::Value;

struct Runs {
  Value rows;   // the rows, in run order [n, rest]
  Value order;  // their positions in the input [n]
  Value run;    // run number of each row [n], i64
  int64_t n = 0;
};

Runs runs(Ctx& c, bool sorted) {
  Runs r;
  r.rows = c.tensor("self");
  r.n = r.rows.shape()[0];
  const int64_t rest = r.rows.shape()[1];
  Type flags{DType::I64, {r.n}};
  r.order = hlo::iota(c.b, flags, 0);
  if (r.n == 0) {
    r.run = r.order;
    return r;
  }
  if (sorted) {
    auto [v, order] = sort_with_indices(c.b, hlo::reshape(c.b, r.rows, {r.n}), 0, false);
    r.rows = hlo::reshape(c.b, v, {r.n, 1});
    r.order = order;
  }
  Value previous = hlo::concatenate(
      c.b, {hlo::slice_dim(c.b, r.rows, 0, 0, 1), hlo::slice_dim(c.b, r.rows, 0, 0, r.n - 1)}, 0);
  Value differs = reduce::max(c.b, hlo::compare(c.b, r.rows, previous, "NE"), {1});
  if (rest == 0) differs = hlo::full(c.b, Type{DType::Bool, {r.n}}, 0);
  Value first = hlo::compare(c.b, hlo::iota(c.b, flags, 0), hlo::full(c.b, flags, 0), "EQ");
  Value ones = hlo::convert(c.b, hlo::or_(c.b, first, differs), DType::I64);
  r.run = hlo::sub(
      c.b,
      hlo::reduce_window(c.b, {ones}, {hlo::constant(c.b, DType::I64, 0)}, {r.n}, {}, {{r.n - 1, 0}}, {},
                         [](ir::Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                           return {hlo::add(rb, a[0], a[1])};
                         })[0],
      hlo::full(c.b, flags, 1));
  return r;
}

// Number of runs, a 0-d int64.
Value count_runs(Ctx& c, bool sorted) {
  Runs r = runs(c, sorted);
  if (r.n == 0) return hlo::constant(c.b, DType::I64, 0);
  return hlo::add(c.b, hlo::reshape(c.b, hlo::slice(c.b, r.run, {r.n - 1}, {r.n}), {}),
                  hlo::constant(c.b, DType::I64, 1));
}

// (rows [u, rest], inverse [n], counts [u]) for the u runs the result types give.
std::vector<Value> unique_results(Ctx& c, bool sorted) {
  Runs r = runs(c, sorted);
  const Type &rows_t = c.out(0), &inverse_t = c.out(1), &counts_t = c.out(2);
  if (r.n == 0) return {hlo::full(c.b, rows_t, 0), hlo::full(c.b, inverse_t, 0), hlo::full(c.b, counts_t, 0)};
  // Every row of a run is the same, so a replacing scatter is deterministic.
  Value rows = idx::scatter_along(c.b, hlo::full(c.b, rows_t, 0), 0, r.run, r.rows, hlo::kReplace);
  Value inverse = idx::scatter_elements(c.b, hlo::full(c.b, inverse_t, 0), r.order, 0, r.run, hlo::kReplace);
  Value counts = idx::scatter_elements(c.b, hlo::full(c.b, counts_t, 0), r.run, 0,
                                       hlo::full(c.b, Type{DType::I64, {r.n}}, 1), hlo::Combiner::Add);
  return {rows, inverse, counts};
}

std::vector<Value> lower_unique_count(Ctx& c) { return {count_runs(c, true)}; }
std::vector<Value> lower_unique_consecutive_count(Ctx& c) { return {count_runs(c, false)}; }
std::vector<Value> lower_unique(Ctx& c) { return unique_results(c, true); }
std::vector<Value> lower_unique_consecutive(Ctx& c) { return unique_results(c, false); }

}  // namespace

TPU_LOWERING("torch_tpu::unique_count", lower_unique_count, reads({"self"}));
TPU_LOWERING("torch_tpu::unique_consecutive_count", lower_unique_consecutive_count, reads({"self"}));
TPU_LOWERING("torch_tpu::unique", lower_unique, reads({"self"}));
TPU_LOWERING("torch_tpu::unique_consecutive", lower_unique_consecutive, reads({"self"}));

}  // namespace tpu::lowering
