"""torch_tpu: PyTorch's `tpu` device, executed through OpenXLA PJRT.

Importing this package (which `import torch` does through the `torch.backends` entry point)
registers PrivateUse1 as `tpu`, the `torch.tpu` module and the generated Tensor/Module methods.
The PJRT plugin is loaded on first use of the device.
"""

import contextlib
import os
import sys


def _autoload():
    """Entry point of the `torch.backends` group: importing the package is the whole job.

    Defined before `import torch`: when a script imports torch_tpu first, torch's autoload
    finds this (partially initialised) module and calls it; initialisation then continues here.
    """


import torch

torch.utils.rename_privateuse1_backend("tpu")

from torch_tpu import _C, _plugin

_path, _error = _plugin.find_plugin()
# Error locations name the innermost frame outside these packages.
_C._set_internal_source_dirs(
    [os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep]
)
_C._configure_runtime(
    _path, _plugin.create_options(_path) if _path else {}, _plugin.is_host_memory(_path), _error
)
_num_lowered_ops = _C._register()

from torch_tpu import cache, debug, distributed, dynamism, metrics, pallas
from torch_tpu import device as _device_module

torch._register_device_module("tpu", _device_module)
sys.modules["torch.tpu.amp"] = _device_module.amp  # `import torch.tpu.amp`, as torch.cuda.amp
_device_module.pallas = pallas
sys.modules["torch.tpu.pallas"] = pallas  # `torch.tpu.pallas.jax_op`, the reference backend's name
torch.utils.generate_methods_for_privateuse1_backend(
    for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
)

__all__ = [
    "metrics",
    "distributed",
    "debug",
    "dynamism",
    "pallas",
    "cache",
    "sync",
    "set_eager_mode",
    "get_eager_mode",
    "eager_mode",
    "cpu_fallback",
]


def sync():
    """Waits for all launched work (an explicit materialization point)."""
    _C._synchronize()


def set_eager_mode(mode):
    """'strict' (default: one executable per op, asynchronous), 'debug' (wait after every op so
    an execution error is raised by the op that caused it) or 'fused' (record ops, run them as one
    program where a value is needed)."""
    _C._set_mode(mode)


def get_eager_mode():
    return _C._get_mode()


@contextlib.contextmanager
def eager_mode(mode):
    previous = get_eager_mode()
    set_eager_mode(mode)
    try:
        yield
    finally:
        set_eager_mode(previous)


@contextlib.contextmanager
def cpu_fallback(enabled=True):
    """Runs ops without a tpu lowering on the CPU (warning once per op, counted in metrics)."""
    previous = _C._cpu_fallback_enabled()
    _C._set_cpu_fallback(enabled)
    try:
        yield
    finally:
        _C._set_cpu_fallback(previous)


def _apply_environment():
    mode = os.environ.get("TORCH_TPU_EAGER_MODE")
    if os.environ.get("TORCH_TPU_LAUNCH_BLOCKING", "0") not in ("", "0"):
        mode = "debug"
    if mode:
        set_eager_mode(mode)
    if os.environ.get("TORCH_TPU_FUSED_MAX_NODES"):
        _C._set_max_graph_nodes(int(os.environ["TORCH_TPU_FUSED_MAX_NODES"]))
    if os.environ.get("TORCH_TPU_CPU_FALLBACK", "0") not in ("", "0"):
        _C._set_cpu_fallback(True)


_apply_environment()
