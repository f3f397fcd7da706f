// multinomial(self, num_samples, replacement, *, generator): category indices drawn from the
// (unnormalized) weights of each row of a 1-d or 2-d tensor.
//
// - Without replacement, and for a single sample: the exponential race (Gumbel top-k). Each
//   category gets the key log(u) / w with u uniform in (0, 1); the k largest keys are a draw
//   of k categories without replacement, exactly as sequential sampling would give them. A zero
//   weight gets -inf and is taken only once every positive weight is (as CPU's race does).
// - With replacement (k > 1): inverse CDF. Running totals of the weights (log-depth prefix
//   sums), t = u * total, and the category is the number of totals <= t (a binary search).
//   A category of weight zero owns an empty interval, so it is never drawn; a t that rounding
//   pushes to the total goes to the last category of positive weight.
// Argument checks that need the data (negative, inf, NaN or all-zero rows) are runtime
// checks with CPU's messages.
#include <stdexcept>

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/index_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/creation/random_bits.h"
#include "lowering/reduction/sort_util.h"

namespace tpu::lowering {

namespace {

using namespace ew;  // NOLINT
using ir::Shape;
using ir::Type;

// For each t [rows, k], the number of entries of its row of the ascending cdf [rows, n] that
// are <= t: binary lifting, one gather per power of two.
Value count_at_most(Builder& b, const Value& cdf, const Value& t) {
  const int64_t n = cdf.dim(1);
  Type index_type{DType::I64, t.shape()};
  Value pos = hlo::full(b, index_type, 0);
  int64_t step = 1;
  while (step * 2 <= n) step *= 2;
  for (; step > 0; step /= 2) {
    Value next = hlo::add(b, pos, hlo::full(b, index_type, static_cast<double>(step)));
    Value probe = hlo::min(b, hlo::sub(b, next, hlo::full(b, index_type, 1)),
                           hlo::full(b, index_type, static_cast<double>(n - 1)));
    Value at = idx::gather_elements(b, cdf, probe, 1);
    Value ok = and_(b, hlo::compare(b, next, hlo::full(b, index_type, static_cast<double>(n)), "LE"),
                    hlo::compare(b, at, t, "LE"));
    pos = hlo::select(b, ok, next, pos);
  }
  return pos;
}

// Whether any element of the bool `mask` is set.
Value any(Builder& b, const Value& mask) {
  return reduce::max(b, mask, reduce::dims_or_all({}, mask.rank()));
}

void check_arguments(const Value& self, int64_t k, bool replacement) {
  DType t = self.dtype();
  if (!ir::is_floating(t))
    throw std::invalid_argument(
        std::string("multinomial only supports floating-point dtypes for input, got: ") + ir::torch_name(t));
  if (k <= 0) throw std::invalid_argument("cannot sample n_sample <= 0 samples");
  const int64_t n = self.shape().empty() ? 1 : self.shape().back();
  if (!replacement && k > n)
    throw std::invalid_argument("cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  if (n > (int64_t{1} << 24)) throw std::invalid_argument("number of categories cannot exceed 2^24");
}

std::vector<Value> lower_multinomial(Ctx& c) {
  Builder& b = c.b;
  const Value& self = c.tensor("self");
  const int64_t k = c.int_arg("num_samples");
  const bool replacement = c.bool_arg("replacement");
  check_arguments(self, k, replacement);
  const DType st = self.dtype() == DType::F64 ? DType::F64 : DType::F32;
  const int64_t n = self.shape().back();
  const int64_t rows = self.rank() == 2 ? self.dim(0) : 1;
  Value w = hlo::reshape(b, hlo::convert(b, self, st), {rows, n});
  Value row_sum = reduce::sum(b, w, {1});
  Value state = private_state(b, c.rng_state);
  Value idx;
  if (!replacement || k == 1) {
    c.require(not_(b, any(b, or_(b, not_(b, ge(b, w, 0)), is_inf(b, w)))),
              "probability tensor contains either `inf`, `nan` or element < 0");
    c.require(not_(b, any(b, eq(b, row_sum, 0))),
              "invalid multinomial distribution (sum of probabilities <= 0)");
    Value u = next_uniform_open(b, state, {rows, n}, st);
    Value key = hlo::div(b, log(b, u), w);
    if (k == 1) {
      idx = reduce::arg_reduce(b, key, 1, /*is_max=*/true).second;
    } else {
      idx = hlo::slice(b, sort_with_indices(b, key, 1, /*descending=*/true).second, {0, 0}, {rows, k});
    }
  } else {
    c.require(not_(b, any(b, not_(b, ge(b, w, 0)))),
              "invalid multinomial distribution (encountering probability entry < 0)");
    c.require(not_(b, any(b, or_(b, is_inf(b, w), is_nan(b, w)))),
              "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
    c.require(not_(b, any(b, le(b, row_sum, 0))),
              "invalid multinomial distribution (sum of probabilities <= 0)");
    Value cdf = reduce::running_sum(b, w, 1);
    Value total = hlo::slice(b, cdf, {0, n - 1}, {rows, n});  // [rows, 1]
    Value u = next_uniform01(b, state, {rows, k}, st);
    Value t = hlo::mul(b, u, hlo::broadcast_to(b, total, {rows, k}));
    Type index_type{DType::I64, {rows, n}};
    Value positive_at = hlo::select(b, gt(b, w, 0), hlo::iota(b, index_type, 1), hlo::full(b, index_type, 0));
    Value last_positive = reduce::max(b, positive_at, {1});
    idx = hlo::min(b, count_at_most(b, cdf, t), hlo::broadcast_in_dim(b, last_positive, {rows, k}, {0}));
  }
  return {hlo::convert(b, hlo::reshape(b, idx, c.out().shape), c.out().dtype)};
}

}  // namespace

TPU_LOWERING("aten::multinomial", lower_multinomial, reads({"self", "num_samples", "replacement"}));

}  // namespace tpu::lowering
