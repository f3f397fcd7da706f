"""Index results whose order among equal values PyTorch leaves to the implementation.

`sort(stable=False)`, `argsort`, `topk`, `kthvalue` and `mode` return indices; where the input
has equal values, which of the equal elements an index names is not part of the op's contract.
CPU uses an unstable sort and quickselect (`std::sort`, `std::nth_element`), tpu a stable sort,
so bf16/int64/bool samples, which are full of ties, pick different but equally valid indices.

For these entries an index result is compared through the values it names instead
(`input.gather(dim, index)`, equal on both sides iff each index names an element equal to CPU's
choice), and is checked to be valid on its own: a permutation for sort/argsort, distinct
indices for topk. Values results still compare exactly. Samples with `stable=True` compare the
indices themselves.
"""

import torch


def _dim_arg(args, kwargs, pos, default=-1):
    return args[pos] if len(args) > pos else kwargs.get("dim", default)


def _keepdim_arg(args, kwargs, pos):
    return args[pos] if len(args) > pos else kwargs.get("keepdim", False)


def _sort_layout(args, kwargs):
    if kwargs.get("stable", False):
        return None
    return _dim_arg(args, kwargs, 0), True, "permutation"


# entry name -> (sample args, kwargs) -> (dim, keepdim, check) of the index result, or None when
# the sample's index order is defined.
INDEX_LAYOUT = {
    "sort": _sort_layout,
    "argsort": _sort_layout,
    "topk": lambda a, k: (_dim_arg(a, k, 1), True, "distinct"),
    "kthvalue": lambda a, k: (_dim_arg(a, k, 1), _keepdim_arg(a, k, 2), None),
    "mode": lambda a, k: (_dim_arg(a, k, 0), _keepdim_arg(a, k, 1), None),
}


def _named_values(x, index, dim, keepdim):
    if x.dim() == 0:
        return x.expand(index.shape)
    idx = index if keepdim else index.unsqueeze(dim)
    got = x.gather(dim, idx)
    return got if keepdim else got.squeeze(dim)


def _check_valid(index, dim, size, check):
    if check is None or index.dim() == 0:
        return
    ordered = index.sort(dim).values
    if check == "permutation":
        shape = [1] * index.dim()
        shape[dim] = size
        expected = torch.arange(size).view(shape).expand_as(ordered)
        assert torch.equal(ordered, expected), "sort indices are not a permutation"
    else:
        assert bool((ordered.diff(dim=dim) != 0).all()), "topk indices repeat"


def tie_invariant(name, sample, results):
    """`results` (a flat list of the op's tensors, on either device) with the index result
    replaced by the input values it names; None for entries and samples where the
    indices themselves compare."""
    layout = INDEX_LAYOUT.get(name)
    spec = layout(sample.args, sample.kwargs) if layout else None
    if spec is None:
        return None
    dim, keepdim, check = spec
    # The index is the last result of each of these ops (argsort's only one).
    *values, index = results
    x = sample.input.detach()
    d = dim % max(x.dim(), 1)
    cpu_index = index.detach().cpu()
    _check_valid(cpu_index, d, x.shape[d] if x.dim() else 1, check)
    return [*values, _named_values(x, cpu_index, d, keepdim).to(index.device)]
