"""Build a static HTML site of every lesson from the committed, executed notebooks (nbconvert).

Usage: python scripts/build_site.py [--out site]     # then open site/index.html

Each lesson page keeps its outputs and figures (embedded as data URIs), gets previous/index/next
links and its Colab/Binder links; links between lessons point at their pages. site/ is git-ignored.
"""

import argparse
import html
import re
import shutil
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from utils.course import links
from utils.course.lessons import checkout
from utils.course.lessons import lessons as all_lessons

ROOT = checkout(__file__)

STYLE = """<style>
.lesson-nav { display: flex; gap: 1.5em; align-items: center; padding: .6em 1.2em;
  font: 15px system-ui, sans-serif; border-bottom: 1px solid #ddd; background: #fafafa; }
.lesson-nav.bottom { border-top: 1px solid #ddd; border-bottom: none; }
.lesson-nav .spacer { flex: 1; }
.lesson-nav img { vertical-align: middle; }
</style>"""


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


def nav(prev, nxt, notebook, bottom=False):
    """The bar of links at the top (and bottom) of a lesson page."""

    def link(target, label, rel):
        if target is None:
            return f'<span class="{rel}" aria-disabled="true"></span>'
        return f'<a class="{rel}" rel="{rel}" href="{page_name(target[0])}">{label} {html.escape(target[1])}</a>'

    badges = (
        f'<a href="{links.colab_url(notebook)}"><img alt="Open In Colab" src="{links.COLAB_BADGE}"></a>'
        f'<a href="{links.binder_url(notebook)}"><img alt="Launch Binder" src="{links.BINDER_BADGE}"></a>'
    )
    return (
        f'<nav class="lesson-nav{" bottom" if bottom else ""}">{link(prev, "&larr;", "prev")}'
        f'<a class="index" href="index.html">All lessons</a>{link(nxt, "&rarr;", "next")}'
        f'<span class="spacer"></span>{badges}</nav>'
    )


def fix_links(body, stems):
    """Links to a lesson notebook go to its page; other relative links go to the file on GitHub."""

    def repl(m):
        attr, url = m.group(1), html.unescape(m.group(2))
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|//)", url, re.I):
            return m.group(0)
        path, _, frag = url.partition("#")
        stem = Path(path).stem
        if path.endswith(".ipynb") and stem in stems:
            new = f"{stem}.html" + (f"#{frag}" if frag else "")
        else:  # relative to notebooks/ in the repository
            target = (Path("notebooks") / path).as_posix()
            parts = []
            for part in target.split("/"):
                if part == "..":
                    parts and parts.pop()
                elif part not in ("", "."):
                    parts.append(part)
            new = f"{links.REPOSITORY}/blob/{links.BRANCH}/{'/'.join(parts)}" + (f"#{frag}" if frag else "")
        return f'{attr}="{html.escape(new)}"'

    return re.sub(r'(href)="([^"]*)"', repl, body)


def build(out, root=ROOT):
    """Write out/index.html and one page per lesson; return the lesson pages in order."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    paths = lessons(root)
    nbs = [nbformat.read(p, as_version=4) for p in paths]
    titles = [title_of(nb, p.stem) for nb, p in zip(nbs, paths)]
    stems = {p.stem for p in paths}
    exporter = HTMLExporter(template_name="lab")
    pages = []
    for i, (path, nb, title) in enumerate(zip(paths, nbs, titles)):
        prev = (paths[i - 1], titles[i - 1]) if i > 0 else None
        nxt = (paths[i + 1], titles[i + 1]) if i + 1 < len(paths) else None
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
        body = fix_links(body, stems)
        rel = f"notebooks/{path.name}"
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav(prev, nxt, rel), body, count=1)
        body = body.replace("</body>", nav(prev, nxt, rel, bottom=True) + "</body>", 1)
        body = body.replace("</head>", STYLE + "</head>", 1)
        page = out / page_name(path)
        page.write_text(body, encoding="utf-8")
        pages.append(page)
    rows = "\n".join(
        f'<li><a href="{page_name(p)}">{html.escape(t)}</a> '
        f'<a href="{links.colab_url("notebooks/" + p.name)}"><img alt="Open In Colab" src="{links.COLAB_BADGE}"></a> '
        f'<a href="{links.binder_url("notebooks/" + p.name)}"><img alt="Launch Binder" src="{links.BINDER_BADGE}"></a></li>'
        for p, t in zip(paths, titles)
    )
    (out / "index.html").write_text(
        f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Attention, built by hand</title>
<style>body {{ font: 16px/1.6 system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em; }}
li {{ margin: .4em 0; }} img {{ vertical-align: middle; }}</style></head>
<body><h1>Attention, built by hand</h1>
<p>Interactive lessons that build the Transformer from scratch; every claim is checked by code.
Source: <a href="{links.REPOSITORY}">{html.escape(links.REPOSITORY)}</a>.</p>
<ol class="lessons">
{rows}
</ol></body></html>
""",
        encoding="utf-8",
    )
    return pages


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="output folder (default: site/)")
    args = parser.parse_args(argv)
    pages = build(args.out)
    print(f"{args.out / 'index.html'}: {len(pages)} lesson page(s)")


if __name__ == "__main__":
    main()
