// Counter-based random numbers from the generator's (seed, offset) runtime state.
//
// Each call reserves (1 + result elements) counter values of the generator. Ops that draw more
// than that, or an unbounded number (rejection loops), draw from `private_state(state)` instead:
// a state whose key is derived from the call's (seed, offset), so its stream never overlaps
// another call's, however much the op draws. The `next_*` draws advance a state past what they
// drew (rng_bit_generator's output state), so successive draws from one state are independent;
// inside a loop the state is part of the loop-carried values.
#pragma once
#include "ir/builder.h"

namespace tpu::lowering {

// Uniform values in [0, 1) of `shape`, in f32 (or f64 when `dtype` is F64).
ir::Value uniform01(ir::Builder& b, const ir::Value& state, const ir::Shape& shape, ir::DType dtype);
// Raw random unsigned 64-bit integers of `shape`.
ir::Value random_u64(ir::Builder& b, const ir::Value& state, const ir::Shape& shape);
// Standard normal values of `shape` (Box-Muller, from the op's private_state), in f32 or f64.
ir::Value standard_normal(ir::Builder& b, const ir::Value& state, const ir::Shape& shape, ir::DType dtype);

// A fresh ui64[2] state (derived key, counter 0) for an op's own stream.
ir::Value private_state(ir::Builder& b, const ir::Value& state);
// Draws that advance `state`: [0, 1), the open interval (0, 1) (finite logs, never 0 or 1, as
// inverse-CDF samplers need) and standard normals, in f32 or f64.
ir::Value next_uniform01(ir::Builder& b, ir::Value& state, const ir::Shape& shape, ir::DType dtype);
ir::Value next_uniform_open(ir::Builder& b, ir::Value& state, const ir::Shape& shape, ir::DType dtype);
ir::Value next_normal(ir::Builder& b, ir::Value& state, const ir::Shape& shape, ir::DType dtype);

}  // namespace tpu::lowering
