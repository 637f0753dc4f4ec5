"""Start a private JupyterLab server and drive notebooks and their widgets in Chromium (Playwright).

Shared by tests/browser/ and benchmarks/widget_latency.py. Everything here talks only to 127.0.0.1.
"""

import ast
import builtins
import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat

from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INSTALL_HINT = "Chromium is missing: install it with `apt-get install chromium` (Debian's package)"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# User settings for the private server: no news or update checks (their pop-ups cover the page),
# no autosave (a test must never rewrite a committed notebook), every cell kept in the DOM.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


# --- which notebooks have widgets ---------------------------------------------------------------


def lesson_notebooks(root=ROOT):
    """Every lesson notebook, in lesson order."""
    return [lesson.notebook for lesson in lessons(root=root) if lesson.notebook.exists()]


def has_widget(path):
    """True when a code cell calls a `*_explorer(` from utils.figures.widgets or shows a widget view."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if re.search(r"\b\w+_explorer\(", cell.source) and "widgets" in "\n".join(
            c.source for c in nb.cells if c.cell_type == "code"
        ):
            return True
        if any(WIDGET_MIME in o.get("data", {}) for o in cell.get("outputs", [])):
            return True
    return False


def widget_notebooks(root=ROOT):
    return [p for p in lesson_notebooks(root) if has_widget(p)]


def widget_cells(path):
    """The indices (in the notebook's cell list, markdown included, as JupyterLab counts them) of the cells
    whose committed output is a widget view: one per widget the lesson shows."""
    nb = nbformat.read(path, as_version=4)
    return [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and any(WIDGET_MIME in o.get("data", {}) for o in cell.get("outputs", []))
    ]


def cells_needed(path, targets):
    """The code cells (indices as in `widget_cells`) a learner must run, in order, for the cells `targets` to
    run, found by reading the code, not running it: walking back from the targets, a cell is needed when it
    binds or may change a name that a needed cell after it reads or changes, unless a needed cell between them
    binds that name again first. A name a needed function reads is needed wherever it is bound, and a cell with
    `from ... import *` is always needed."""
    nb = nbformat.read(path, as_version=4)
    code = {i: _names(c.source) for i, c in enumerate(nb.cells[: max(targets) + 1]) if c.cell_type == "code"}
    modules = set().union(*(found["imports"] for found in code.values()))
    needed, called = set(targets), set()
    while True:  # again until nothing is added: a function may read a name that a later cell binds
        before, names = (len(needed), len(called)), set()
        for i in sorted(code, reverse=True):
            found = code[i]
            changes = found["stores"] | ((found["arguments"] | found["methods"]) - modules)
            if i in needed or found["star"] or (found["binds"] | changes) & (names | called):
                needed.add(i)
                names = (names - found["kills"]) | found["reads"] | changes
                called |= found["deferred"]
        if (len(needed), len(called)) == before:
            return sorted(needed)


def _names(source):
    """What a cell does with names: binds (anywhere), kills (binds for sure at the top level before using
    them), reads (before killing them), deferred (reads inside the functions it defines, when they are called),
    stores into (`a.b = ...`, `a[i] = ...`), passes to a call or calls a method of (these three may change a
    name in place; before killing it), imports, and whether it imports *."""
    from IPython.core.inputtransformer2 import TransformerManager  # magics and shell lines become Python

    tree = ast.parse(TransformerManager().transform_cell(source))
    found = _empty()
    kills = set()
    for statement in tree.body:
        one = _scan(ast.Module([statement], []))
        for key in ("reads", "stores", "arguments", "methods"):  # a name this cell bound is its own object now
            found[key] |= one[key] - kills
        for key in ("binds", "deferred", "imports"):
            found[key] |= one[key]
        found["star"] = found["star"] or one["star"]
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            kills |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)} - one["reads"]
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kills.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            kills |= one["imports"]
    found["binds"] |= found["imports"]
    found["kills"] = kills
    return found


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _empty():
    found = {k: set() for k in ("binds", "reads", "deferred", "stores", "arguments", "methods", "imports")}
    found["star"] = False
    return found


def _scan(node, found=None):
    """The names under `node`: a function's or comprehension's own parameters and locals are left out, and the
    free names a function body reads are `deferred` (read when it is called)."""
    found = _empty() if found is None else found
    for child in ast.iter_child_nodes(node):
        if isinstance(child, SCOPES):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found["binds"].add(child.name)
            inner = _scan(child)
            own = {a.arg for a in ast.walk(child.args) if isinstance(a, ast.arg)} if hasattr(child, "args") else set()
            declared = {n for g in ast.walk(child) if isinstance(g, (ast.Global, ast.Nonlocal)) for n in g.names}
            local = (inner["binds"] | own | inner["imports"]) - declared
            later = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))  # runs when called
            found["deferred" if later else "reads"] |= inner["reads"] - local
            for key in ("deferred", "stores", "arguments", "methods"):
                found[key] |= inner[key] - local
            found["binds"] |= inner["binds"] & declared
            found["star"] = found["star"] or inner["star"]
            continue
        if isinstance(child, ast.Name):
            found["reads" if isinstance(child.ctx, ast.Load) else "binds"].add(child.id)
        elif isinstance(child, ast.ClassDef):
            found["binds"].add(child.name)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            found["star"] = found["star"] or any(a.name == "*" for a in child.names)
            found["imports"] |= {(a.asname or a.name).split(".")[0] for a in child.names}
        elif isinstance(child, (ast.Attribute, ast.Subscript)) and not isinstance(child.ctx, ast.Load):
            found["stores"].add(_base(child))
        elif isinstance(child, ast.Call):
            if isinstance(child.func, ast.Attribute):
                found["methods"].add(_base(child.func))
            arguments = [*child.args, *(k.value for k in child.keywords)]  # a call's result is a new object
            found["arguments"] |= {_base(a) for a in arguments if not isinstance(a, ast.Call)}
        _scan(child, found)
    for key in ("stores", "arguments", "methods"):
        found[key] -= {None, *dir(builtins)}
    return found


def _base(node):
    """The name at the root of `a.b[c].d(...)`, or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


# --- the server -----------------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: its base URL, token, and a tiny REST client."""

    def __init__(self, url, token, proc, home):
        self.url, self.token, self.proc, self.home = url, token, proc, home

    def api(self, path, method="GET"):
        req = urllib.request.Request(
            f"{self.url}api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def app_url(self):
        # reset: start from an empty workspace, not the one a previous page left
        return f"{self.url}lab?reset&token={self.token}"

    def kernels_idle(self):
        return all(k["execution_state"] == "idle" for k in self.api("kernels"))

    def shutdown_kernels(self):
        for s in self.api("sessions"):
            with contextlib.suppress(urllib.error.URLError):
                self.api(f"sessions/{s['id']}", method="DELETE")


@contextlib.contextmanager
def running_lab(root=ROOT, timeout=120):
    """Start JupyterLab on 127.0.0.1 (free port, random token, private dirs); always stop it."""
    home = Path(tempfile.mkdtemp(prefix="lab-"))
    token, port = secrets.token_hex(16), free_port()
    settings = home / "lab" / "user-settings"
    for name, values in LAB_SETTINGS.items():
        f = settings / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values))
    # No language server (it writes .virtual_documents/ into the repo) and no terminals.
    (home / "config").mkdir()
    (home / "config" / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_lsp": False, "jupyter_server_terminals": False}}})
    )
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "lab" / "workspaces"),
        IPYTHONDIR=str(home / "ipython"),
        JUPYTER_PLATFORM_DIRS="1",
        PYTHONHASHSEED="0",
    )
    # The kernelspec (python3) and the widgets lab extension live under sys.prefix/share/jupyter,
    # which Jupyter searches whatever JUPYTER_DATA_DIR says; no user-level path is needed.
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        # window.jupyterapp: one loaded page opens notebook after notebook (loading JupyterLab costs seconds)
        "--LabApp.expose_app_in_browser=True",
        "--ServerApp.open_browser=False",
        "--allow-root",
        # checkpoints (written when a notebook opens) go to the private folder, not into the repo
        f"--FileCheckpoints.checkpoint_dir={home / 'checkpoints'}",
    ]
    log = open(home / "server.log", "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root, start_new_session=True)
    lab = Lab(f"http://127.0.0.1:{port}/", token, proc, home)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{server_log(lab)}")
            try:
                lab.api("status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not answer in {timeout} s:\n{server_log(lab)}") from None
                time.sleep(0.5)
        yield lab
    finally:
        with contextlib.suppress(Exception):
            lab.shutdown_kernels()
        with contextlib.suppress(Exception):
            lab.api("shutdown", method="POST")  # stops its kernels too
        for stop in (lambda: None, proc.terminate, proc.kill):
            stop()
            try:
                proc.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def server_log(lab, tail=4000):
    with contextlib.suppress(OSError):
        return (lab.home / "server.log").read_text(errors="replace")[-tail:]
    return ""


# --- the notebook in the browser --------------------------------------------------------------------

# A top-level widget view in a cell's output (not a widget nested inside an Output widget).
WIDGET_ROOT = ".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output > .jupyter-widgets"
ERROR_JS = """() => Array.from(document.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    .map(e => e.innerText).filter(t => t.includes('Traceback') || /^\\w*(Error|Exception)\\b/m.test(t))"""
PROMPTS_JS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt'))
    .map(e => e.innerText.trim())"""


def launch_browser(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def dialogs(page):
    """The titles/texts of the dialogs JupyterLab shows right now."""
    return [d.inner_text() for d in page.locator(".jp-Dialog").all()]


def wait_kernel_idle(lab, page=None, timeout=60, settle=0.5):
    """Wait until every kernel on the server reports idle for `settle` seconds in a row."""
    deadline, idle_since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        kernels = lab.api("kernels")
        if kernels and all(k["execution_state"] == "idle" for k in kernels):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= settle:
                return
        else:
            idle_since = None
        (page.wait_for_timeout(100) if page else time.sleep(0.1))
    raise TimeoutError(f"kernel not idle after {timeout} s")


def load_lab(page, lab, timeout=120):
    """Load JupyterLab in `page` and wait until it has started and restored its (empty) workspace."""
    page.goto(lab.app_url(), timeout=timeout * 1000)
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=timeout * 1000)
    page.evaluate("async () => { await window.jupyterapp.restored; }")


def open_notebook(page, lab, rel, timeout=120):
    """Open `rel` in JupyterLab (loaded in `page` first if it is not) as the file browser does, and wait for its
    kernel; return the dialogs shown (none expected)."""
    if not page.evaluate("() => window.jupyterapp !== undefined"):
        load_lab(page, lab, timeout)
    if page.locator(".jp-NotebookPanel").count():
        raise RuntimeError(f"a notebook is still open in the page: close_documents(page) before opening {rel}")
    # not awaited: the command's promise waits for the kernel, which a "Select Kernel" dialog holds up
    page.evaluate("path => { window.jupyterapp.commands.execute('docmanager:open', {path}); }", rel)
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    while not lab.api("sessions") and time.monotonic() < deadline:
        if page.locator(".jp-Dialog").count():
            break
        page.wait_for_timeout(200)
    if not page.locator(".jp-Dialog").count():
        wait_kernel_idle(lab, page, timeout=max(1, deadline - time.monotonic()))
        page.wait_for_timeout(500)  # a late "Select Kernel" dialog would show by now
    return dialogs(page)


def close_documents(page, lab, timeout=30):
    """Dismiss every dialog, close every open document unsaved and shut down every kernel, leaving JupyterLab
    loaded and empty for the next notebook."""
    deadline = time.monotonic() + timeout
    while page.locator(".jp-Dialog").count():
        if time.monotonic() > deadline:
            raise TimeoutError(f"dialogs still open after {timeout} s: {dialogs(page)}")
        page.keyboard.press("Escape")
        page.wait_for_timeout(100)
    # dispose() closes a widget without asking to save it (autosave is off: nothing is written)
    page.evaluate("() => { for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) w.dispose(); }")
    page.wait_for_selector(".jp-NotebookPanel", state="detached", timeout=timeout * 1000)
    lab.shutdown_kernels()


def menu(page, top, item):
    """Click a main-menu entry, e.g. menu(page, "Run", "Run All Cells")."""
    page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click()
    page.locator(".lm-Menu-content .lm-Menu-itemLabel").filter(
        has_text=re.compile(f"^{re.escape(item)}$")
    ).first.click()


def run_all(page, lab, timeout=600):
    """Clear every output, run all cells from the Run menu, and wait until all ran and the kernel is idle.

    Returns the tracebacks shown (an empty list when every cell ran cleanly)."""
    _clear_outputs(page)
    menu(page, "Run", "Run All Cells")
    return _wait_until_ran(page, lab, None, timeout)


def run_cells(page, lab, cells, timeout=600):
    """Clear every output, then run the code cells `cells` (indices as in `widget_cells`) one after another, as
    a learner who runs only those would (Run > "Run Selected Cell" on each), and none other. Wait until they all
    ran and the kernel is idle; return the tracebacks shown (none when clean)."""
    _clear_outputs(page)
    ordinals = page.evaluate(RUN_CELLS_JS, sorted(cells))  # each cell's place among the code cells
    return _wait_until_ran(page, lab, ordinals, timeout)


# Run cells `indices` of the open notebook in order, each as "Run Selected Cell" would (not awaited: the Python
# side polls the prompts); return each one's place among the code cells.
RUN_CELLS_JS = """indices => {
    const app = window.jupyterapp, nb = app.shell.currentWidget.content;
    nb.mode = 'command';
    (async () => {
        for (const i of indices) {
            nb.activeCellIndex = i;
            nb.deselectAll();
            await app.commands.execute('notebook:run-cell');
        }
    })();
    return indices.map(i => nb.widgets.slice(0, i).filter(c => c.model.type === 'code').length);
}"""


def _clear_outputs(page):
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(f"() => ({PROMPTS_JS})().every(p => !/\\d/.test(p))", timeout=30_000)


def _wait_until_ran(page, lab, ordinals, timeout):
    """Wait until the code cells at `ordinals` (places among the code cells; None: all) ran and the kernel is
    idle; return the tracebacks shown, or the first ones as soon as they show. No other cell may have run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        errors = page.evaluate(ERROR_JS)
        if errors:
            return errors
        prompts = page.evaluate(PROMPTS_JS)
        wanted = range(len(prompts)) if ordinals is None else ordinals
        if prompts and all(re.fullmatch(r"\[\d+\]:", prompts[k]) for k in wanted):
            wait_kernel_idle(lab, page, timeout=60)
            others = [p for k, p in enumerate(page.evaluate(PROMPTS_JS)) if k not in wanted and re.search(r"\d", p)]
            if others:
                raise AssertionError(f"cells other than the code cells {list(wanted)} ran too: prompts {others}")
            return page.evaluate(ERROR_JS)
        page.wait_for_timeout(250)
    raise TimeoutError(f"the cells did not finish in {timeout} s; prompts: {page.evaluate(PROMPTS_JS)}")


def cell_source(page, i):
    """The source of cell i (0-based, markdown included) of the open notebook, as JupyterLab holds it (with the
    jupytext pairing, read from lessons_src/)."""
    return page.evaluate(
        "i => window.jupyterapp.shell.currentWidget.content.widgets[i].model.sharedModel.getSource()", i
    )


# --- the widgets' controls --------------------------------------------------------------------------

SIGNATURE_JS = """root => Array.from(root.querySelectorAll('.widget-output img')).map(i => i.src).join('|')"""
ARM_JS = """root => {
    const sig = () => Array.from(root.querySelectorAll('.widget-output img')).map(i => i.src).join('|');
    const before = sig();
    window.__t0 = null;
    for (const kind of ['keydown', 'input', 'change', 'click'])
        document.addEventListener(kind, () => { if (window.__t0 === null) window.__t0 = performance.now(); },
                                  {capture: true, once: true});
    window.__changed = new Promise(resolve => {
        const obs = new MutationObserver(() => {
            const now = sig();
            if (now !== before && now !== '') { obs.disconnect(); resolve(performance.now()); }
        });
        obs.observe(root, {subtree: true, childList: true, attributes: true, attributeFilter: ['src']});
        setTimeout(() => { obs.disconnect(); resolve(null); }, %d);
    });
}"""


LABEL_JS = """el => {
    const clean = s => (s || '').replace(/\\u200b/g, '').trim();
    const box = el.closest('.widget-inline-hbox, .widget-toggle-buttons');
    let text = box ? clean(box.querySelector(':scope > .widget-label')?.innerText) : '';
    if (!text && box) text = clean(box.querySelector('.widget-label-basic')?.innerText);
    return text || clean(el.getAttribute('aria-label')) || clean(el.innerText) || clean(el.getAttribute('title'));
}"""


def widget_roots(page):
    """Every top-level widget that has controls and draws images into an Output area."""
    roots = page.locator(WIDGET_ROOT).all()
    return [r for r in roots if r.locator(".widget-output").count() and controls(r)]


def controls(root):
    """The interactive controls of a widget, as (kind, label, locator) in screen order."""
    found = []

    def label(loc):
        return loc.evaluate(LABEL_JS)

    for h in root.locator(".noUi-handle").all():
        found.append(("slider", label(h), h))
    for s in root.locator(".widget-dropdown select").all():
        found.append(("dropdown", label(s), s))
    for c in root.locator(".widget-checkbox input[type=checkbox]").all():
        found.append(("checkbox", label(c), c))
    for b in root.locator("button.widget-toggle-button").all():
        if not b.locator("xpath=ancestor::*[contains(@class,'widget-toggle-buttons')]").count():
            found.append(("toggle", label(b), b))
    for g in root.locator(".widget-toggle-buttons").all():
        found.append(("toggle-buttons", label(g), g))
    for t in root.locator(".widget-text input[type=text], .widget-textarea textarea").all():
        found.append(("text", label(t), t))
    return [(k, n, loc) for k, n, loc in found if loc.is_visible() and loc.is_enabled()]


def _act(page, kind, loc):
    """Change one control by one step; return a description of what was done."""
    if kind == "slider":
        now, top = float(loc.get_attribute("aria-valuenow")), float(loc.get_attribute("aria-valuemax"))
        key = "ArrowLeft" if now >= top else "ArrowRight"
        text = loc.get_attribute("aria-valuetext") or f"{now:g}"
        loc.focus()
        page.keyboard.press(key)
        return f"{key} from {text}"
    if kind == "dropdown":
        options = loc.locator("option").all()
        values = [o.get_attribute("value") for o in options]
        current = loc.input_value()
        nxt = values[(values.index(current) + 1) % len(values)] if current in values else values[0]
        loc.select_option(nxt)
        return f"select {nxt!r} (was {current!r})"
    if kind in ("checkbox", "toggle"):
        loc.click()
        return "click"
    if kind == "toggle-buttons":
        button = loc.locator("button:not(.mod-active)").first
        text = button.inner_text()
        button.click()
        return f"choose {text!r}"
    if kind == "text":
        old = loc.input_value()
        words = old.split()
        new = " ".join(words[:-1]) if len(words) > 1 else (old[:-1] if len(old) > 1 else old + old)
        loc.fill(new)
        loc.press("Enter")
        return f"text {old!r} -> {new!r}"
    raise ValueError(f"unknown control kind {kind!r}")


def step_control(page, lab, root, kind, loc, timeout=30):
    """Change one control and wait for the widget's figure to change.

    Returns (latency in ms from the input event to the new image, or None when it never changed, what)."""
    before_value = loc.get_attribute("aria-valuenow") if kind == "slider" else None
    page.evaluate(ARM_JS % int(timeout * 1000), root.element_handle())
    what = _act(page, kind, loc)
    changed = page.evaluate("window.__changed")
    t0 = page.evaluate("window.__t0")
    if kind == "slider" and loc.get_attribute("aria-valuenow") == before_value:
        what += " (the slider did not move)"
    settle(page, lab, root)
    if changed is None or t0 is None:
        return None, what
    return changed - t0, what


def settle(page, lab, root, quiet=0.3, timeout=30):
    """Wait until the kernel is idle and the widget's images stopped changing for `quiet` seconds."""
    wait_kernel_idle(lab, page, timeout=timeout, settle=0.2)
    last, since = root.evaluate(SIGNATURE_JS), time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page.wait_for_timeout(100)
        now = root.evaluate(SIGNATURE_JS)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


def exercise_widgets(page, lab, repeats=1):
    """Step every control of every widget `repeats` times; return a list of dicts, one per step."""
    steps = []
    for w, root in enumerate(widget_roots(page)):
        name = widget_name(root)
        root.scroll_into_view_if_needed()
        for kind, label, loc in controls(root):
            for _ in range(repeats):
                latency, what = step_control(page, lab, root, kind, loc)
                steps.append(
                    {"widget": name, "index": w, "control": label, "kind": kind, "action": what, "latency_ms": latency}
                )
    return steps


def widget_name(root):
    """The `*_explorer` the widget's cell calls, else 'widget'."""
    cell = root.locator("xpath=ancestor::*[contains(@class,'jp-CodeCell')][1]")
    text = cell.locator(".jp-InputArea-editor").inner_text() if cell.count() else ""
    found = re.findall(r"(\w+_explorer)\(", text)
    return found[-1] if found else "widget"
