"""OpInfo conformance: PyTorch's `op_db` entries run on tpu against CPU, classified per entry.

For each entry and dtype (float32, bfloat16, int64, bool, where CPU supports it) its samples run
on tpu and on CPU (tests/opinfo_check.py compares values, dtypes, shapes and device); float32 also
checks gradients (entries that support autograd) and the out= variant (entries that support it).
Each part ends in one status:

  native    every sample passed with the CPU fallback off and the fallback counter unmoved
  fallback  fails natively, but passes with torch_tpu.cpu_fallback() (`fallback_ops` names the
            ATen ops that ran on the CPU)
  fails     first error, one line
  skipped   written reason (no CPU kernel for the dtype, nothing to differentiate, ...)

Used by tools/op_coverage.py (the sweep that writes docs/op_coverage.md) and by the fast CI
subset, tests/test_op_coverage.py, which checks that a fixed set of entries still reproduces the
document.
"""

import inspect
import re

import torch
from op_check import _flat_tensors
from opinfo_check import (
    CloserToFloat64,
    CpuReferenceError,
    RelToMax,
    check_backward,
    check_out,
    run_forward,
    spread,
)
from torch.testing._internal.common_methods_invocations import op_db

import torch_tpu

SWEEP_DTYPES = (torch.float32, torch.bfloat16, torch.int64, torch.bool)
DTYPE_NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.int64: "i64", torch.bool: "bool"}

# Tolerances. torch.testing.assert_close's per-dtype defaults (f32: atol 1e-5, rtol 1.3e-6; bf16:
# atol 1e-5, rtol 1.6e-2; integers and bools exact) unless the OpInfo entry itself declares a
# toleranceOverride for PyTorch's device-vs-CPU test (TestCommon.test_compare_cpu). Any further
# loosening goes into LOOSENED with the measured error and why it is inherent. Each one below was
# measured over all the entry's float32 samples against a float64 evaluation of the same op
# (CPU): the tpu result is as close to float64 as CPU's own, and the two float32 results differ
# only because they round differently (`python tools/rounding_error.py [--grad] ENTRY`).
LOOSENED = {
    # Sums of 30-50 products: |tpu - cpu| <= 6.1e-5 on outputs up to 367, with |tpu - f64| <=
    # 2.0e-5 and |cpu - f64| <= 5.4e-5. f32 summation order (XLA's dot vs MKL's gemm); small
    # outputs that cancel miss atol 1e-5.
    "addbmm": {torch.float32: (1e-4, 1.3e-6)},
    # The same f32 summation order difference, measured on an AMD EPYC host (earlier hosts were
    # within the defaults): |tpu - cpu| <= 3.1e-5 on outputs up to 312, with |tpu - f64| <=
    # 2.3e-5 and |cpu - f64| <= 3.2e-5.
    "matmul": {torch.float32: (5e-5, 1.3e-6)},
    # |tpu - cpu| <= 3.1e-5 on outputs up to 251, |tpu - f64| <= 2.3e-5 and |cpu - f64| <=
    # 2.2e-5: XLA's FFT and pocketfft factor the transform differently.
    "fft.hfft2": {torch.float32: (5e-5, 1.3e-6)},
    # CPU's float32 i1 is 2.1e-4 from float64 at 629 (about 5 ulp), the tpu's 2.7e-5; PyTorch's
    # own override (atol 1e-4, rtol 0) leaves no room for a result closer to the true value.
    "special.i1": {torch.float32: (1e-4, 1e-6)},
    # The backward formula cancels large terms: gradient differences |tpu - cpu| <= 6.9e-5 on
    # gradients up to 89, with |tpu - f64| <= 2.9e-5 and |cpu - f64| <= 4.4e-5.
    "linalg.lstsq": {torch.float32: (1e-4, 1.3e-6)},
    "linalg.lstsq.grad_oriented": {torch.float32: (1e-4, 1.3e-6)},
    # The gradient is exp(log_probs) minus a log-sum-exp over alpha * beta paths:
    # |tpu - cpu| <= 1.2e-5 on gradients up to 1.04, with |tpu - f64| <= 5.5e-5 and
    # |cpu - f64| <= 5.4e-5.
    "nn.functional.ctc_loss": {torch.float32: (2e-5, 1.3e-6)},
    # Outputs up to 890 that sum up to 8 x 27 products: |tpu - cpu| <= 1.8e-4, with |tpu - f64|
    # <= 1.4e-4 and |cpu - f64| <= 9.9e-5 (the one entry here where the tpu is somewhat further
    # from float64 than CPU: 1.6e-7 of the largest output, about 1.4 ulp, XLA's convolution
    # summing in another order). For bf16 see below.
    "nn.functional.conv_transpose3d": {
        torch.float32: (2e-4, 1.3e-6),
        torch.bfloat16: CloserToFloat64(),
    },
    # Entries up to 1.6e5 next to small ones: |cpu - f64| <= 0.055 (3.6e-7 of the largest
    # entry, about 3 ulp), |tpu - f64| <= 0.0043 (the tpu works in float64 and rounds once).
    "matrix_exp": {torch.float32: RelToMax(1e-6)},
    # bf16 entries whose CPU kernels accumulate in bf16 (nll_loss2d: an 8-level cascade of bf16
    # partial sums; conv_transpose's dilated and grouped samples: gemm + col2im in bf16) where the
    # tpu sums in float32 and rounds once. `python tools/rounding_error.py --dtype bf16 ENTRY`
    # over all samples: the tpu is never further from float64 than CPU (nll_loss: e.g. 0.0586 vs
    # CPU 0.0605 for float64 0.0586; conv_transpose2d max |tpu - f64| 0.246 vs |cpu - f64|
    # 0.562; conv_transpose3d 0.391 vs 0.75), so these compare by CloserToFloat64.
    "nn.functional.nll_loss": {torch.bfloat16: CloserToFloat64()},
    "nn.functional.conv_transpose2d": {torch.bfloat16: CloserToFloat64()},
}

