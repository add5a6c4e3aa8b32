"""The build shared by the Python targets (each target's build.py calls main()): a fresh
virtual environment in .venv with exactly the pinned requirements (every transitive dependency
is pinned in requirements.txt; wheels only, so nothing compiles, except the packages a target
names in `from_source`). Run by `loadlab lab build` with the system python3, in the target's
directory."""

import subprocess
import sys
import venv


def main(from_source: tuple[str, ...] = ()):
    """`from_source`: packages PyPI has only as source (uWSGI), which pip builds here with the C
    compiler and Python's headers. Their build backend is pinned too: build-requirements.txt
    is installed first and pip builds without isolation, so nothing unpinned is fetched."""
    if sys.version_info < (3, 10):
        sys.exit(f"this target needs Python 3.10 or newer, found {sys.version.split()[0]}")
    # clear=True: a rebuild never keeps a package the requirements no longer name.
    venv.EnvBuilder(clear=True, with_pip=True).create(".venv")
    pip = [".venv/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--no-input", "--only-binary=:all:", "--no-deps"]
    if from_source:
        subprocess.run(pip + ["-r", "build-requirements.txt"], check=True)
        # After --only-binary=:all:, --no-binary names the exceptions (pip's documented rule).
        pip += [f"--no-binary={','.join(from_source)}", "--no-build-isolation", "--use-pep517"]
    subprocess.run(pip + ["-r", "requirements.txt"], check=True)
    # --no-deps above installs exactly the pins; this fails if one is missing or conflicts.
    subprocess.run([".venv/bin/python", "-m", "pip", "check", "--disable-pip-version-check"],
                   check=True)
