"""The stored runs the lessons load: JSON files in utils/experiments/data/, written by scripts in benchmarks/."""

import json
from pathlib import Path


def stored_json(path, command):
    """The JSON at `path`; if it is missing, a FileNotFoundError that says which `command` recreates it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: it ships with the utils package (utils/experiments/data/); recreate it with {command}"
        )
    return json.loads(path.read_text())
