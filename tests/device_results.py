"""Results PyTorch defines differently on the CPU than on every other device.

native_batch_norm and _native_batch_norm_legit in eval mode: CPU returns empty save_mean and
save_invstd, other devices the running statistics they normalized with (PyTorch's own
decomposition, torch._decomp's native_batch_norm_helper, does the same; op_db marks both entries'
CPU comparison as an expected failure for that reason). For these samples the tpu's two
statistics are checked against the running statistics of the sample, and the normalized output
against CPU's as usual.

Saved statistics (mean, rstd / invstd) of layer and batch norm for a bf16/f16 input whose
parameters are not float: CPU returns them in the input's dtype, PyTorch's meta kernels (what
every other device and torch.compile's fake tensors follow) in float. The tpu keeps the meta
dtype; its values are compared after rounding to CPU's dtype.
"""

import torch

REDUCED = (torch.bfloat16, torch.float16)


def _eval_batch_norm_stats(sample):
    # (input, weight, bias, running_mean, running_var, training, momentum, eps)
    args = sample.args
    if len(args) < 6 or args[4] is None:
        return None
    running_mean, running_var, training, eps = args[2], args[3], args[4], args[6]
    if training:
        return None
    acc = torch.float32 if running_var.dtype in REDUCED else running_var.dtype
    return running_mean, (running_var.double() + eps).rsqrt().to(acc)


STATS = {
    "native_batch_norm": _eval_batch_norm_stats,
    "_native_batch_norm_legit": _eval_batch_norm_stats,
}

# Results that are saved statistics, by entry.
SAVED_STATS = {
    "native_layer_norm": (1, 2),
    "native_batch_norm": (1, 2),
    "_native_batch_norm_legit": (1, 2),
    "_batch_norm_with_update": (1, 2),
}


def _stats_in_meta_dtype(name, act_flat, exp_flat):
    act = list(act_flat)
    for k in SAVED_STATS.get(name, ()):
        if k < len(exp_flat) and exp_flat[k].dtype in REDUCED and act[k].dtype != exp_flat[k].dtype:
            assert act[k].dtype == torch.float32, (name, k, act[k].dtype)
            act[k] = act[k].to(exp_flat[k].dtype)
    return act


def device_results(name, sample, act_flat, exp_flat):
    """(actual, expected) to compare: the CPU-specific results checked here and left out, or
    None when the entry and sample have none."""
    if name not in STATS and name not in SAVED_STATS:
        return None
    stats = STATS.get(name)
    expected_stats = stats(sample) if stats else None
    if expected_stats is None:
        return _stats_in_meta_dtype(name, act_flat, exp_flat), exp_flat
    for got, want in zip(act_flat[1:3], expected_stats):
        torch.testing.assert_close(got.detach().cpu(), want.detach().to(got.dtype))
    return act_flat[:1], exp_flat[:1]
