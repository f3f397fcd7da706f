// im2col (F.unfold) and col2im (F.fold) for 2-d images (N, C, H, W) or unbatched (C, H, W).
//
// im2col: the zero-padded image sliced once per kernel offset (ki, kj) with the stride, giving
// [N, C, kh*kw, oh*ow] -> [N, C*kh*kw, L] (PyTorch's column order: channel, then kernel row,
// then kernel column). col2im is its transpose: each offset's block dilated by the stride,
// zero-padded into place in the padded image, summed, then cropped.
#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Value;

struct Geometry {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

Geometry geometry(const Ctx& c) {
  const auto& k = c.ints("kernel_size");
  const auto& d = c.ints("dilation");
  const auto& p = c.ints("padding");
  const auto& s = c.ints("stride");
  return {k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1]};
}

// im2col(self, kernel_size, dilation, padding, stride)
std::vector<Value> lower_im2col(Ctx& c) {
  Builder& b = c.b;
  Value x = c.tensor("self");
  const bool batched = x.rank() == 4;
  if (!batched) x = hlo::reshape(b, x, {1, x.dim(0), x.dim(1), x.dim(2)});
  Geometry g = geometry(c);
  const int64_t n = x.dim(0), ch = x.dim(1);
  Value xp = hlo::pad(b, x, hlo::constant(b, x.dtype(), 0), {0, 0, g.ph, g.pw}, {0, 0, g.ph, g.pw});
  const int64_t oh = (xp.dim(2) - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  const int64_t ow = (xp.dim(3) - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  std::vector<Value> blocks;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      Value s = hlo::slice(b, xp, {0, 0, i * g.dh, j * g.dw},
                           {n, ch, i * g.dh + (oh - 1) * g.sh + 1, j * g.dw + (ow - 1) * g.sw + 1},
                           {1, 1, g.sh, g.sw});
      blocks.push_back(hlo::reshape(b, s, {n, ch, 1, oh * ow}));
    }
  Value cols = blocks.size() == 1 ? blocks[0] : hlo::concatenate(b, blocks, 2);
  return {hlo::reshape(b, cols, c.out().shape)};
}

// col2im(self, output_size, kernel_size, dilation, padding, stride)
std::vector<Value> lower_col2im(Ctx& c) {
  Builder& b = c.b;
  const DType out_dtype = c.out().dtype;
  Value cols = hlo::convert(b, c.tensor("self"), compute_dtype(out_dtype));
  if (cols.rank() == 2) cols = hlo::reshape(b, cols, {1, cols.dim(0), cols.dim(1)});
  const int64_t h = c.ints("output_size")[0], w = c.ints("output_size")[1];
  Geometry g = geometry(c);
  const int64_t n = cols.dim(0), ch = cols.dim(1) / (g.kh * g.kw);
  const int64_t hp = h + 2 * g.ph, wp = w + 2 * g.pw;
  const int64_t oh = (hp - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  const int64_t ow = (wp - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  Value blocks = hlo::reshape(b, cols, {n, ch, g.kh * g.kw, oh, ow});
  Value zero = hlo::constant(b, cols.dtype(), 0);
  Value img;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      int64_t k = i * g.kw + j;
      Value blk = hlo::reshape(b, hlo::slice_dim(b, blocks, 2, k, k + 1), {n, ch, oh, ow});
      int64_t lo_h = i * g.dh, lo_w = j * g.dw;
      int64_t hi_h = hp - lo_h - ((oh - 1) * g.sh + 1), hi_w = wp - lo_w - ((ow - 1) * g.sw + 1);
      Value placed =
          hlo::pad(b, blk, zero, {0, 0, lo_h, lo_w}, {0, 0, hi_h, hi_w}, {0, 0, g.sh - 1, g.sw - 1});
      img = k == 0 ? placed : hlo::add(b, img, placed);
    }
  img = hlo::slice(b, img, {0, 0, g.ph, g.pw}, {n, ch, g.ph + h, g.pw + w});
  return {hlo::reshape(b, hlo::convert(b, img, out_dtype), c.out().shape)};
}

}  // namespace

TPU_LOWERING("aten::im2col", lower_im2col, reads({"self", "kernel_size", "dilation", "padding", "stride"}));
TPU_LOWERING("aten::col2im", lower_col2im,
             reads({"self", "output_size", "kernel_size", "dilation", "padding", "stride"}));

}  // namespace tpu::lowering
