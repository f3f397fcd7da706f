"""The persistent compile cache: a warm cache compiles nothing in a new process; damaged entries
and leftover temp files are never used; LRU eviction, disabling and concurrent processes; trust
(directories and entries of other owners or writable by others are not used); XLA_FLAGS in the
cache identity, and a clear error for an XLA_FLAGS the plugin rejects.

Each test runs fresh processes against its own TORCH_TPU_CACHE_DIR (tmp_path)."""

import json
import os
import stat
import subprocess
import sys
import time

import pytest
import torch

import torch_tpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Simple ops whose results are checked across processes (several programs: zeros, fill_, arange,
# randn and the views read by .cpu()).
WORKLOAD = """
torch.tpu.manual_seed(0)
x = torch.zeros(4, 3, device="tpu")
x.fill_(2.0)
a = torch.arange(10, device="tpu")
r = torch.randn(6, device="tpu")
out = {"x": x.cpu().tolist(), "a": a.cpu().tolist(), "r": r.cpu().tolist()}
"""

SCRIPT = """
import json, torch, torch_tpu
torch_tpu.metrics.reset()
out = None
{body}
torch_tpu.sync()
print("RESULT " + json.dumps({{"out": out, "counters": torch_tpu.metrics.counters(),
                              "info": torch_tpu.cache.info()}}))
"""


def _env(cache_dir, **extra):
    env = dict(os.environ)
    for k in (
        "TORCH_TPU_CACHE_DIR",
        "TORCH_TPU_DISK_CACHE",
        "TORCH_TPU_CACHE_MAX_BYTES",
        "XLA_FLAGS",
        "LIBTPU_INIT_ARGS",
        "TORCH_TPU_VERBOSE_PLUGIN",
    ):
        env.pop(k, None)
    # Single-op programs: strict mode, whatever the outer environment asks for.
    env.pop("TORCH_TPU_LAUNCH_BLOCKING", None)
    env["TORCH_TPU_EAGER_MODE"] = "strict"
    if cache_dir is not None:
        env["TORCH_TPU_CACHE_DIR"] = str(cache_dir)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _command(body):
    return [sys.executable, "-c", SCRIPT.format(body=body)]


def _parse(proc_stdout, proc_stderr):
    for line in proc_stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise AssertionError(f"no result; stdout:\n{proc_stdout}\nstderr:\n{proc_stderr}")


def python(code, cache_dir, **env):
    """Runs Python `code` in a fresh process against `cache_dir`; returns the finished process."""
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=ROOT,
        env=_env(cache_dir, **env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def run(cache_dir, body=WORKLOAD, **env):
    """Runs `body` in a fresh process; returns (result dict, stderr)."""
    p = python(SCRIPT.format(body=body), cache_dir, **env)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    result = _parse(p.stdout, p.stderr)
    return result, p.stderr


def entries(cache_dir):
    if not os.path.isdir(cache_dir):
        return []
    return sorted(os.path.join(cache_dir, n) for n in os.listdir(cache_dir) if n.endswith(".tpuc"))


def temp_files(cache_dir):
    return sorted(n for n in os.listdir(cache_dir) if n.startswith(".tmp-"))


def test_second_process_with_warm_cache_compiles_nothing(tmp_path):
    cold, _ = run(tmp_path)
    c = cold["counters"]
    assert c["compiles"] > 0 and c["disk_hits"] == 0
    assert c["disk_writes"] == c["compiles"] == c["disk_misses"]
    assert len(entries(tmp_path)) == c["compiles"]
    assert cold["info"]["enabled"] and cold["info"]["directory"] == str(tmp_path)
    assert cold["out"]["x"] == [[2.0] * 3] * 4 and cold["out"]["a"] == list(range(10))

    warm, _ = run(tmp_path)
    c = warm["counters"]
    assert c["compiles"] == 0, c
    assert c["disk_hits"] == cold["counters"]["compiles"] and c["disk_misses"] == 0
    assert c["disk_writes"] == 0 and c["disk_errors"] == 0
    assert warm["out"] == cold["out"]


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_entries_are_warned_about_recompiled_and_rewritten(tmp_path, damage):
    cold, _ = run(tmp_path)
    files = entries(tmp_path)
    assert files
    for f in files:
        data = bytearray(open(f, "rb").read())
        if damage == "flip":
            mid = len(data) // 2
            for i in range(mid, mid + 8):
                data[i] ^= 0xFF
        else:
            data = data[: len(data) // 2]
        with open(f, "wb") as fh:
            fh.write(data)

    again, stderr = run(tmp_path)
    c = again["counters"]
    assert c["disk_errors"] == len(files), (c, stderr)
    assert c["compiles"] == len(files) and c["disk_hits"] == 0 and c["disk_writes"] == len(files)
    assert stderr.count("RuntimeWarning") >= len(files)
    assert stderr.count("damaged compile cache entry") == len(files), stderr
    assert ("checksum mismatch" if damage == "flip" else "truncated") in stderr
    assert again["out"] == cold["out"]

    # Rewritten: a third process loads everything again.
    third, stderr = run(tmp_path)
    assert third["counters"]["compiles"] == 0 and third["counters"]["disk_errors"] == 0
    assert "damaged" not in stderr
    assert third["out"] == cold["out"]


def test_leftover_temp_files_are_never_accepted(tmp_path):
    cold, _ = run(tmp_path)
    files = entries(tmp_path)
    # What a writer killed before its rename leaves behind: complete and partial temp files,
    # and no entry.
    for k, f in enumerate(files):
        data = open(f, "rb").read()
        os.unlink(f)
        with open(tmp_path / f".tmp-99999-{k}-0", "wb") as fh:
            fh.write(data if k % 2 == 0 else data[: len(data) // 3])

    again, stderr = run(tmp_path)
    c = again["counters"]
    assert c["compiles"] == len(files) and c["disk_hits"] == 0 and c["disk_errors"] == 0
    assert "damaged" not in stderr
    assert again["out"] == cold["out"]
    assert len(entries(tmp_path)) == len(files)
    # Fresh temp files are left alone (their writer may be alive); clear() removes them.
    assert len(temp_files(tmp_path)) == len(files)
    cleared, _ = run(tmp_path, body="out = torch_tpu.cache.clear()")
    assert cleared["out"] == 2 * len(files)
    assert os.listdir(tmp_path) == []


def _zeros_body(sizes):
    return f"out = [torch.zeros(n, device='tpu').cpu().tolist() for n in {sizes!r}]"


def _set_mtime(files, seconds_ago):
    t = time.time() - seconds_ago
    for f in files:
        os.utime(f, (t, t))


def test_size_limit_evicts_least_recently_used_entries(tmp_path):
    # A: used long ago, then again just now. B: used less long ago, never again. C: new.
    run(tmp_path, body=_zeros_body([101]))
    set_a = set(entries(tmp_path))
    run(tmp_path, body=_zeros_body([201, 202, 203, 204, 205]))
    set_b = set(entries(tmp_path)) - set_a
    assert set_a and len(set_b) >= 5
    _set_mtime(set_a, 3000)
    for k, f in enumerate(sorted(set_b)):
        _set_mtime([f], 2000 - k)  # distinct ages within B

    hit, _ = run(tmp_path, body=_zeros_body([101]))  # refreshes A
    assert hit["counters"]["compiles"] == 0 and hit["counters"]["disk_hits"] >= 1
    assert all(os.path.getmtime(f) > time.time() - 600 for f in set_a)

    size = lambda fs: sum(os.path.getsize(f) for f in fs)  # noqa: E731
    limit = size(set_a) + size(set_b)
    c_run, _ = run(tmp_path, body=_zeros_body([301]), TORCH_TPU_CACHE_MAX_BYTES=limit)
    assert c_run["info"]["max_bytes"] == limit
    left = set(entries(tmp_path))
    set_c = left - set_a - set_b
    assert set_c, "the new entry was written"
    assert set_a <= left, "the recently used entries stay"
    evicted = set_b - left
    assert evicted and c_run["counters"]["disk_evictions"] == len(evicted)
    # The oldest of B went first (sorted(set_b) is oldest first, see _set_mtime above).
    assert evicted == set(sorted(set_b)[: len(evicted)])
    assert size(left) <= limit


def test_disabling_reads_and_writes_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    empty, _ = run(None, TORCH_TPU_CACHE_DIR="", HOME=home, XDG_CACHE_HOME=tmp_path / "xdg")
    assert not empty["info"]["enabled"]
    assert empty["counters"]["compiles"] > 0
    assert empty["counters"]["disk_writes"] == empty["counters"]["disk_misses"] == 0
    assert list(home.iterdir()) == [] and not (tmp_path / "xdg").exists()

    off, _ = run(tmp_path / "c", TORCH_TPU_DISK_CACHE=0)
    assert not off["info"]["enabled"] and off["counters"]["disk_writes"] == 0
    assert not (tmp_path / "c").exists()

    # The default directory follows XDG_CACHE_HOME.
    xdg, _ = run(None, HOME=home, XDG_CACHE_HOME=tmp_path / "xdg")
    assert xdg["info"]["directory"] == str(tmp_path / "xdg" / "torch_tpu")
    assert entries(tmp_path / "xdg" / "torch_tpu")


def test_python_api_enable_disable_clear_info(tmp_path):
    before = torch_tpu.cache.info()
    try:
        torch_tpu.cache.enable(tmp_path / "api")
        info = torch_tpu.cache.info()
        assert (
            info["enabled"] and info["directory"] == str(tmp_path / "api") and info["entries"] == 0
        )
        torch_tpu.metrics.reset()
        torch.zeros(1237, device="tpu").cpu()  # a shape no other test uses: a memory miss
        c = torch_tpu.metrics.counters()
        assert c["disk_writes"] >= 1
        info = torch_tpu.cache.info()
        assert info["entries"] == c["disk_writes"] and info["total_bytes"] > 0
        torch_tpu.cache.set_max_bytes(1 << 40)
        assert torch_tpu.cache.info()["max_bytes"] == 1 << 40
        assert torch_tpu.cache.clear() == info["entries"]
        assert torch_tpu.cache.info()["entries"] == 0

        torch_tpu.cache.disable()
        assert not torch_tpu.cache.is_enabled() and torch_tpu.cache.directory() == ""
        torch_tpu.metrics.reset()
        torch.zeros(1238, device="tpu").cpu()
        c = torch_tpu.metrics.counters()
        assert c["compiles"] >= 1 and c["disk_writes"] == 0 and c["disk_misses"] == 0
        assert os.listdir(tmp_path / "api") == []
    finally:
        torch_tpu.cache.set_max_bytes(before["max_bytes"])
        if before["enabled"]:
            torch_tpu.cache.enable(before["directory"])
        else:
            torch_tpu.cache.disable()


def test_concurrent_processes_share_one_empty_directory(tmp_path):
    cache = tmp_path / "shared"
    procs = [
        subprocess.Popen(
            _command(WORKLOAD),
            cwd=ROOT,
            env=_env(cache),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert "damaged" not in err
        results.append(_parse(out, err))
    assert results[0]["out"] == results[1]["out"]
    for r in results:
        assert r["counters"]["disk_errors"] == 0
        assert (
            r["counters"]["compiles"] + r["counters"]["disk_hits"] == r["counters"]["cache_misses"]
        )
    assert temp_files(cache) == []
    warm, _ = run(cache)
    assert warm["counters"]["compiles"] == 0 and warm["out"] == results[0]["out"]


def test_entry_with_other_output_shapes_is_not_used(tmp_path):
    # arange(end) takes `end` as a runtime scalar, so its key does not say how long the result
    # is; the output plan stored with the entry does, and is checked against the meta kernels.
    first, _ = run(tmp_path, body="out = torch.arange(10, device='tpu').cpu().tolist()")
    assert first["out"] == list(range(10))
    second, _ = run(tmp_path, body="out = torch.arange(20, device='tpu').cpu().tolist()")
    assert second["out"] == list(range(20))
    assert second["counters"]["disk_hits"] == 0 and second["counters"]["compiles"] >= 1


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def _snapshot(directory):
    """Every file with its size, mtime, owner and mode: a read refreshes an entry's mtime, so an
    unchanged snapshot means nothing was loaded, written or removed."""
    out = []
    for name in sorted(os.listdir(directory)):
        st = os.lstat(os.path.join(directory, name))
        out.append((name, st.st_size, st.st_mtime_ns, st.st_uid, st.st_mode))
    return out


def test_new_cache_directory_is_private_and_its_entries_0600(tmp_path):
    cache = tmp_path / "made" / "cache"
    result, _ = run(cache)
    assert result["counters"]["disk_writes"] > 0
    assert _mode(tmp_path / "made") == 0o700 and _mode(cache) == 0o700
    files = entries(cache)
    assert len(files) == result["counters"]["disk_writes"]
    for f in files:
        assert _mode(f) == 0o600 and os.stat(f).st_uid == os.geteuid(), f
    assert sorted(os.listdir(cache)) == sorted(os.path.basename(f) for f in files)


def test_cache_directory_writable_by_others_is_not_used(tmp_path):
    cold, _ = run(tmp_path)
    n = cold["counters"]["compiles"]
    os.chmod(tmp_path, 0o777)
    before = _snapshot(tmp_path)

    again, stderr = run(tmp_path)
    c = again["counters"]
    # One warning naming the directory and the fix; nothing loaded, written or removed.
    assert stderr.count("RuntimeWarning") == 1, stderr
    assert (
        f"not using the compile cache directory {tmp_path}: it is writable by group or "
        "others (mode 0777)" in stderr
    )
    assert f"chmod 700 {tmp_path}" in stderr
    assert c["disk_hits"] == 0 and c["disk_writes"] == 0 and c["disk_misses"] == 0, c
    assert c["compiles"] == n and c["disk_errors"] == 1
    assert _snapshot(tmp_path) == before
    info = again["info"]
    assert not info["enabled"] and info["directory"] == str(tmp_path)
    assert f"chmod 700 {tmp_path}" in info["refused"] and info["entries"] == 0
    assert again["out"] == cold["out"]

    # Fixed as the warning says: used again.
    os.chmod(tmp_path, 0o700)
    fixed, stderr = run(tmp_path)
    assert fixed["counters"]["compiles"] == 0 and fixed["counters"]["disk_hits"] == n
    assert fixed["info"]["enabled"] and fixed["info"]["refused"] == ""
    assert "RuntimeWarning" not in stderr


@pytest.mark.parametrize("tamper", ["chown", "chmod"])
def test_entry_of_another_owner_or_writable_by_others_turns_the_directory_off(tmp_path, tamper):
    if tamper == "chown" and os.geteuid() != 0:
        pytest.skip("needs root to chown a file to another user")
    cold, _ = run(tmp_path)
    n = cold["counters"]["compiles"]
    files = entries(tmp_path)
    victim = files[len(files) // 2]
    if tamper == "chown":
        os.chown(victim, 65534, 65534)
        reason, fix = "is owned by uid 65534, not by this user", f"Remove {victim}"
    else:
        os.chmod(victim, 0o666)
        reason, fix = "is writable by group or others (mode 0666)", f"chmod 600 {victim}"
    before = _snapshot(tmp_path)

    again, stderr = run(tmp_path)
    c = again["counters"]
    # One warning naming the entry and the fix; nothing loaded from or written into the directory.
    assert stderr.count("RuntimeWarning") == 1, stderr
    assert (
        f"not using the compile cache directory {tmp_path}: its entry {victim} {reason}" in stderr
    )
    assert fix in stderr
    assert c["disk_hits"] == 0 and c["disk_writes"] == 0 and c["disk_misses"] == 0, c
    assert c["compiles"] == n and c["disk_errors"] == 1
    assert _snapshot(tmp_path) == before
    assert not again["info"]["enabled"] and fix in again["info"]["refused"]
    assert again["out"] == cold["out"]

    # Fixed as the warning says: used again.
    if tamper == "chown":
        os.remove(victim)
    else:
        os.chmod(victim, 0o600)
    fixed, stderr = run(tmp_path)
    assert "RuntimeWarning" not in stderr
    assert fixed["counters"]["disk_hits"] >= n - 1 and fixed["info"]["enabled"]


def test_xla_flags_are_part_of_the_cache_identity(tmp_path):
    # A real XLA:CPU flag at its default value: harmless, yet a different XLA_FLAGS.
    flags = "--xla_cpu_enable_fast_math=false"
    plain, _ = run(tmp_path)
    n = plain["counters"]["compiles"]
    assert n > 0

    first, _ = run(tmp_path, XLA_FLAGS=flags)
    assert first["counters"]["disk_hits"] == 0 and first["counters"]["compiles"] == n
    same, _ = run(tmp_path, XLA_FLAGS=flags)
    assert same["counters"]["compiles"] == 0 and same["counters"]["disk_hits"] == n
    other, _ = run(tmp_path, XLA_FLAGS=flags + " --xla_cpu_fast_math_honor_nans=true")
    assert other["counters"]["disk_hits"] == 0 and other["counters"]["compiles"] == n
    unset, _ = run(tmp_path)
    assert unset["counters"]["compiles"] == 0 and unset["counters"]["disk_hits"] == n
    assert len(entries(tmp_path)) == 3 * n
    assert plain["out"] == first["out"] == same["out"] == other["out"] == unset["out"]


def test_unknown_flag_in_xla_flags_raises_a_clear_error(tmp_path):
    # The plugin parses XLA_FLAGS as its client starts and _exit(1)s on an unknown flag, with its
    # start-up output muted: without the check this process would end silently.
    p = python(
        "import torch, torch_tpu\nprint('started', flush=True)\ntorch.ones(2, device='tpu') + 1",
        tmp_path,
        XLA_FLAGS="--xla_no_such_flag",
    )
    assert p.returncode == 1 and p.stdout == "started\n", (p.stdout, p.stderr)
    assert "Traceback" in p.stderr and "RuntimeError: torch_tpu: the PJRT plugin" in p.stderr
    assert 'rejects XLA_FLAGS="--xla_no_such_flag"' in p.stderr
    assert "unknown flag --xla_no_such_flag. Remove it from XLA_FLAGS" in p.stderr, p.stderr


CATCH_FLAG_ERROR = """
import json, torch, torch_tpu
errors = []
for _ in range(2):
    try:
        torch.ones(2, device="tpu") + 1
    except RuntimeError as e:
        errors.append(str(e))
print("RESULT " + json.dumps(errors))
"""


@pytest.mark.parametrize(
    "flags, expected",
    [
        (
            "--xla_cpu_enable_fast_math=false --xla_no_such_flag --xla_nor_this=1",
            [
                "unknown flags --xla_no_such_flag --xla_nor_this=1. Remove them from XLA_FLAGS",
                "Unknown flags in XLA_FLAGS: --xla_no_such_flag --xla_nor_this=1",
            ],
        ),
        (
            "--xla_cpu_enable_fast_math=maybe",
            [
                "Correct XLA_FLAGS or unset it",
                "Couldn't interpret value maybe for flag xla_cpu_enable_fast_math",
            ],
        ),
    ],
    ids=["unknown", "bad_value"],
)
def test_rejected_xla_flags_raise_a_catchable_error_each_time(tmp_path, flags, expected):
    p = python(CATCH_FLAG_ERROR, tmp_path, XLA_FLAGS=flags)
    assert p.returncode == 0, p.stderr
    errors = _parse(p.stdout, p.stderr)
    assert len(errors) == 2 and errors[0] == errors[1]
    assert f'rejects XLA_FLAGS="{flags}"' in errors[0]
    for text in expected:
        assert text in errors[0], errors[0]
