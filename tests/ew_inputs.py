"""Inputs shared by the elementwise test files: seeded samples inside an op's domain and the
special floating-point values every kernel must treat like CPU."""

import math

import torch

NAN, INF = math.nan, math.inf
# NaN, infinities, signed zeros, huge and tiny magnitudes, halves (rounding ties), integers.
SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-30, -1e-30, 1e30, 3.0]


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def sample(shape, dtype, domain="real", seed=0):
    """Seeded random values inside the op's domain, as `dtype`.

    domain: "real" (-3, 3), "pos" (0.05, 5), "unit" (-0.95, 0.95), "ge1" [1, 10), "gtm1" (-0.95, 4)
    """
    g = gen(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        lo, hi = {
            "real": (-9, 10),
            "pos": (1, 10),
            "unit": (-1, 2),
            "ge1": (1, 10),
            "gtm1": (0, 10),
        }[domain]
        if dtype == torch.uint8:
            lo = max(lo, 0)
        return torch.randint(lo, hi, shape, generator=g, dtype=dtype)
    u = torch.rand(shape, generator=g, dtype=torch.float64)
    x = {
        "real": (u - 0.5) * 6,
        "pos": u * 5 + 0.05,
        "unit": (u - 0.5) * 1.9,
        "ge1": u * 9 + 1,
        "gtm1": u * 5 - 0.95,
    }[domain]
    return x.to(dtype)
