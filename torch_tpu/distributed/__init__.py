"""torch.distributed on `tpu`: the `tpu_dist` process-group backend.

Importing torch_tpu registers `tpu_dist` as the c10d backend of the `tpu` device, so
`dist.init_process_group("tpu_dist")`, `init_process_group(device_id=torch.device("tpu", 0))`
and `"cpu:gloo,tpu:tpu_dist"` work under torchrun. Collectives are host-staged: tpu tensors are
copied to the host, exchanged by torch's own Gloo backend built from the same store, and copied
back (see docs/distributed.md).
"""

import collections

import torch.distributed as dist

from torch_tpu import _C

__all__ = ["BACKEND", "transport"]

BACKEND = "tpu_dist"


def transport():
    """How `tpu_dist` moves data between processes on this plugin: "host-staged" (device to host,
    Gloo, host to device). The XLA:CPU plugin ignores PJRT's cross-process key-value callbacks, so
    a program with collectives would compute only its local part there."""
    return "host-staged"


_groups_created = collections.Counter()


def _create_backend(options, backend_options):
    # Starts the runtime, as creating a NCCL group initializes CUDA: DeviceMesh (and other
    # launcher-aware code) then sees an initialized device and keeps index 0 instead of calling
    # set_device(LOCAL_RANK), which names a device this process does not have.
    _C._device_count()
    # The host transport gets its own key prefix in the group's store: its rendezvous keys never
    # collide with those of a CPU Gloo backend of the same group ("cpu:gloo,tpu:tpu_dist"), nor
    # with those of an earlier group of the same name (destroy_process_group, then
    # init_process_group: the launcher's store keeps the old keys, and Gloo would connect to the
    # addresses they name). Every member creates its groups in the same order, so the count agrees.
    _groups_created[options.group_id] += 1
    prefix = f"tpu_dist_host/{_groups_created[options.group_id]}/"
    store = dist.PrefixStore(prefix, options.store)
    host = dist.ProcessGroupGloo(store, options.group_rank, options.group_size, options.timeout)
    return _C._TpuDistBackend(host, options.group_rank, options.group_size)


def _register():
    if dist.is_available() and BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create_backend, extended_api=True, devices=["tpu"])


_register()
