"""The persistent compile cache: compiled programs kept on disk across processes.

On by default, under ``$TORCH_TPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/torch_tpu``, else
``~/.cache/torch_tpu``. ``TORCH_TPU_CACHE_DIR=`` (empty) or ``TORCH_TPU_DISK_CACHE=0`` turn it
off; ``TORCH_TPU_CACHE_MAX_BYTES`` bounds its size (default 2 GiB; ``512M`` and ``2G`` work),
least recently used entries going first.

A program found in memory runs at once; else one found here is loaded instead of compiled
(``torch_tpu.metrics.counters()["disk_hits"]``); else it is compiled and written here. Entries
are keyed by the op's compact cache key plus the PJRT plugin (platform, version, attributes,
library file), the device kind and count, ``XLA_FLAGS`` and ``LIBTPU_INIT_ARGS`` (they change
what the plugin compiles), this build of torch_tpu and the torch version. Writes are atomic and
entries are checksummed: a damaged entry is discarded with a ``RuntimeWarning`` and recompiled,
and any number of processes of the same user may share the directory.

The entries are machine code that this process runs, so the cache trusts only its user, as ssh
does with its key files: the directory is created with mode 0700 and entries with 0600. A cache
directory, or an entry in it, owned by another user or writable by group or others is not used:
one ``RuntimeWarning`` names it and the fix (``chmod 700 DIR``, or another ``TORCH_TPU_CACHE_DIR``),
and nothing is read from or written into it for the rest of the process, unless :func:`enable`
is called again. :func:`info` then shows ``enabled`` False, the ``directory`` and, in
``refused``, that warning (``refused`` is ``""`` otherwise). Each refusal counts in
``disk_errors``.
"""

import importlib.metadata

import torch

from torch_tpu import _C

__all__ = ["info", "enable", "disable", "is_enabled", "clear", "directory", "set_max_bytes"]


def info():
    """{'enabled', 'directory', 'refused', 'max_bytes', 'entries', 'total_bytes'} of the disk
    cache. Checks the directory if the cache has not used it yet, so a refused directory shows
    here: ``enabled`` False and ``refused`` the reason (its warning); ``""`` when not refused."""
    return dict(_C._disk_cache_info())


def is_enabled():
    return bool(_C._disk_cache_info()["enabled"])


def directory():
    """The cache directory ('' when disabled; the refused directory when refused)."""
    return _C._disk_cache_info()["directory"]


def enable(directory=None):
    """Turns the cache on, in `directory` (default: TORCH_TPU_CACHE_DIR or the user cache
    directory). Created (mode 0700) on the first write; checked on first use, also when it was
    refused before."""
    path = str(directory) if directory is not None else _C._disk_cache_default_directory()
    if not path:
        raise RuntimeError(
            "torch_tpu.cache.enable: no cache directory (set TORCH_TPU_CACHE_DIR or HOME)"
        )
    _C._disk_cache_set_directory(path)


def disable():
    """Turns the cache off for this process (nothing is read or written; files stay)."""
    _C._disk_cache_set_directory("")


def clear():
    """Removes every entry (and leftover temp file) of the current directory; returns how many
    files were removed (none from a refused directory). The in-memory cache is unaffected."""
    return int(_C._disk_cache_clear())


def set_max_bytes(n):
    """Size limit in bytes; least recently used entries are evicted on the next write."""
    _C._disk_cache_set_max_bytes(int(n))


def _version():
    try:
        return importlib.metadata.version("torch_tpu")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# Parts of the entry key only Python knows: the meta kernels that plan outputs are torch's.
_C._disk_cache_set_identity_extra(f"torch={torch.__version__};torch_tpu={_version()}")
_C._disk_cache_route_warnings_to_python()
