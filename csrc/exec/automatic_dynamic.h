// Automatic dynamic dimensions (docs/dynamic_shapes.md), as Dynamo's automatic dynamic shapes:
// the first shape an op (or fused graph) runs with compiles exactly, with no padding; when the
// same op comes again with other sizes, the numbers that changed (sizes, strides, offsets) become
// symbols, runtime values, and the program is compiled for the buckets of its sizes, so every
// later size of a bucket reuses it. Storages written by such programs are padded (exec/storage.h),
// and their varying dimensions are symbols in every program that reads them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "exec/op_call.h"

namespace tpu::exec {

// The numbers of a call that may vary: per view its sizes, strides and offset, then per result
// type its sizes.
std::vector<int64_t> shape_slots(const OpCall& call, const OutputPlan& plan);
// Which of those sizes are equal to which, and which are 0 or 1 (Dynamo's duck sizing): part of
// the record key, so two calls at one line with other roles for their sizes (q @ k.T and
// attention @ v) are told apart, while the steps of a loop are not.
std::string size_pattern(const OpCall& call, const OutputPlan& plan);
// Records `slots` for calls with this shape-free key. The first `exact_values` distinct shapes
// compile exactly; from the next one on, returns which slots differ among them (a slot that
// varied stays dynamic). Empty while nothing varied.
std::vector<bool> varied_slots(const std::string& shape_free_key, const std::vector<int64_t>& slots,
                               size_t exact_values = 1);
void forget_varied_slots();

// The call's symbols: the slots of `varied` (sizes of 0 or 1 stay constant) and every dynamic
// dimension of a padded storage. Null when there are none.
std::shared_ptr<const DynamicSpec> dynamic_spec(const OpCall& call, const OutputPlan& plan,
                                                const std::vector<bool>& varied);
// `plan` at the bounds: what the bucketed program returns (its new outputs' sizes at their
// bounds too, so that every call it serves has the same plan).
// With !bound_new_outputs the new outputs keep their real sizes (the example sizes a fused graph's
// later nodes lay their views on).
OutputPlan bucketed_plan(const OutputPlan& plan, const DynamicSpec& spec, bool bound_new_outputs = true);
// The key of the program compiled for `call`'s buckets (call.dynamic set): equal for every call
// it serves.
std::string bucketed_key(const OpCall& call, const OutputPlan& plan);

// The layout of new output k after a bucketed run (null: flat).
PaddedFormPtr output_form(const OutputPlan& plan, const DynamicSpec& spec, size_t k);
// The layout of written storage s after the call ran (null: flat). A program at exact shapes
// leaves every storage it writes flat; a bucketed one keeps a padded storage padded, and pads a
// storage it writes whole with a dynamic value.
PaddedFormPtr written_form(const OpCall& call, const DynamicSpec* spec, int storage);
// Which dimensions of a dense tensor uploaded at `site` (the user's line) have varied between
// uploads there: recorded with its host copy. Uploads with no op between them (module.to's
// parameters, a batch's tensors) are told apart by their place in that run: a parameter's record
// sees one size, a batch's the length of each step.
std::vector<bool> varied_upload_dims(const std::string& site, ir::DType dtype,
                                     const std::vector<int64_t>& sizes);
// An op was dispatched: the next upload starts a new run.
void note_op_dispatched();
// Pads the flat input storages of `call` that still have their host copy with varied dimensions
// (a batch uploaded at each step with another length): uploaded again, padded along those
// dimensions (unless that pads too much, as too_much_padding), so the programs reading them are
// those of their bucket. Returns whether any storage changed (the call's key then changes too).
bool pad_uploads(const OpCall& call);
// The padded layout of a dense tensor of `sizes`/`strides` along its `varied` dimensions (those
// of at least 2), or null when none is, or when that pads too much (as too_much_padding).
PaddedFormPtr varied_form(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                          const std::vector<bool>& varied);
// The layout `bound` (or the bucket, when 0) along dimension `dim` of a dense tensor of `sizes`
// (torch_tpu.dynamism.mark_dynamic), keeping the dynamic dimensions of `current` (may be null).
PaddedFormPtr marked_form(const PaddedForm* current, const std::vector<int64_t>& sizes, int64_t dim,
                          int64_t bound);

// After a bucketed program failed to build for calls with this shape-free key (lowering::
// NotPaddable): they run at exact shapes from now on.
void mark_not_paddable(const std::string& shape_free_key);

}  // namespace tpu::exec
