"""Repo-wide pytest setup: notebook kernels (nbval) import this checkout's utils."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("PYTHONHASHSEED", "0")
# Idle OpenMP threads sleep instead of spinning: on 2 shared cores spinning made training steps 10x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
