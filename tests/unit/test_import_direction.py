"""utils/ imports run one way: course -> figures -> experiments -> the model (the top level and translator/).

The model imports none of the sub-packages, and neither it nor experiments/ imports drawing or Jupyter machinery.
"""

import ast
from pathlib import Path

import pytest

import utils

ROOT = Path(utils.__file__).resolve().parent
# Rank of each part of utils: a module may import utils modules of its own rank or lower.
LAYERS = {"model": 0, "experiments": 1, "figures": 2, "course": 3}
DRAWING_AND_JUPYTER = ("matplotlib", "ipywidgets", "IPython", "ipykernel", "nbclient", "nbformat", "jupyter_client")
# What the model and the experiments must not import (figures/ draws; course/ runs notebooks).
BANNED = {"model": DRAWING_AND_JUPYTER, "experiments": DRAWING_AND_JUPYTER, "figures": (), "course": ()}


def layer(module):
    """'model', 'experiments', 'figures' or 'course' for a dotted utils module name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "model"


def module_name(path, root=ROOT):
    rel = path.relative_to(root.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported(tree):
    """Every module a file imports (at any depth, lazily or not); `from utils import x` counts as utils.x."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise AssertionError(f"relative import of {node.module}: utils uses absolute imports")
            yield node.module
            if node.module == "utils" or node.module.startswith("utils."):
                yield from (f"{node.module}.{a.name}" for a in node.names)


def violations(root=ROOT):
    """(module, imported, why) for each import against the direction, once per module and reason."""
    found, seen = [], set()
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        own = layer(name)
        for target in imported(ast.parse(path.read_text(), str(path))):
            top = target.split(".")[0]
            if top == "utils" and target != "utils":
                why = f"{own} must not import {layer(target)}" if LAYERS[layer(target)] > LAYERS[own] else None
            else:
                why = f"{own} must not import {top}" if top in BANNED[own] else None
            if why and (name, why) not in seen:
                seen.add((name, why))
                found.append((name, target, why))
    return found


def test_imports_run_one_way_and_the_model_draws_nothing():
    assert not violations(), "\n".join(f"{m} imports {t}: {why}" for m, t, why in violations())


def test_every_module_is_in_a_known_layer():
    names = [module_name(p) for p in ROOT.rglob("*.py")]
    assert {layer(n) for n in names} == set(LAYERS)
    subpackages = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages == {"translator", "experiments", "figures", "course"}, subpackages


@pytest.mark.parametrize(
    "path, source, why",
    [
        ("attention.py", "from utils.figures import plotting\n", "model must not import figures"),
        ("translator/train.py", "def f():\n    from IPython.display import display\n", "model must not import IPython"),
        ("masks.py", "import utils.course.links\n", "model must not import course"),
        ("experiments/rnn.py", "import matplotlib.pyplot as plt\n", "experiments must not import matplotlib"),
        (
            "experiments/rnn.py",
            "from utils.figures.plotting import panel_grid\n",
            "experiments must not import figures",
        ),
        ("figures/plotting.py", "from utils.course import lessons\n", "figures must not import course"),
    ],
)
def test_an_import_against_the_direction_is_found(tmp_path, path, source, why):
    root = tmp_path / "utils"
    for pkg in ("", "translator", "experiments", "figures", "course"):
        (root / pkg).mkdir(parents=True, exist_ok=True)
        (root / pkg / "__init__.py").write_text("")
    (root / path).write_text(source)
    (root / "course" / "grade.py").write_text("from utils.figures import widgets\nimport nbclient\n")  # allowed
    assert [v[2] for v in violations(root)] == [why]
