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


def program_times():
    """{program: {"executions", "launch_seconds", "device_seconds"}} for every program run: single
    ops by op name ("aten::mm"), fused and compiled graphs by size and fingerprint ("fused graph
    of 12 ops #3fa2c1"). Device seconds count executions whose outputs are ready."""
    return {
        name: {"executions": n, "launch_seconds": launch, "device_seconds": device}
        for name, (n, launch, device) in _C._program_times().items()
    }


def cache_info():
    """In-memory compile cache: size, capacity and per-entry op, compile seconds and uses."""
    return _C._cache_info()


def reset():
    _C._reset_metrics()


def report(top_programs=15):
    c = counters()
    lines = ["torch_tpu metrics"]
    for k in sorted(c):
        v = c[k]
        lines.append(f"  {k:<18} {v:.3f}" if isinstance(v, float) else f"  {k:<18} {v}")
    if c.get("padded_launches"):
        # Programs compiled for buckets (docs/dynamic_shapes.md): how much larger their results
        # are than the real ones.
        overhead = c["padded_elements"] / max(c["real_elements"], 1) - 1
        lines.append(f"  padding overhead   {overhead:.1%} of the real elements")
    fb = fallback_counts()
    if fb:
        lines.append("  cpu fallbacks:")
        for op, n in sorted(fb.items()):
            lines.append(f"    {op}: {n}")
    info = cache_info()
    lines.append(f"  compile cache      {info['size']} entries (capacity {info['capacity']})")
    times = program_times()
    if times:
        top = sorted(times.items(), key=lambda kv: -kv[1]["device_seconds"])[:top_programs]
        # Device times count the executions that have finished (all of them after a sync).
        lines.append(f"  execute time by program (top {len(top)} of {len(times)} by device time):")
        lines.append(f"    {'runs':>6} {'device s':>9} {'launch s':>9}  program")
        for name, t in top:
            lines.append(
                f"    {t['executions']:>6} {t['device_seconds']:9.4f} {t['launch_seconds']:9.4f}  {name}"
            )
    return "\n".join(lines)
