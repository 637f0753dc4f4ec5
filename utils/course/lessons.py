"""The lessons of this checkout, in order: number, name, title, source (.py) and notebook (.ipynb).

The one place that says where lessons live; the build, site, Colab and grading scripts and the tests
all list lessons through `lessons()`. The checkout is the folder above this package (`pip install -e .`).
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

SOURCES, NOTEBOOKS = "lessons_src", "notebooks"
NAME = re.compile(r"^(\d\d)_\w+$")  # 01_positional_encoding
TITLE = re.compile(r"^# #\s+(.+?)\s*$", re.M)  # the first Markdown heading of a percent-format source


@dataclass(frozen=True)
class Lesson:
    """One lesson: `number` "01", `name` "01_positional_encoding", and its two files (either may be missing)."""

    number: str
    name: str
    source: Path
    notebook: Path

    @property
    def title(self):
        """The lesson's first heading, e.g. "01 · Positional encoding" (its name when it has none)."""
        if self.source.exists():
            text = self.source.read_text(encoding="utf-8")
        elif self.notebook.exists():
            cells = json.loads(self.notebook.read_text(encoding="utf-8")).get("cells", [])
            text = "\n".join(
                "# " + "".join(c["source"]).replace("\n", "\n# ") for c in cells if c["cell_type"] == "markdown"
            )
        else:
            text = ""
        found = TITLE.search(text)
        return found.group(1) if found else self.name


def checkout(caller=None):
    """The repository checkout `utils` was imported from; a clear error when utils is not installed from one.

    With `caller` (a script's or test's `__file__`), also a clear error when that file lives in another
    checkout: its lessons' kernels would import a different utils than the one it was written against.
    """
    root = Path(__file__).resolve().parents[2]  # utils/course/lessons.py
    if not (root / SOURCES).is_dir() or not (root / NOTEBOOKS).is_dir():
        raise FileNotFoundError(
            f"utils was imported from {root / 'utils'}, which is not inside a checkout of the lessons "
            f"(no {SOURCES}/ and {NOTEBOOKS}/ beside it): clone the repository and run "
            "`pip install -r requirements.txt` (or `pip install -e .`) in it"
        )
    if caller is not None and root not in Path(caller).resolve().parents:
        raise RuntimeError(
            f"{caller} belongs to another checkout than the utils this Python imports ({root / 'utils'}); "
            "run `pip install -e .` in the checkout you work in (or use its own virtual environment)"
        )
    return root


def lessons(prefixes=(), root=None):
    """Every lesson whose source or notebook exists, in lesson order; only names starting with a prefix if given.

    `root` defaults to the checkout (see `checkout()`); a folder with lessons_src/ and/or notebooks/ also works.
    """
    if isinstance(prefixes, (str, bytes)) or not all(isinstance(x, str) for x in prefixes):
        raise TypeError(f"prefixes must be a list or tuple of strings such as ['01', '03_self'], got {prefixes!r}")
    root = checkout() if root is None else Path(root)
    names = {
        p.stem
        for folder, suffix in ((SOURCES, ".py"), (NOTEBOOKS, ".ipynb"))
        for p in (root / folder).glob(f"*{suffix}")
        if NAME.match(p.stem)
    }
    return [
        Lesson(NAME.match(n).group(1), n, root / SOURCES / f"{n}.py", root / NOTEBOOKS / f"{n}.ipynb")
        for n in sorted(names)
        if not prefixes or any(n.startswith(str(x)) for x in prefixes)
    ]


def strays(root=None):
    """Files in lessons_src/ or notebooks/ that look like a lesson but are not named NN_name (e.g. a typo)."""
    root = checkout() if root is None else Path(root)
    return sorted(
        p
        for folder, suffix in ((SOURCES, ".py"), (NOTEBOOKS, ".ipynb"))
        for p in (root / folder).glob(f"*{suffix}")
        if not NAME.match(p.stem)
    )
