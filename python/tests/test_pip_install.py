"""`pip install .` and `pip wheel .` (pyproject.toml + setup.py): the package builds with
the repo's own Bazel build, installs into a fresh venv, imports and iterates from outside
the source tree, and uninstalls. Offline, as FIELD-NOTES says: a venv with the system's
site-packages (torch), `--no-build-isolation --no-index` (Debian's setuptools and wheel).
Bazel's cache holds the extension run_tests.sh built, so each build here is seconds."""

import glob
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Run in the venv from `cwd`, outside the source tree, without run_tests.sh's PYTHONPATH
# (which points at Bazel's output): only the installed package can be imported.
ITERATE = """
import sys
import flowloader
assert flowloader.__file__.startswith(sys.prefix), flowloader.__file__
with flowloader.DataLoader(sys.argv[1], batch_size=8, image_size=16) as loader:
    rows = sum(images.shape[0] for images, labels in loader)
print(flowloader.__file__, rows)
"""


def venv(path):
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(path)],
                   check=True)
    return str(path / "bin" / "python")


def run(python, *args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([python, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    return tmp_path_factory.mktemp("outside")


def test_pip_install_then_import_iterate_and_uninstall(small_data, tmp_path, outside):
    python = venv(tmp_path / "venv")
    run(python, "-m", "pip", "install", "--no-build-isolation", "--no-index", REPO, cwd=outside)
    out = run(python, "-c", ITERATE, small_data, cwd=outside)
    assert out.split()[1] == "36" and str(tmp_path / "venv") in out.split()[0]
    run(python, "-m", "pip", "uninstall", "-y", "flowloader", cwd=outside)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    gone = subprocess.run([python, "-c", "import flowloader"], cwd=outside, env=env,
                          capture_output=True, text=True)
    assert gone.returncode != 0 and "No module named 'flowloader'" in gone.stderr
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])",
               cwd=outside).strip()
    assert not glob.glob(os.path.join(site, "flowloader*")), "uninstall left files"


def test_pip_wheel_installs_into_another_venv(small_data, tmp_path, outside):
    builder = venv(tmp_path / "builder")
    wheels = tmp_path / "wheels"
    run(builder, "-m", "pip", "wheel", "--no-build-isolation", "--no-index", "--no-deps",
        "-w", str(wheels), REPO, cwd=outside)
    (wheel,) = glob.glob(str(wheels / "flowloader-*.whl"))
    # A platform wheel (it holds the extension), not a pure-Python one.
    assert "-linux_" in os.path.basename(wheel) and "-none-any" not in wheel
    python = venv(tmp_path / "user")
    run(python, "-m", "pip", "install", "--no-index", wheel, cwd=outside)
    out = run(python, "-c", ITERATE, small_data, cwd=outside)
    assert out.split()[1] == "36" and str(tmp_path / "user") in out.split()[0]
