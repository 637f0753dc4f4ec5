"""What pyproject.toml declares and what the README tells a learner to type agree with the code and the lock."""

import ast
import re
import sys
import tomllib

from packaging.requirements import Requirement

from utils.course.lessons import checkout

ROOT = checkout(__file__)
# Import name -> distribution name, where they differ.
DISTRIBUTION = {"IPython": "ipython", "yaml": "pyyaml"}
# Imported by utils but needed only by an extra: module -> extra.
EXTRA_ONLY = {"nbclient": "grade", "nbformat": "grade", "jupyter_client": "grade", "traitlets": "grade"}


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def third_party_imports(folder):
    found = {}
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "utils":
                    found.setdefault(top, path.relative_to(ROOT).as_posix())
    return found


def names(requirements):
    return {Requirement(r).name.lower() for r in requirements}


def test_everything_utils_imports_is_declared():
    declared = names(project()["dependencies"])
    extras = {k: names(v) for k, v in project()["optional-dependencies"].items()}
    missing = []
    for module, where in third_party_imports(ROOT / "utils").items():
        dist = DISTRIBUTION.get(module, module).lower()
        extra = EXTRA_ONLY.get(module)
        ok = dist in extras.get(extra, set()) if extra else dist in declared
        if not ok:
            missing.append(f"{dist} (imported in {where})")
    assert not missing, f"add to pyproject.toml's dependencies (or the extra that needs it): {missing}"


def test_declared_dependencies_are_ranges_the_lock_satisfies():
    lock = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            lock[req.name.lower().replace("_", "-")] = next(iter(req.specifier)).version
    for spec in project()["dependencies"]:
        req = Requirement(spec)
        assert not any(s.operator == "==" for s in req.specifier), f"{spec}: a dependency is a range, not a pin"
        version = lock.get(req.name.lower())
        assert version is not None, f"{req.name} is declared but not locked in requirements.txt"
        assert req.specifier.contains(version, prereleases=True), f"{spec} excludes the locked {req.name}=={version}"


def test_readme_torch_line_matches_the_lock():
    readme = (ROOT / "README.md").read_text()
    lines = re.findall(r"^pip install torch==(\S+) --extra-index-url (\S+)", readme, re.M)
    assert lines, "README.md's setup must show the Linux line that installs PyTorch's CPU build"
    locked = re.search(r"^torch==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    for version, index in lines:
        assert version == locked.split("+")[0], f"README installs torch {version}, requirements.txt locks {locked}"
        assert index == "https://download.pytorch.org/whl/cpu", index
    assert "pip install -r requirements.txt" in readme


def test_the_package_version_is_the_release_the_colab_cell_installs():
    """The lessons' Colab cell installs the release tagged links.RELEASE; the package built there must say so."""
    from utils.course import links

    assert "v" + project()["version"] == links.RELEASE, (
        f"pyproject.toml says version {project()['version']}, utils.course.links.RELEASE is {links.RELEASE}: "
        "set both when publishing a release (CONTRIBUTING.md)"
    )
