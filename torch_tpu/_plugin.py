"""Which PJRT plugin serves the `tpu` device.

Order: an explicit path in TORCH_TPU_PJRT_PLUGIN; else libtpu when the `libtpu` package is
installed and a TPU is present; else the XLA:CPU plugin from the `xla-cpu-pjrt` wheel.
"""

import glob
import importlib.util
import os


def _package_dir(name):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _tpu_present():
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def find_plugin():
    """Returns (path, error): the plugin to load, or a message saying what to install."""
    explicit = os.environ.get("TORCH_TPU_PJRT_PLUGIN")
    if explicit:
        if not os.path.isfile(explicit):
            return "", f"torch_tpu: TORCH_TPU_PJRT_PLUGIN={explicit!r} is not a file"
        return explicit, ""
    libtpu = _package_dir("libtpu")
    if libtpu and _tpu_present():
        path = os.path.join(libtpu, "libtpu.so")
        if os.path.isfile(path):
            return path, ""
    cpu = _package_dir("xla_plugins.xla_cpu_pjrt")
    if cpu:
        path = os.path.join(cpu, "xla_cpu_pjrt.so")
        if os.path.isfile(path):
            return path, ""
    return "", (
        "torch_tpu: no PJRT plugin found. Install the XLA:CPU plugin with "
        "`pip install xla-cpu-pjrt==0.0.1`, install `libtpu` on a TPU host, or set "
        "TORCH_TPU_PJRT_PLUGIN to the path of a PJRT plugin .so"
    )


def is_host_memory(path):
    """Whether the plugin's device memory is this process's memory (XLA:CPU)."""
    return "xla_cpu_pjrt" in os.path.basename(path)


def create_options(path):
    """Client create options for the chosen plugin."""
    if is_host_memory(path):
        return {"cpu_device_count": int(os.environ.get("TORCH_TPU_CPU_DEVICE_COUNT", "1"))}
    return {}
