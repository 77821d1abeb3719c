"""The one build step pyproject.toml cannot declare: the kernels compiled ahead of time.

Installing the package, or building a wheel, runs ``python -m ecs_nav.compile.aot_build`` on the source
tree (numba and numpy come from ``[build-system] requires``) to write the extension module
``ecs_nav.aot_kernels`` (see ``ecs_nav/compile/aot.py``). The extension is optional: where
it does not build (no C compiler, a numba without its AOT compiler), the install goes on with a
warning and the kernels compile on first use. Where the source tree already holds the library
this build would write (same sources, numba, numpy and CPU level), it is copied, not compiled
again (``--reuse``). ``ECS_NAV_AOT=0`` in the environment leaves it
out (a build in seconds, for tests of the package's files).
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import ExecError

ROOT = Path(__file__).resolve().parent
AOT_LIBRARY = "ecs_nav.aot_kernels"


class BuildKernels(build_ext):
    """``build_ext`` that builds the kernel library with numba's AOT compiler."""

    def build_extension(self, ext: Extension) -> None:
        if ext.name != AOT_LIBRARY:
            super().build_extension(ext)
            return
        built = Path(self.get_ext_fullpath(ext.name))
        if os.environ.get("ECS_NAV_AOT", "").strip() == "0":
            built.unlink(missing_ok=True)  # (an earlier build's would otherwise be packaged or copied back)
            if self.inplace or getattr(self, "editable_mode", False):  # (and one in the source tree used)
                (ROOT / "ecs_nav" / built.name).unlink(missing_ok=True)
            print("ECS_NAV_AOT=0: the kernels are not compiled ahead of time; they compile on first use")
            return
        folder = built.parent
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        command = [sys.executable, "-m", "ecs_nav.compile.aot_build", str(folder), "--reuse"]
        if subprocess.run(command, cwd=ROOT, env=env).returncode:
            raise ExecError("the kernels were not compiled ahead of time (see above); they compile on first use")


setup(
    ext_modules=[Extension(AOT_LIBRARY, sources=[], optional=True)],
    cmdclass={"build_ext": BuildKernels},
)
