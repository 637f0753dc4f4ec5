"""Repo-wide pytest setup: notebook kernels (nbval) import this checkout's utils."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("PYTHONHASHSEED", "0")
# Kernels draw with the inline backend, which ipykernel picks only when MPLBACKEND is unset: a caller's
# MPLBACKEND=Agg (common on headless servers) would make every figure cell print a warning instead.
os.environ.pop("MPLBACKEND", None)
# Idle OpenMP threads sleep instead of spinning: on 2 shared cores spinning made training steps 10x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
