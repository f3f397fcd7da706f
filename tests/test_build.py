"""The CMake build (CMakeLists.txt) as installed by scripts/install.sh: the C++ unit tests of the
torch-free core pass under ctest, both binaries bind every lowering written in the sources, only
the hlo:: emitters spell StableHLO op names, and the installed build is current (the test
command never needs to rebuild)."""

import filecmp
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from torch_tpu import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# pyproject.toml: build-dir = "build/{cache_tag}"
BUILD_DIR = os.path.join(ROOT, "build", sys.implementation.cache_tag)


@pytest.fixture(scope="module")
def build_dir():
    if not os.path.isfile(os.path.join(BUILD_DIR, "CMakeCache.txt")):
        pytest.fail(f"no CMake build tree at {BUILD_DIR}: run `bash scripts/install.sh` first")
    return BUILD_DIR


def lowering_names_in_sources():
    """Every TPU_LOWERING("aten::...") registration that starts a line in csrc/lowering."""
    pattern = re.compile(r'^\s*TPU_LOWERING\("([^"]+)"', re.MULTILINE)
    folder = os.path.join(ROOT, "csrc", "lowering")
    names = set()
    for path in glob.glob(os.path.join(folder, "**", "*.cpp"), recursive=True):
        with open(path) as f:
            names.update(pattern.findall(f.read()))
    return names


# C++ string and character literals, comments and raw strings as whole tokens, so a `//` or a
# quote inside one does not start another.
_CPP_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?\*/"
    r'|(?<![A-Za-z0-9_])R"([^(\s]*)\(.*?\)\1"'
    r'|"(?:\\.|[^"\\\n])*"'
    r"|(?<![A-Za-z0-9_])'(?:\\.|[^'\\\n])+'",
    re.DOTALL,
)
# The files under csrc/lowering that emit StableHLO by op name: the hlo:: emitters and the
# collectives' own emitter layer. Everything else calls them.
EMITTER_FILES = {"core/hlo.cpp", "core/hlo_elementwise.cpp", "collectives/collectives.cpp"}


def stablehlo_op_strings(text):
    """(line, literal) for every string literal in C++ source `text` that starts with "stablehlo."."""
    found = []
    for m in _CPP_TOKEN.finditer(text):
        if m.group(0).startswith('"stablehlo.'):
            found.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return found


def test_cpp_unit_tests_pass_under_ctest(build_dir):
    proc = subprocess.run(
        ["ctest", "--test-dir", build_dir, "--output-on-failure"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "100% tests passed" in proc.stdout, proc.stdout


def test_extension_binds_every_lowering_in_the_sources():
    expected = lowering_names_in_sources()
    assert len(expected) > 500
    bound = set(_C._lowering_names())
    assert sorted(expected - bound) == []
    assert len(bound) == len(expected)


def test_every_lowering_matches_its_operator():
    """Every lowering names an operator of this torch and declares only arguments its schema has:
    otherwise it would be skipped at registration (a NotImplementedError when the op is used) or
    read the wrong argument."""
    assert _C._registration_problems() == []


def test_registration_rejects_misspelt_ops_and_argument_names():
    """The check registration makes, on a scratch registry: a misspelt op name, a misspelt
    overload and a wrong argument name (read or static) are each reported, and a debug build's
    import (strict) fails naming them."""
    scratch = [
        ("aten::add.Tensor", ["self", "other"], ["alpha"]),
        ("aten::addd.Tensor", ["self"], []),
        ("aten::add.Tensr", ["self"], []),
        ("aten::addmm", ["self", "mat1", "mat3"], []),
        ("aten::linalg_vector_norm", ["self", "dim"], ["order"]),
    ]
    problems = _C._check_scratch_registry(scratch)
    assert [p.split(" in ")[0] for p in problems] == [
        "aten::add.Tensr: names no operator of this torch",
        "aten::addd.Tensor: names no operator of this torch",
        "aten::addmm: no argument 'mat3'",
        "aten::linalg_vector_norm: no argument 'order'",
    ]
    assert "addmm(Tensor self, Tensor mat1, Tensor mat2" in problems[2]
    with pytest.raises(RuntimeError, match="do not match this torch's operators: aten::add.Tensr"):
        _C._check_scratch_registry(scratch, strict=True)
    assert _C._check_scratch_registry(scratch[:1], strict=True) == []


def test_only_the_emitters_spell_stablehlo_op_names():
    """Lowerings emit StableHLO through the hlo:: emitters (lowering/core/hlo.h), which infer
    result types and check operand types; an op name string outside them would bypass both.
    C++ tests (*_test.cpp) may name ops to inspect the text a program was emitted as."""
    folder = os.path.join(ROOT, "csrc", "lowering")
    offenders, in_emitters = [], 0
    for path in sorted(glob.glob(os.path.join(folder, "**", "*"), recursive=True)):
        rel = os.path.relpath(path, folder).replace(os.sep, "/")
        if not rel.endswith((".cpp", ".h")) or rel.endswith("_test.cpp"):
            continue
        with open(path) as f:
            found = stablehlo_op_strings(f.read())
        if rel in EMITTER_FILES:
            in_emitters += len(found)
        else:
            offenders += [f"csrc/lowering/{rel}:{line}: {literal}" for line, literal in found]
    assert offenders == [], "StableHLO op names outside the hlo:: emitters:\n" + "\n".join(
        offenders
    )
    assert in_emitters > 50  # the scan itself finds the emitters' op names


def test_op_string_scan_skips_comments():
    src = (
        'a(); // "stablehlo.add" in a comment\n'
        'b("x // y", "stablehlo.sub"); /* "stablehlo.z" */ c(\'"\', R"(")");\n'
        'd("stablehlo." + name);\n'
    )
    assert stablehlo_op_strings(src) == [(2, '"stablehlo.sub"'), (3, '"stablehlo."')]


def test_installed_build_is_current(build_dir):
    ninja = shutil.which("ninja")
    assert ninja, "ninja not found (scripts/install.sh installs it)"
    proc = subprocess.run(
        [ninja, "-C", build_dir, "-n"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no work to do" in proc.stdout, (
        "the C++ sources changed since the last install; rerun `bash scripts/install.sh`:\n"
        + proc.stdout
    )
    built = os.path.join(build_dir, os.path.basename(_C.__file__))
    assert filecmp.cmp(_C.__file__, built, shallow=False), (
        f"the loaded {_C.__file__} is not the build tree's {built}; rerun `bash scripts/install.sh`"
    )
