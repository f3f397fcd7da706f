"""`torch.tpu`: the device module, mirroring `torch.cuda`'s common surface."""

from collections import namedtuple

import torch

from torch_tpu import _C, amp
from torch_tpu.streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "synchronize",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "memory_allocated",
    "max_memory_allocated",
    "reset_peak_memory_stats",
    "memory_stats",
    "memory_summary",
    "memory_reserved",
    "max_memory_reserved",
    "mem_get_info",
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "is_bf16_supported",
    "default_generator",
    "device",
    "get_amp_supported_dtype",
    "amp",
    "is_initialized",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
    "Stream",
    "StreamContext",
    "Event",
    "_is_in_bad_fork",
]

_DeviceProperties = namedtuple(
    "_DeviceProperties",
    [
        "name",
        "platform_name",
        "platform_version",
        "pjrt_api_version",
        "device_kind",
        "plugin_path",
        "total_memory",
        "attributes",
    ],
)


def _index(device=None):
    if device is None:
        return _C._current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "tpu":
        raise ValueError(f"Expected a tpu device, but got: {device}")
    return _C._current_device() if device.index is None else device.index


def is_available():
    try:
        return _C._device_count() > 0
    except RuntimeError:
        return False


def is_initialized():
    return _C._is_initialized()


def device_count():
    try:
        return _C._device_count()
    except RuntimeError:
        return 0


def current_device():
    return _C._current_device()


def set_device(device):
    _C._set_device(_index(device))


class device:
    """Context manager that changes the current tpu device."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev = None

    def __enter__(self):
        self.prev = _C._current_device()
        _C._set_device(self.idx)

    def __exit__(self, *exc):
        _C._set_device(self.prev)
        return False


def synchronize(device=None):
    """Waits for all work launched on the tpu; raises the first execution error."""
    _C._synchronize()


def default_generator(device=None):
    return _C._default_generator(_index(device))


def manual_seed(seed):
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed):
    for i in range(device_count()):
        default_generator(i).manual_seed(int(seed))


def seed():
    return default_generator().seed()


def initial_seed():
    return default_generator().initial_seed()


def get_rng_state(device="tpu"):
    return default_generator(device).get_state()


def set_rng_state(new_state, device="tpu"):
    default_generator(device).set_state(new_state)


def memory_stats(device=None):
    """Bytes held by live tpu tensors' device buffers, as torch.cuda.memory_stats() names them.
    Nothing is cached (a buffer is freed when its last tensor goes), so reserved and active
    memory equal allocated memory."""
    s = _C._memory_stats()
    stats = {}
    for kind in ("allocated_bytes", "reserved_bytes", "active_bytes"):
        stats[f"{kind}.all.current"] = s["allocated_bytes"]
        stats[f"{kind}.all.peak"] = s["peak_bytes"]
    stats["allocation.all.current"] = s["num_allocs"] - s["num_frees"]
    stats["allocation.all.allocated"] = s["num_allocs"]
    stats["allocation.all.freed"] = s["num_frees"]
    stats["num_ooms"] = s["num_ooms"]
    return stats


def memory_summary(device=None, abbreviated=False):
    """A readable table of memory_stats(), like torch.cuda.memory_summary()."""

    def size(n):
        for unit in ("B", "KiB", "MiB", "GiB"):
            if abs(n) < 1024 or unit == "GiB":
                return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
            n /= 1024

    s = memory_stats(device)
    free, total = mem_get_info(device)
    rows = [
        (
            "Allocated memory",
            size(s["allocated_bytes.all.current"]),
            size(s["allocated_bytes.all.peak"]),
        ),
        (
            "Reserved memory",
            size(s["reserved_bytes.all.current"]),
            size(s["reserved_bytes.all.peak"]),
        ),
        ("Live buffers", str(s["allocation.all.current"]), ""),
        (
            "Buffers allocated / freed",
            f"{s['allocation.all.allocated']} / {s['allocation.all.freed']}",
            "",
        ),
        ("Out-of-memory errors", str(s["num_ooms"]), ""),
        ("Device free / total", f"{size(free)} / {size(total)}", ""),
    ]
    width = 75
    lines = ["=" * width, f" torch_tpu memory summary, device tpu:{_index(device)}", "-" * width]
    lines.append(f" {'Metric':<30}|{'Current':>20} |{'Peak':>20} ")
    lines.append("-" * width)
    lines += [f" {name:<30}|{cur:>20} |{peak:>20} " for name, cur, peak in rows]
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


def memory_reserved(device=None):
    return memory_allocated(device)


def max_memory_reserved(device=None):
    return max_memory_allocated(device)


def memory_allocated(device=None):
    return _C._memory_stats()["allocated_bytes"]


def max_memory_allocated(device=None):
    return _C._memory_stats()["peak_bytes"]


def reset_peak_memory_stats(device=None):
    _C._reset_peak_memory()


def mem_get_info(device=None):
    return (
        torch._C._accelerator_getMemoryInfo(_index(device))
        if hasattr(torch._C, "_accelerator_getMemoryInfo")
        else _host_mem_info()
    )


def _host_mem_info():
    import os

    pages = os.sysconf("SC_PHYS_PAGES")
    avail = os.sysconf("SC_AVPHYS_PAGES")
    size = os.sysconf("SC_PAGE_SIZE")
    return avail * size, pages * size


def empty_cache():
    """Buffers are freed as soon as no tensor references them; nothing is cached."""


def get_device_properties(device=None):
    info = _C._runtime_info()
    return _DeviceProperties(
        name=get_device_name(device),
        platform_name=info["platform_name"],
        platform_version=info["platform_version"],
        pjrt_api_version=info["pjrt_api_version"],
        device_kind=info["device_kind"],
        plugin_path=info["plugin_path"],
        total_memory=_host_mem_info()[1] if info["platform_name"] == "cpu" else 0,
        attributes=dict(info["attributes"]),
    )


def get_device_name(device=None):
    info = _C._runtime_info()
    return f"PJRT {info['platform_name']} ({info['device_kind']})"


def is_bf16_supported(including_emulation=True):
    return True


def get_amp_supported_dtype():
    return [torch.bfloat16, torch.float16]


def _is_in_bad_fork():
    return False
