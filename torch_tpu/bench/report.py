"""The bench's figures from two measured runs of a variant, and its table, JSON and plot."""

import os
import platform

SKIP = 2  # steps left out of the steady state (compilation, allocator warm-up)


def machine():
    import torch

    return f"{os.cpu_count()} cores, {platform.machine()}, torch {torch.__version__}"


def summarize(cold, warm, flops, peak):
    """One variant's figures: cold start from `cold`, everything else from `warm`."""
    if "error" in cold or "error" in warm:
        return {"error": cold.get("error") or warm.get("error")}
    steady = warm["step_seconds"][SKIP:] or warm["step_seconds"][-1:]
    steps_per_second = len(steady) / sum(steady)
    return {
        "import_seconds": warm["import_seconds"],
        "setup_seconds": warm["setup_seconds"],
        "first_step_cold_seconds": cold["step_seconds"][0],
        "first_step_warm_seconds": warm["step_seconds"][0],
        "steps_per_second": steps_per_second,
        "items_per_second": steps_per_second * warm["items_per_step"],
        "unit": warm["unit"],
        "peak_memory_bytes": warm["peak_memory_bytes"],
        "mfu": flops * steps_per_second / peak if flops and peak else None,
        "compiles_cold": sum(cold["compiles"]),
        "compiles_warm": sum(warm["compiles"]),
        "loss_first": warm["losses"][0],
        "loss_last": warm["losses"][-1],
        "step_seconds_cold": cold["step_seconds"],
        "step_seconds_warm": warm["step_seconds"],
        "compiles_per_step_cold": cold["compiles"],
    }


def table(record):
    unit = next((v["unit"] for v in record["variants"].values() if "unit" in v), "items")
    lines = [
        f"## {record['model']} ({record['dtype']}, {record['steps']} steps, "
        f"{record['flops_per_step'] / 1e9:.2f} GFLOP per step)",
        f"{'variant':<13} {'import s':>8} {'setup s':>7} {'1st cold s':>10} {'1st warm s':>10} "
        f"{'steps/s':>8} {unit + '/s':>12} {'peak MiB':>9} {'MFU %':>6} {'loss first->last':>17}",
    ]
    for name, v in record["variants"].items():
        if "error" in v:
            lines.append(f"{name:<13} failed: {v['error'].splitlines()[-1]}")
            continue
        memory = (
            f"{v['peak_memory_bytes'] / 2**20:9.1f}"
            if v["peak_memory_bytes"] is not None
            else f"{'-':>9}"
        )
        mfu = f"{100 * v['mfu']:6.2f}" if v["mfu"] is not None else f"{'-':>6}"
        lines.append(
            f"{name:<13} {v['import_seconds']:8.2f} {v['setup_seconds']:7.2f} {v['first_step_cold_seconds']:10.2f} "
            f"{v['first_step_warm_seconds']:10.2f} {v['steps_per_second']:8.2f} {v['items_per_second']:12.0f} "
            f"{memory} {mfu} {v['loss_first']:8.4f}->{v['loss_last']:.4f}"
        )
    lines.append(f"MFU against {record['peak_flops'] / 1e9:.1f} GFLOP/s ({record['peak_source']})")
    return "\n".join(lines)


def plot(record, path):
    """Step time over steps per variant (cold run dashed, warm solid); steps that compiled a
    program are marked. Returns the path, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, v in record["variants"].items():
        if "error" in v:
            continue
        (line,) = ax.plot(v["step_seconds_warm"], label=f"{name} (warm)")
        ax.plot(
            v["step_seconds_cold"], "--", color=line.get_color(), alpha=0.6, label=f"{name} (cold)"
        )
        compiled = [i for i, n in enumerate(v["compiles_per_step_cold"]) if n]
        if "inductor" in name:
            compiled = [
                0
            ]  # inductor compiles in the first step; torch_tpu's counters do not see it
        ax.plot(
            compiled,
            [v["step_seconds_cold"][i] for i in compiled],
            "x",
            color=line.get_color(),
            markersize=9,
        )
    ax.set_yscale("log")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("step")
    ax.set_ylabel("seconds (log)")
    ax.set_title(f"{record['model']}: step time ({record['dtype']}); x = a step that compiled")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
