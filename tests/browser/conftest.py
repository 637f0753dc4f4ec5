"""Fixtures for the browser tests: one private JupyterLab server and one headless Chromium per test process
(started at the first browser test, stopped at the end of the run; with `-n 2`, one of each per worker, on
ports chosen free), and one tab with JupyterLab loaded in which each test opens its notebook; after each test
its documents are closed unsaved and its kernels shut down.

Without /usr/bin/chromium the tests skip (saying how to install it); with REQUIRE_BROWSER=1 (set by
.ci/run) that skip is a failure, so CI always runs them.
"""

import os
from pathlib import Path

import pytest

import lab_driver


def _missing_browser():
    if not Path(lab_driver.CHROMIUM).exists():
        return lab_driver.INSTALL_HINT
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is missing: pip install -r requirements.txt"
    return None


@pytest.fixture(scope="session")
def browser_available():
    reason = _missing_browser()
    if reason:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but the browser tests cannot run: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def lab(browser_available):
    """A JupyterLab server on 127.0.0.1 serving this repo; shut down at the end of the run, even after a failure."""
    with lab_driver.running_lab() as server:
        yield server


@pytest.fixture(scope="session")
def browser(browser_available):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = lab_driver.launch_browser(p)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def _lab_tab(browser, lab):
    """JupyterLab, loaded once per test process in one tab (see `page`); holds None after a failed clean-up."""
    holder = {"tab": None}
    yield holder
    if holder["tab"] is not None:
        holder["tab"].close(run_before_unload=False)


@pytest.fixture
def page(browser, lab, _lab_tab):
    """The tab with JupyterLab loaded and no document open. Afterwards every dialog is dismissed, every document
    closed unsaved and every kernel shut down; a tab that cannot be cleaned up is closed and the next test gets a
    fresh one."""
    if _lab_tab["tab"] is None:
        _lab_tab["tab"] = browser.new_page(viewport={"width": 1400, "height": 1000})
        lab_driver.load_lab(_lab_tab["tab"], lab)
    tab = _lab_tab["tab"]
    try:
        yield tab
    finally:
        try:
            lab_driver.close_documents(tab, lab)
        except Exception:
            _lab_tab["tab"] = None
            tab.close(run_before_unload=False)
            lab.shutdown_kernels()
