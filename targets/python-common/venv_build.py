"""The build shared by the Python targets (each target's build.py calls main()): a fresh
virtual environment in .venv with exactly the pinned requirements (every transitive dependency
is pinned in requirements.txt; wheels only, so nothing compiles). Run by `loadlab lab build`
with the system python3, in the target's directory."""

import subprocess
import sys
import venv


def main():
    if sys.version_info < (3, 10):
        sys.exit(f"this target needs Python 3.10 or newer, found {sys.version.split()[0]}")
    # clear=True: a rebuild never keeps a package the requirements no longer name.
    venv.EnvBuilder(clear=True, with_pip=True).create(".venv")
    subprocess.run(
        [".venv/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-input", "--only-binary=:all:", "--no-deps", "-r", "requirements.txt"],
        check=True,
    )
    # --no-deps above installs exactly the pins; this fails if one is missing or conflicts.
    subprocess.run([".venv/bin/python", "-m", "pip", "check", "--disable-pip-version-check"],
                   check=True)
