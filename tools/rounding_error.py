"""How far tpu and CPU float32 results are from a float64 evaluation, per OpInfo sample.

The evidence behind each loosened tolerance in tests/op_conformance.py (LOOSENED): when the tpu
result is as close to float64 as CPU's own, a difference between the two is rounding, not a bug.

    python tools/rounding_error.py addbmm fft.hfft2          # forward results
    python tools/rounding_error.py --grad linalg.lstsq       # gradients (the harness's cotangent)
    python tools/rounding_error.py --dtype bf16 nll_loss     # bfloat16 samples and results
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from op_check import _flat_tensors  # noqa: E402
from op_conformance import entries, entry_id  # noqa: E402
from opinfo_check import _tpu_args  # noqa: E402

import torch_tpu  # noqa: E402,F401 - registers the tpu device


def _on(x, device, dtype, grad):
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.detach().to(device, dtype).requires_grad_(grad and x.requires_grad)
    if isinstance(x, torch.Tensor):
        return x.to(device)
    return x


def _results(op, sample, device, dtype, grad):
    args = [_on(a, "cpu", dtype, grad) for a in [sample.input, *sample.args]]
    kwargs = {k: _on(v, "cpu", dtype, grad) for k, v in sample.kwargs.items()}
    if device == "tpu":
        args = [
            a.to("tpu").requires_grad_(a.requires_grad)
            if isinstance(a, torch.Tensor) and a.is_floating_point()
            else a
            for a in _tpu_args(args, op.name)
        ]
        kwargs = {k: _on(v, "tpu", dtype, grad) for k, v in kwargs.items()}
    out = sample.output_process_fn_grad(op(*args, **kwargs))
    outs = [o for o in _flat_tensors(out) if o.is_floating_point()]
    if not grad:
        return outs
    diff = [o for o in outs if o.requires_grad and o.numel()]
    gen = torch.Generator().manual_seed(
        1234
    )  # the harness's cotangent (opinfo_check.check_backward)
    cots = [
        torch.randn(o.shape, generator=gen, dtype=torch.float64).to(dtype).to(o.device)
        for o in diff
    ]
    torch.autograd.backward(diff, cots)
    return [a.grad for a in _flat_tensors([args, list(kwargs.values())]) if a.grad is not None]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("entries", nargs="+")
    parser.add_argument("--grad", action="store_true", help="compare gradients instead of results")
    parser.add_argument(
        "--dtype",
        choices=["f32", "bf16"],
        default="f32",
        help="dtype of the samples and of the tpu and CPU evaluations",
    )
    args = parser.parse_args()
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    for op in entries(set(args.entries)):
        if entry_id(op) not in args.entries:
            continue
        for s in op.sample_inputs("cpu", dtype, requires_grad=args.grad):
            cpu, tpu, ref = (
                _results(op, s, d, t, args.grad)
                for d, t in (("cpu", dtype), ("tpu", dtype), ("cpu", torch.float64))
            )
            for c, t, r in zip(cpu, tpu, ref):
                if not r.numel():
                    continue
                c, t, r = c.detach().double(), t.detach().cpu().double(), r.detach()
                print(
                    f"{entry_id(op)} {tuple(r.shape)}: |cpu-f64| {(c - r).abs().max():.3g} "
                    f"|tpu-f64| {(t - r).abs().max():.3g} |tpu-cpu| {(t - c).abs().max():.3g} "
                    f"max|f64| {r.abs().max():.3g}"
                )


if __name__ == "__main__":
    main()
