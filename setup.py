"""Builds torch_tpu._C against the installed torch (no build isolation) and the PJRT header
shipped in the installed xla-cpu-pjrt wheel."""

import glob
import importlib.util
import os

# Building must not load an installed torch_tpu through torch's backend autoload: a stale or
# moved install (its entry point still registered) would make `import torch` fail here.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

from setuptools import setup  # noqa: E402
from torch.utils.cpp_extension import BuildExtension, CppExtension  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(__file__))


def pjrt_include_dir():
    spec = importlib.util.find_spec("xla_plugins.xla_cpu_pjrt")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "torch_tpu needs the PJRT C API header from the xla-cpu-pjrt wheel: "
            "pip install xla-cpu-pjrt==0.0.1"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], "include")


# ccache's masquerade directory keeps the compiler named g++ (ninja takes CXX as one word).
if os.path.exists("/usr/lib/ccache/g++") and "CXX" not in os.environ:
    os.environ["CXX"] = "/usr/lib/ccache/g++"
    os.environ.setdefault("CCACHE_BASEDIR", ROOT)

sources = sorted(
    os.path.relpath(p, ROOT)
    for p in glob.glob(os.path.join(ROOT, "csrc", "**", "*.cpp"), recursive=True)
    if not p.endswith("_test.cpp")
)

setup(
    ext_modules=[
        CppExtension(
            "torch_tpu._C",
            sources,
            include_dirs=[os.path.join(ROOT, "csrc"), pjrt_include_dir()],
            extra_compile_args=["-O2", "-Wno-unused-variable", "-Wno-sign-compare"],
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
