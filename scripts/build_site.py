"""Build the lessons as a book website (Sphinx + MyST-NB + sphinx-book-theme, as Jupyter Book 1 does).

Usage: python scripts/build_site.py [--out site]     # then open site/index.html

The pages come from the committed, executed notebooks, which are not run again and not modified: the
build copies them into a temporary Sphinx project. The book has a table of contents of the lessons in
order, rendered math (MathJax 3, copied into the site: no network needed), search, previous/next links, cells
tagged `hide-input` collapsed, and each lesson's Colab/Binder launch links from utils/course/links.py.
Links between lessons go to their pages; other relative links go to the file on GitHub. site/ is git-ignored.
"""

import argparse
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
from sphinx.cmd.build import build_main

from utils.course import links
from utils.course.lessons import checkout
from utils.course.lessons import lessons as all_lessons

ROOT = checkout(__file__)
TITLE = "Attention, built by hand"

CONF = """\
import sys

project = {title!r}
author = "The authors of Attention, built by hand"
extensions = ["myst_nb", "sphinx-mathjax-offline"]  # MathJax 3 copied into the site: math renders offline
exclude_patterns = ["_build"]
html_theme = "sphinx_book_theme"
html_title = {title!r}
html_theme_options = {{
    "repository_url": {repository!r},
    "repository_branch": {branch!r},
    "path_to_docs": "notebooks",
    "launch_buttons": {{
        "colab_url": "https://colab.research.google.com",
        "binderhub_url": "https://mybinder.org",
        "notebook_interface": "jupyterlab",
    }},
    "use_download_button": True,
    "show_toc_level": 2,
}}
nb_execution_mode = "off"  # the committed outputs are the ones shown
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 6
sys.path.insert(0, {scripts!r})
myst_heading_slug_func = "build_site.jupyter_anchor"  # headings keep the ids JupyterLab gives them
suppress_warnings = ["mystnb.unknown_mime_type"]  # widgets show their text form on a static page
"""


def jupyter_anchor(title):
    """A heading's id as JupyterLab makes it ('2. Padding masks' -> '2.-Padding-masks'), so that links written
    in the notebooks (#2.-Padding-masks, 04_masking.ipynb#2.-Padding-masks) also work on the site."""
    return title.strip().replace(" ", "-")


def lessons(root=ROOT):
    """The lesson notebooks under `root` (the checkout, or a test's folder), in order."""
    return [lesson.notebook for lesson in all_lessons(root=root) if lesson.notebook.exists()]


def title_of(nb, fallback):
    """The lesson's first Markdown heading, e.g. '01 · Positional encoding'."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return fallback


def page_name(path):
    return path.stem + ".html"


def repository_url(url):
    """A link relative to notebooks/ as the file's URL on GitHub (at the release the site shows)."""
    path, _, frag = url.partition("#")
    parts = []
    for part in ("notebooks/" + path).split("/"):
        if part == "..":
            parts and parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return f"{links.REPOSITORY}/blob/{links.BRANCH}/{'/'.join(parts)}" + (f"#{frag}" if frag else "")


def fix_links(markdown, stems):
    """Keep links to another lesson's notebook (Sphinx turns them into its page); point every other
    relative link (Markdown or HTML) at the file on GitHub, since the site holds only the lessons."""

    def target(url):
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|//|/)", url, re.I):
            return url
        path = url.partition("#")[0]
        if path.endswith(".ipynb") and Path(path).stem in stems and "/" not in path.removeprefix("./"):
            return url
        return repository_url(url)

    markdown = re.sub(r"(\]\()([^)\s]+)", lambda m: m.group(1) + target(m.group(2)), markdown)
    return re.sub(r'(\b(?:href|src)=")([^"]*)', lambda m: m.group(1) + target(m.group(2)), markdown)


def write_project(src, paths):
    """A Sphinx project in `src`: conf.py, an index page whose table of contents lists the lessons, and a
    copy of each notebook (its Markdown links fixed, its Colab setup cell collapsed); return the lessons' titles."""
    src.mkdir(parents=True, exist_ok=True)
    (src / "conf.py").write_text(
        CONF.format(title=TITLE, repository=links.REPOSITORY, branch=links.BRANCH, scripts=str(Path(__file__).parent)),
        encoding="utf-8",
    )
    stems = {p.stem for p in paths}
    titles = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        titles.append(title_of(nb, path.stem))
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = fix_links(cell.source, stems)
            tags = cell.metadata.get("tags", [])
            if "colab-setup" in tags and "hide-input" not in tags:  # it does nothing off Colab: fold it away
                cell.metadata["tags"] = [*tags, "hide-input"]
        nbformat.write(nb, src / path.name)
    rows = "\n".join(
        f"| [{title}]({path.name}) | [![Open In Colab]({links.COLAB_BADGE})]({links.colab_url('notebooks/' + path.name)}) "
        f"[![Launch Binder]({links.BINDER_BADGE})]({links.binder_url('notebooks/' + path.name)}) |"
        for path, title in zip(paths, titles)
    )
    toc = "\n".join(path.stem for path in paths)
    (src / "index.md").write_text(
        f"# {TITLE}\n\nInteractive lessons that build the Transformer from scratch; every claim is checked by "
        f"code. Source: <{links.REPOSITORY}>.\n\n| Lesson | Run it |\n| --- | --- |\n{rows}\n\n"
        f"```{{toctree}}\n:hidden:\n:caption: Lessons\n\n{toc}\n```\n",
        encoding="utf-8",
    )
    return titles


def build(out, root=ROOT):
    """Build the book into `out` (replaced if it exists); return the lesson pages in order."""
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()) and not (out / "searchindex.js").exists():
        raise ValueError(
            f"out must be a new folder or an earlier site (it is replaced), got {out}, which holds other files"
        )
    paths = lessons(root)
    with tempfile.TemporaryDirectory(prefix="book-") as tmp:
        src = Path(tmp) / "src"
        write_project(src, paths)
        if out.exists():
            shutil.rmtree(out)
        status = build_main(["-b", "html", "-q", "-d", str(Path(tmp) / "doctrees"), str(src), str(out)])
        if status != 0:
            raise SystemExit(f"the site build failed (Sphinx exit status {status}); its messages are above")
    return [out / page_name(p) for p in paths]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="output folder (default: site/)")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose notebooks/ to build (default: this one)"
    )
    args = parser.parse_args(argv)
    pages = build(args.out, root=args.root)
    print(f"{args.out / 'index.html'}: {len(pages)} lesson page(s)")


if __name__ == "__main__":
    main()
