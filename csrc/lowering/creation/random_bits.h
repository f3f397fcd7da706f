// Counter-based random numbers from the generator's (seed, offset) runtime state.
//
// Each call reserves (1 + result elements) counter values of the generator. Ops that draw more
// than that, or an unbounded number (rejection loops), draw from `private_state(state)` instead:
// a state whose key is derived from the call's (seed, offset), so its stream never overlaps
// another call's, however much the op draws. The `next_*` draws advance a state past what they
// drew (rng_bit_generator's output state), so successive draws from one state are independent;
// inside a loop the state is part of the loop-carried values.
//
// Every draw takes the numbers of a flat draw of its element count, in row-major order, so a
// padded program (lowering/core/dynamic.h) gives each real element the number the unpadded
// program gives it: while a PaddedDraws is alive, a draw whose trailing dimensions are the
// padded result's takes element (i...) from the flat position of (i...) in the real extent.
#pragma once
#include "ir/builder.h"
#include "lowering/core/dynamic.h"

namespace tpu::lowering {

class PaddedDraws {
 public:
  PaddedDraws(const ir::Shape& bounds, const Dims& dims);
  ~PaddedDraws();
  PaddedDraws(const PaddedDraws&) = delete;
  PaddedDraws& operator=(const PaddedDraws&) = delete;

 private:
  const PaddedDraws* previous_;
  friend ir::Value padded_positions(ir::Builder& b, const ir::Shape& shape);

 public:
  const ir::Shape bounds;
  const Dims dims;
};

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
