"""The fast, fixed subset of the OpInfo conformance sweep that CI runs (the full sweep is
`python tools/op_coverage.py --modes strict,fused`, about 26 minutes).

Each entry below runs through the same harness as the sweep (tests/op_conformance.py) in float32
forward, backward and out=, in strict and fused mode, and must reproduce what
docs/op_coverage.json records for it: every part recorded `native` is still native (values
equal CPU's, zero CPU fallbacks). The entries span the op families the coverage targets name."""

import json
import os

import pytest
import torch
from device_results import device_results
from op_conformance import check_entry, entries
from tie_order import tie_invariant

RESULTS = os.path.join(os.path.dirname(__file__), "..", "docs", "op_coverage.json")

SUBSET = [
    # elementwise math, special functions, comparisons
    "add",
    "mul",
    "div.floor_rounding",
    "pow",
    "exp",
    "log1p",
    "sin",
    "erfinv",
    "sigmoid",
    "where",
    "clamp",
    "eq",
    "isnan",
    # reductions and scans
    "sum",
    "mean",
    "amax",
    "var",
    "nansum",
    "cumsum",
    "logcumsumexp",
    "median",
    "kthvalue",
    # shape, indexing, scatter
    "cat",
    "permute",
    "index_add",
    "index_reduce.amax",
    "scatter_reduce.sum",
    "take",
    "gather",
    "masked_select",
    "searchsorted",
    "histc",
    "histogram",
    "sort",
    # nn
    "nn.functional.conv2d",
    "nn.functional.max_pool2d",
    "nn.functional.layer_norm",
    "nn.functional.cross_entropy",
    "nn.functional.batch_norm",
    "nn.functional.gelu",
    "softmax",
    "native_batch_norm",
    "nn.functional.embedding_bag",
    # matrix products and norms
    "matmul",
    "baddbmm",
    "linalg.vector_norm",
    "linalg.cross",
    "trace",
    "einsum",
    "linalg.lstsq",
    # creation
    "arange",
    "linspace",
    "logspace",
]


def _recorded():
    with open(RESULTS) as f:
        return json.load(f)["entries"]


RECORDED = _recorded()
OPS = {
    e.name + (f".{e.variant_test_name}" if e.variant_test_name else ""): e
    for e in entries(set(SUBSET))
}


def test_subset_entries_exist_and_are_recorded():
    assert set(SUBSET) <= set(OPS), sorted(set(SUBSET) - set(OPS))
    assert set(SUBSET) <= set(RECORDED), sorted(set(SUBSET) - set(RECORDED))


@pytest.mark.parametrize("entry", SUBSET)
def test_entry_matches_the_coverage_doc(entry):
    result = check_entry(
        OPS[entry], dtypes=(torch.float32,), modes=("strict", "fused"), max_samples=4
    )
    recorded = RECORDED[entry]["results"]
    claimed = 0
    for mode in ("strict", "fused"):
        for part, rec in recorded.get(mode, {}).get("f32", {}).items():
            if rec["status"] != "native":
                continue
            claimed += 1
            got = result["results"][mode]["f32"][part]
            assert got["status"] == "native", (mode, part, got)
    assert claimed, f"{entry}: the coverage doc records no native float32 part"


def _sort_sample(x, **kwargs):
    from torch.testing._internal.opinfo.core import SampleInput

    return SampleInput(x, kwargs=kwargs)


def test_tie_order_accepts_another_index_among_equal_values():
    x = torch.tensor([2, 1, 2, 1])
    values, cpu_idx = torch.sort(x)
    swapped = torch.tensor([3, 1, 2, 0])  # the tied 1s and 2s in the other order
    sample = _sort_sample(x)
    assert torch.equal(*[tie_invariant("sort", sample, [values, i])[1] for i in (cpu_idx, swapped)])


@pytest.mark.parametrize("bad", [[1, 1, 0, 2], [0, 1, 2, 3]])
def test_tie_order_rejects_an_index_that_is_not_a_valid_choice(bad):
    x = torch.tensor([2, 1, 2, 1])
    values, cpu_idx = torch.sort(x)
    sample = _sort_sample(x)
    with pytest.raises(AssertionError):  # not a permutation / names a 2 where CPU names a 1
        _, named = tie_invariant("sort", sample, [values, torch.tensor(bad)])
        torch.testing.assert_close(named, tie_invariant("sort", sample, [values, cpu_idx])[1])


def test_tie_order_keeps_stable_sort_indices_exact():
    assert tie_invariant("sort", _sort_sample(torch.tensor([1, 1]), stable=True), []) is None


def test_eval_batch_norm_statistics_are_checked_against_the_running_stats():
    from torch.testing._internal.opinfo.core import SampleInput

    x, mean, var = torch.randn(3, 2, 4), torch.randn(2), torch.rand(2) + 0.5
    sample = SampleInput(x, args=(None, None, mean, var, False, 0.1, 1e-5))
    out = torch.nn.functional.batch_norm(x, mean, var, eps=1e-5)
    stats = [mean, (var + 1e-5).rsqrt()]
    cpu = [out, torch.empty(0), torch.empty(0)]
    act, exp = device_results("native_batch_norm", sample, [out, *stats], cpu)
    assert len(act) == len(exp) == 1
    with pytest.raises(AssertionError):
        device_results("native_batch_norm", sample, [out, stats[0] + 1e-3, stats[1]], cpu)
    train = SampleInput(x, args=(None, None, mean, var, True, 0.1, 1e-5))
    act, exp = device_results("native_batch_norm", train, cpu, cpu)  # float32: nothing to change
    assert act == cpu and exp is cpu


def test_closer_to_float64_accepts_only_results_nearer_the_float64_value():
    from opinfo_check import _compare_closer_to_float64

    # CPU's bf16 nll_loss of input (2, 3, 2, 2): 0.0605 where float64 gives 0.05859.
    cpu, f64 = (
        torch.tensor([0.0605, 2.0], dtype=torch.bfloat16),
        torch.tensor([0.05859, 2.0], dtype=torch.float64),
    )
    _compare_closer_to_float64(
        torch.tensor([0.0586, 2.0], dtype=torch.bfloat16, device="tpu"), cpu, f64
    )
    _compare_closer_to_float64(cpu.to("tpu"), cpu, f64)  # equal to CPU's
    for wrong in ([0.0625, 2.0], [0.0586, 2.5]):  # further from float64, or off where CPU is exact
        with pytest.raises(AssertionError, match="further from float64"):
            _compare_closer_to_float64(
                torch.tensor(wrong, dtype=torch.bfloat16, device="tpu"), cpu, f64
            )


@pytest.mark.parametrize("entry", ["nn.functional.nll_loss", "nn.functional.conv_transpose2d"])
def test_bf16_entries_compared_by_closeness_to_float64_are_native(entry):
    (op,) = entries({entry})
    result = check_entry(op, dtypes=(torch.bfloat16,), modes=("strict",), max_samples=100)
    assert result["results"]["strict"]["bf16"]["forward"]["status"] == "native", result
