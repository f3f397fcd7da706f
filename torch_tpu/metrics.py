"""Counters of what ran, compiled, hit the compile cache, moved between host and device, and
fell back to the CPU."""

from torch_tpu import _C


def counters():
    """All counters as a dict (compile_seconds is a float)."""
    out = dict(_C._metrics())
    return {k: (v if k == "compile_seconds" else int(v)) for k, v in out.items()}


def fallback_counts():
    """{op name: number of calls} that ran through the CPU fallback."""
    return dict(_C._fallback_counts())


def cache_info():
    """In-memory compile cache: size, capacity and per-entry op, compile seconds and uses."""
    return _C._cache_info()


def reset():
    _C._reset_metrics()


def report():
    c = counters()
    lines = ["torch_tpu metrics"]
    for k in sorted(c):
        v = c[k]
        lines.append(f"  {k:<18} {v:.3f}" if isinstance(v, float) else f"  {k:<18} {v}")
    fb = fallback_counts()
    if fb:
        lines.append("  cpu fallbacks:")
        for op, n in sorted(fb.items()):
            lines.append(f"    {op}: {n}")
    info = cache_info()
    lines.append(f"  compile cache      {info['size']} entries (capacity {info['capacity']})")
    return "\n".join(lines)
