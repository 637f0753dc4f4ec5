"""The book site in Chromium: MathJax ships with the site, so every lesson page typesets its formulas with the
network cut."""

import subprocess
import sys

import pytest

from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
LESSONS = [lesson.notebook for lesson in lessons() if lesson.notebook.exists()]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    cmd = [sys.executable, str(ROOT / "scripts" / "build_site.py"), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.browser
def test_mathjax_typesets_every_formula_offline(browser, site):
    page = browser.new_page()
    try:
        page.route("http*://**", lambda route: route.abort())  # no network: MathJax must come with the site
        for path in LESSONS:
            page.goto((site / f"{path.stem}.html").as_uri())
            formulas = page.locator(".math").count()
            assert formulas > 0, f"{path.stem}: no formula on the page"
            page.wait_for_function(f"document.querySelectorAll('mjx-container').length >= {formulas}", timeout=30000)
    finally:
        page.close()
