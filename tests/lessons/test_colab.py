"""Colab readiness: every lesson starts with the generated setup cell, which installs this repo's
utils plus pinned extras on Colab only; the repository URL is written in utils/course/links.py alone."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path
from unittest import mock

import jupytext
import nbformat
import pytest
from packaging.requirements import Requirement

from utils.course import links
from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
SOURCES = [lesson.source for lesson in lessons() if lesson.source.exists()]
NOTEBOOKS = [lesson.notebook for lesson in lessons() if lesson.notebook.exists()]
FIX = "run: python scripts/colab_setup.py"
# Importable on a fresh Colab runtime without installing anything (its preinstalled packages).
COLAB_SHIPS = {
    "torch",
    "numpy",
    "matplotlib",
    "ipywidgets",
    "IPython",
    "ipykernel",
    "tqdm",
    "pandas",
    "scipy",
    "sklearn",
    "PIL",
    "traitlets",
    "packaging",
    "requests",
    "nbformat",
    "mpl_toolkits",
}
# Import name of each extra whose distribution name differs from it.
IMPORT_NAME = {}


def first_code_cell(nb):
    code = [c for c in nb.cells if c.cell_type == "code"]
    return code[0] if code else None


def tagged(nb):
    return [c for c in nb.cells if "colab-setup" in c.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("path", SOURCES + NOTEBOOKS, ids=[p.name for p in SOURCES + NOTEBOOKS])
def test_lesson_starts_with_exactly_the_generated_setup_cell(path):
    nb = jupytext.read(path) if path.suffix == ".py" else nbformat.read(path, as_version=4)
    cell = first_code_cell(nb)
    assert cell is not None, f"{path.name} has no code cell"
    assert cell.metadata.get("tags") == ["colab-setup"], f"{path.name}: first code cell not tagged colab-setup; {FIX}"
    assert cell.source == links.colab_setup_source(), f"{path.name}: setup cell differs from utils.course.links; {FIX}"
    assert len(tagged(nb)) == 1, f"{path.name} has {len(tagged(nb))} colab-setup cells; {FIX}"


def test_the_rewrite_command_finds_nothing_to_do():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "colab_setup.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rewrite_inserts_replaces_and_is_idempotent(script):
    colab_setup = script("colab_setup")
    old = '# %% [markdown]\n# # T\n\n# %% tags=["colab-setup"]\nprint("old")\n\n# %%\nx = 1\n'
    bare = "# %% [markdown]\n# # T\n\n# %%\nx = 1\n"
    for text in (old, bare):
        fixed = colab_setup.fix_source(text)
        assert colab_setup.fix_source(fixed) == fixed
        nb = jupytext.reads(fixed, fmt="py:percent")
        assert [c.source for c in nb.cells] == ["# T", links.colab_setup_source(), "x = 1"]
    # an existing setup cell is rewritten where it stands: the markdown after it stays after it
    intro = (
        '# %% [markdown]\n# # T\n\n# %% tags=["colab-setup"]\nprint("old")\n\n# %% [markdown]\n# intro\n\n# %%\nx = 1\n'
    )
    nb = jupytext.reads(colab_setup.fix_source(intro), fmt="py:percent")
    assert [c.source for c in nb.cells] == ["# T", links.colab_setup_source(), "intro", "x = 1"]
    nb = jupytext.reads(bare, fmt="py:percent")
    assert colab_setup.fix_notebook(nb) and not colab_setup.fix_notebook(nb)
    assert first_code_cell(nb).source == links.colab_setup_source() and len(tagged(nb)) == 1


def run_setup_cell(in_colab, returncode=0, stderr=""):
    """Execute the generated setup cell with pip (subprocess.run) mocked; return the calls made."""
    run = mock.Mock(return_value=subprocess.CompletedProcess([], returncode, "", stderr))
    modules = {"google.colab": mock.Mock()} if in_colab else {}
    with mock.patch.dict(sys.modules, modules), mock.patch("subprocess.run", run):
        if not in_colab:
            sys.modules.pop("google.colab", None)
        exec(links.colab_setup_source(), {})
    return run.call_args_list


def test_setup_cell_does_nothing_outside_colab():
    assert run_setup_cell(in_colab=False) == []


def test_setup_cell_on_colab_pip_installs_the_fixed_release_with_the_colab_extras():
    (call,) = run_setup_cell(in_colab=True)
    args = call.args[0]
    assert args[:5] == [sys.executable, "-m", "pip", "install", "-q"] and len(args) == 6
    req = Requirement(args[5])
    assert req.name == links.PACKAGE and req.extras == {links.COLAB_EXTRA}
    assert req.url == f"git+{links.REPOSITORY}@{links.RELEASE}", "Colab must install the fixed release, not main"


def test_a_failed_install_stops_with_one_line_saying_what_failed_and_what_to_do():
    stderr = "ERROR: Could not find a version\nERROR: git clone failed: Could not resolve host: github.com\n"
    with pytest.raises(SystemExit) as stop:
        run_setup_cell(in_colab=True, returncode=1, stderr=stderr)
    message = str(stop.value.code)
    assert "\n" not in message, message
    assert message.startswith("Setup failed: pip could not install") and links.RELEASE in message
    assert "Could not resolve host: github.com" in message and "run this cell again" in message


def test_links_and_install_name_the_same_release():
    assert links.BRANCH == links.RELEASE
    assert f"/{links.RELEASE}/" in links.colab_url("notebooks/x.ipynb")


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_pins(path):
    pins = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            pins[req.name.lower().replace("_", "-")] = str(req.specifier)
    return pins


def test_colab_extras_are_exact_pins_that_agree_with_requirements_txt():
    project = pyproject()["project"]
    assert project["name"] == links.PACKAGE
    extras = project["optional-dependencies"][links.COLAB_EXTRA]
    pins = requirement_pins(ROOT / "requirements.txt")
    for spec in extras:
        req = Requirement(spec)
        name = req.name.lower().replace("_", "-")
        assert str(req.specifier).startswith("==") and "*" not in str(req.specifier), f"{spec} is not an exact pin"
        assert pins.get(name) == str(req.specifier), f"{spec} differs from requirements.txt ({pins.get(name)})"
        assert name not in {"torch", "numpy", "matplotlib", "ipywidgets"}, (
            f"{name}: Colab ships its own; reinstalling it breaks the runtime (or pulls a CUDA torch)"
        )


def imports_of(path):
    tree = ast.parse(Path(path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def test_everything_a_lesson_imports_is_on_colab_after_the_setup_cell():
    extras = {Requirement(s).name for s in pyproject()["project"]["optional-dependencies"][links.COLAB_EXTRA]}
    available = COLAB_SHIPS | {IMPORT_NAME.get(n, n.replace("-", "_")) for n in extras} | {"utils"}
    # What learners run on Colab: the lessons and the utils they import (not the instructor's grader, nor the
    # notebook runner it shares with the scripts).
    files = SOURCES + [p for p in (ROOT / "utils").rglob("*.py") if p.name not in ("grade.py", "kernel_client.py")]
    missing = {
        f"{name} (in {p.relative_to(ROOT)})"
        for p in files
        for name in imports_of(p)
        if name not in sys.stdlib_module_names and name not in available
    }
    assert not missing, f"not on Colab: add an exact pin to the `colab` extra in pyproject.toml: {sorted(missing)}"


def test_the_repository_url_is_written_in_one_place():
    """Only utils/course/links.py spells the URL; the generated setup cells, README and site derive from it.
    CITATION.cff, which GitHub reads as data, spells it too and is checked equal below."""
    generated = {"lessons_src", "notebooks"}
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    needle = links.REPOSITORY.removeprefix("https://")
    spelled = [
        f
        for f in files
        if Path(f).parts[0] not in generated
        and f not in ("utils/course/links.py", "README.md", "CITATION.cff")
        and (ROOT / f).is_file()
        and needle in (ROOT / f).read_text(errors="ignore")
    ]
    assert not spelled, f"these files spell the repository URL; import it from utils.course.links: {spelled}"


def test_citation_names_the_same_repository():
    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["repository-code"] == links.REPOSITORY, (
        "CITATION.cff: repository-code differs from utils.course.links"
    )


def test_links_are_built_from_the_constant():
    nb = "notebooks/01_positional_encoding.ipynb"
    slug = links.REPOSITORY.removeprefix("https://github.com/")
    assert links.colab_url(nb) == f"https://colab.research.google.com/github/{slug}/blob/{links.BRANCH}/{nb}"
    assert links.binder_url(nb) == f"https://mybinder.org/v2/gh/{slug}/{links.BRANCH}?urlpath=lab/tree/{nb}"
    assert links.colab_url(nb) in links.badges(nb) and links.binder_url(nb) in links.badges(nb)