# (entry, dtype) pairs whose CPU result is wrong, so that a comparison with it means nothing;
# each with the evidence.
CPU_WRONG = {
    (
        "matrix_exp",
        torch.bfloat16,
    ): "CPU's bf16 kernel returns NaN for every element of ordinary inputs "
    "(e.g. torch.linalg.matrix_exp(torch.randn(5, 5).bfloat16()))",
}


# Entries whose values cannot equal CPU's by design, each with the reason. The tpu generator is
# counter-based (as CUDA's Philox), so it draws a different stream from CPU's mt19937; the
# distributions are tested in tests/test_creation_random.py.
NOT_COMPARABLE = {
    "randn": "random values: the tpu generator's stream differs from CPU's",
    "randint": "random values: the tpu generator's stream differs from CPU's",
    "nn.functional.alpha_dropout": "random mask (PyTorch expects its CPU comparison to fail on cuda and xpu)",
}


def entry_id(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def entries(names=None):
    """op_db entries (all, or those whose id or name is in `names`), in op_db order."""
    out = []
    for op in op_db:
        if names is None or entry_id(op) in names or op.name in names:
            out.append(op)
    return out


def _decorator_reason(dec):
    """The reason of a unittest.skip(...) decorator, else None."""
    try:
        cv = inspect.getclosurevars(dec)
    except TypeError:
        return None
    reason = cv.nonlocals.get("reason")
    if isinstance(reason, str) and getattr(dec, "__qualname__", "").startswith("skip"):
        return reason
    return None


def _compare_cpu_infos(op, dtype):
    # op.decorators mixes DecorateInfo with bare decorators (precisionOverride, ...).
    for info in op.decorators or ():
        if hasattr(info, "is_active") and info.is_active(
            "TestCommon", "test_compare_cpu", "tpu", dtype, {}
        ):
            yield info


def pytorch_skip_reason(op, dtype):
    """PyTorch's own reason for not comparing this entry with CPU (random output, undefined
    results), taken from the entry's unittest.skip decorators on TestCommon.test_compare_cpu."""
    for info in _compare_cpu_infos(op, dtype):
        for dec in info.decorators:
            reason = _decorator_reason(dec)
            if reason:
                return reason
    return None


def tolerance(op, dtype):
    """(atol, rtol) or None (torch.testing defaults)."""
    if entry_id(op) in LOOSENED and dtype in LOOSENED[entry_id(op)]:
        return LOOSENED[entry_id(op)][dtype]
    for info in _compare_cpu_infos(op, dtype):
        for dec in info.decorators:
            d = getattr(dec, "d", None)
            if isinstance(d, dict) and dtype in d:
                return (d[dtype].atol, d[dtype].rtol)
    return None


def entry_skip_reason(op):
    """A reason to skip the whole entry, or None."""
    name = entry_id(op)
    if name in NOT_COMPARABLE:
        return NOT_COMPARABLE[name]
    if "sparse" in name:
        return "sparse layout (the tpu device has strided tensors only)"
    supported = op.supported_dtypes("cpu")
    if not any(d in supported for d in SWEEP_DTYPES):
        kinds = sorted({str(d).replace("torch.", "") for d in supported})
        return "CPU supports none of f32/bf16/i64/bool (" + (", ".join(kinds) or "no dtypes") + ")"
    reason = pytorch_skip_reason(op, torch.float32)
    if reason:
        return f"PyTorch skips its own CPU comparison: {reason}"
    return None


def _sample_skip(sample):
    """Samples with non-strided (sparse) tensors are out of scope."""
    for t in _flat_tensors([sample.input, list(sample.args), list(sample.kwargs.values())]):
        if t.layout != torch.strided:
            return "sparse sample"
    return None


def one_line(exc, limit=240):
    m = re.search(r"The operator '([^']+)' is not currently implemented for the tpu", str(exc))
    if m:
        return f"NotImplementedError: no tpu lowering for {m.group(1)}"
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    line = text[0] if text else type(exc).__name__
    # assert_close puts the numbers on later lines: keep the mismatch summary.
    extra = [ln.strip() for ln in text[1:] if ln.strip().startswith(("Mismatched", "Greatest"))]
    line = " ".join([line, *extra])
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _fallback_total():
    return sum(torch_tpu.metrics.fallback_counts().values())


def _run_part(part, op, samples, dtype, tol):
    """Runs one part (forward/backward/out) over the samples; raises at the first failure.
    Returns the number of samples that exercised the part."""
    n = 0
    for s in samples:
        if part == "forward":
            run_forward(op, s, tol=tol)
            n += 1
        elif part == "backward":
            fwd = run_forward(op, s, tol=tol)
            n += bool(check_backward(fwd, tol=tol))
        else:
            n += bool(check_out(op, s, tol=tol))
        torch.tpu.synchronize()
    return n


def _classify(part, op, samples, dtype, tol):
    """One part's result dict: status, and error / fallback_ops / samples."""
    before = dict(torch_tpu.metrics.fallback_counts())
    with torch_tpu.cpu_fallback(False):
        try:
            n = _run_part(part, op, samples, dtype, tol)
            moved = _fallback_total() - sum(before.values())
            if moved:
                return {
                    "status": "fails",
                    "error": f"fallback counter moved by {moved} with fallback off",
                }
            if n == 0:
                return {"status": "skipped", "reason": "no sample exercises it"}
            return {"status": "native", "samples": n}
        except CpuReferenceError as exc:
            return {"status": "skipped", "reason": f"the op raises on CPU: {one_line(exc)}"}
        except Exception as exc:  # noqa: BLE001 - any failure is this part's result
            native_error = one_line(exc)
            missing_lowering = isinstance(exc, NotImplementedError)
            try:
                torch.tpu.synchronize()
            except Exception:  # noqa: BLE001 - a deferred check of the failed op
                pass
    if not missing_lowering and "NotImplementedError" not in native_error:
        return {"status": "fails", "error": native_error}
    before = dict(torch_tpu.metrics.fallback_counts())
    with torch_tpu.cpu_fallback(True):
        try:
            n = _run_part(part, op, samples, dtype, tol)
        except Exception as exc2:  # noqa: BLE001
            return {"status": "fails", "error": native_error, "with_fallback": one_line(exc2)}
    after = torch_tpu.metrics.fallback_counts()
    ops = sorted(k for k in after if after[k] != before.get(k, 0))
    return {"status": "fallback", "fallback_ops": ops, "error": native_error, "samples": n}


def check_entry(
    op, dtypes=SWEEP_DTYPES, modes=("strict",), max_samples=8, parts=("forward", "backward", "out")
):
    """Runs one entry. Returns {"entry", "skip"?, "results": {mode: {dtype: {part: result}}}}."""
    result = {
        "entry": entry_id(op),
        "name": op.name,
        "variant": op.variant_test_name,
        "results": {},
    }
    reason = entry_skip_reason(op)
    if reason:
        result["skip"] = reason
        return result
    supported = op.supported_dtypes("cpu")
    for mode in modes:
        per_mode = result["results"].setdefault(mode, {})
        with torch_tpu.eager_mode(mode):
            for dtype in dtypes:
                dn = DTYPE_NAMES[dtype]
                if dtype not in supported:
                    per_mode[dn] = {
                        "forward": {"status": "skipped", "reason": "no CPU kernel for this dtype"}
                    }
                    continue
                reason = pytorch_skip_reason(op, dtype)
                if reason:
                    per_mode[dn] = {
                        "forward": {"status": "skipped", "reason": f"PyTorch: {reason}"}
                    }
                    continue
                if (entry_id(op), dtype) in CPU_WRONG:
                    per_mode[dn] = {
                        "forward": {"status": "skipped", "reason": CPU_WRONG[(entry_id(op), dtype)]}
                    }
                    continue
                per_mode[dn] = _check_dtype(op, dtype, max_samples, parts)
    return result


def _check_dtype(op, dtype, max_samples, parts):
    out = {}
    tol = tolerance(op, dtype)
    grad = dtype == torch.float32 and op.supports_autograd
    try:
        torch.manual_seed(0)
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad))
    except Exception as exc:  # noqa: BLE001
        return {
            "forward": {
                "status": "skipped",
                "reason": f"OpInfo samples raise on CPU: {one_line(exc)}",
            }
        }
    samples = spread([s for s in samples if not _sample_skip(s)], max_samples)
    if not samples:
        return {"forward": {"status": "skipped", "reason": "no samples"}}
    out["forward"] = _classify("forward", op, samples, dtype, tol)
    if dtype != torch.float32:
        return out
    if "backward" in parts:
        if not op.supports_autograd:
            out["backward"] = {"status": "skipped", "reason": "entry has no autograd"}
        elif out["forward"]["status"] == "fails":
            out["backward"] = {"status": "skipped", "reason": "forward fails"}
        else:
            out["backward"] = _classify("backward", op, samples, dtype, tol)
    if "out" in parts:
        if not op.supports_out:
            out["out"] = {"status": "skipped", "reason": "entry has no out= variant"}
        else:
            out["out"] = _classify("out", op, samples, dtype, tol)
    return out


def entry_class(record):
    """Overall class of an entry record: skipped / native / fallback / fails (worst part)."""
    if "skip" in record:
        return "skipped"
    statuses = [
        part["status"]
        for per_mode in record["results"].values()
        for per_dtype in per_mode.values()
        for part in per_dtype.values()
    ]
    if "fails" in statuses:
        return "fails"
    if "fallback" in statuses:
        return "fallback"
    if "native" in statuses:
        return "native"
    return "skipped"
