"""setup.py: builds the `flowloader` package with the repo's own Bazel build.

pip runs this through setuptools (pyproject.toml). The `build_py` step runs
`bazel build //python:flowloader` in this checkout (the same target and configuration
as python/run_tests.sh, so Bazel's cache makes a rebuild cheap) and copies its files (the
modules python/BUILD lists in PY_MODULES and _flowloader.so, as `bazel cquery` names
them) into the package. The extension
links Debian's shared libraries (oneTBB, libjpeg-turbo, ...), so a wheel made here
installs on the same kind of machine (Debian 12 with dev.sh's packages), not anywhere.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
TARGET = "//python:flowloader"
# The file names of TARGET's outputs, one a line (all in bazel-bin/python/flowloader/).
FILES_EXPR = "'\\n'.join([f.basename for f in target.files.to_list()])"


def git_version():
    """0.0.COMMITS+gHASH, as runtime/workspace_status.sh counts; 0.0.0 outside git."""
    try:
        count = subprocess.check_output(["git", "rev-list", "--count", "HEAD"], cwd=ROOT,
                                        text=True, stderr=subprocess.DEVNULL).strip()
        commit = subprocess.check_output(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT,
                                         text=True, stderr=subprocess.DEVNULL).strip()
        return f"0.0.{count}+g{commit}"
    except (OSError, subprocess.CalledProcessError):
        return "0.0.0"


class BazelBuildPy(build_py):
    """build_py that takes the package from Bazel's output instead of the source tree."""

    def run(self):
        bazel = shutil.which("bazel")
        if bazel is None:
            raise SystemExit("flowloader: building needs bazel on PATH (./dev.sh setup)")
        subprocess.check_call([bazel, "build", TARGET], cwd=ROOT)
        # bazel-bin of the configuration that build used (the bazel-bin link may follow
        # another configuration's build).
        bin_dir = subprocess.check_output([bazel, "info", "bazel-bin"], cwd=ROOT,
                                          text=True).strip()
        files = subprocess.check_output([bazel, "cquery", TARGET, "--output=starlark",
                                         "--starlark:expr=" + FILES_EXPR], cwd=ROOT,
                                        text=True).split()
        out = os.path.join(self.build_lib, "flowloader")
        os.makedirs(out, exist_ok=True)
        for name in files:
            target = os.path.join(out, name)
            if os.path.exists(target):
                os.chmod(target, 0o644)  # Bazel's outputs are read-only.
            shutil.copyfile(os.path.join(bin_dir, "python", "flowloader", name), target)
            os.chmod(target, 0o755 if name.endswith(".so") else 0o644)


class BinaryDistribution(Distribution):
    """The wheel holds a compiled extension: tag it for this Python and platform."""

    def has_ext_modules(self):
        return True


setup(
    version=git_version(),
    packages=["flowloader"],
    package_dir={"flowloader": "python/flowloader_py"},
    cmdclass={"build_py": BazelBuildPy},
    distclass=BinaryDistribution,
    zip_safe=False,
)
