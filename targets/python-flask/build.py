"""The build of this Python target: a fresh .venv with exactly requirements.txt, done by
../python-common/venv_build.py (shared with the other Python targets)."""

import pathlib
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in python-common
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python-common"))

import venv_build  # noqa: E402

venv_build.main()
