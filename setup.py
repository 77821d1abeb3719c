"""The one build step pyproject.toml cannot declare: the kernels compiled ahead of time.

Installing the package, or building a wheel, runs ``python -m ecs_nav.compile.aot_build`` on the source
tree (numba and numpy come from ``[build-system] requires``) to write the library's parts, the
extension modules ``ecs_nav.aot_kernels_1``, ``_2``, ... (see ``ecs_nav/compile/aot.py``): into the
build folder, or for an editable install into the checkout's package folder, which it then uses.
The library is optional: where it does not build (no C compiler, a numba without its AOT
compiler), the install goes on with a warning and the kernels compile on first use. A part the
source tree already holds as this build would write it (same kernels, sources, numba, numpy and
CPU level) is copied, not compiled again. pip shows the build's progress only with ``-v``:
``make`` builds the parts as a step of its own before it installs the package.

``ECS_NAV_AOT`` in the environment of the build: ``0`` leaves the library out and removes the
parts the build folder (and an editable install's package folder) holds (a build in seconds, for
tests of the package's files); ``keep`` compiles and removes nothing (what ``make`` installs with,
having built the parts first: an editable install uses those its package folder holds, a wheel
gets none).
"""

import os
import re
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import ExecError

ROOT = Path(__file__).resolve().parent
AOT_LIBRARY = "ecs_nav.aot_kernels"
"""The extension setuptools is told of: it stands for every part (``aot_build`` writes them beside
where this one would go)."""


def library_files(folder: Path) -> list[Path]:
    """The library's files in ``folder``: its parts (``aot_kernels_<n>``) and the one module of an
    older layout (``aot_kernels``)."""
    return [path for suffix in EXTENSION_SUFFIXES for path in folder.glob(f"aot_kernels*{suffix}")
            if re.fullmatch(r"aot_kernels(_[1-9][0-9]*)?", path.name[: -len(suffix)])]


class BuildKernels(build_ext):
    """``build_ext`` that builds the kernel library with numba's AOT compiler."""

    def build_extension(self, ext: Extension) -> None:
        if ext.name != AOT_LIBRARY:
            super().build_extension(ext)
            return
        build_folder = Path(self.get_ext_fullpath(ext.name)).parent
        editable = self.inplace or getattr(self, "editable_mode", False)
        # an editable install imports the package from the checkout: its parts are built (or kept) there
        folder = ROOT / "ecs_nav" if editable else build_folder
        mode = os.environ.get("ECS_NAV_AOT", "").strip()
        if mode == "0":
            for path in library_files(build_folder) + library_files(folder):  # (an earlier build's, else packaged
                path.unlink(missing_ok=True)  # or used)
            print("ECS_NAV_AOT=0: the kernels are not compiled ahead of time; they compile on first use")
            return
        if mode == "keep":
            print("ECS_NAV_AOT=keep: the kernels compiled ahead of time are left as they are "
                  "(python -m ecs_nav.compile.aot_build builds them)")
            return
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        command = [sys.executable, "-m", "ecs_nav.compile.aot_build", str(folder)]
        if subprocess.run(command, cwd=ROOT, env=env).returncode:
            raise ExecError("the kernels were not compiled ahead of time (see above); they compile on first use")


setup(
    ext_modules=[Extension(AOT_LIBRARY, sources=[], optional=True)],
    cmdclass={"build_ext": BuildKernels},
)
