"""Latency from a slider step (or any control change) to the widget's new image, in real JupyterLab.

Starts a private JupyterLab (the browser tests' fixture), runs every lesson notebook that has a widget
in headless Chromium, steps each control `--repeats` times, and prints JSON: per widget the median
slider latency (target: under 300 ms) and per control its median. Usage:

    python benchmarks/widget_latency.py [--repeats 5] [--out latency.json] [NN ...]
"""

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

from utils.course.lessons import checkout

ROOT = checkout(__file__)
# The browser tests' driver, loaded from its file (tests/ is not a package).
_spec = importlib.util.spec_from_file_location("lab_driver", ROOT / "tests" / "browser" / "lab_driver.py")
lab_driver = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_driver)

TARGET_MS = 300.0


def summarize(steps):
    """Medians per widget (over its slider steps) and per control."""
    widgets = {}
    for s in steps:
        key = f"{s['notebook']}:{s['widget']}" + (f"#{s['index']}" if s["index"] else "")
        w = widgets.setdefault(key, {"sliders": [], "controls": {}})
        if s["latency_ms"] is None:
            w.setdefault("unchanged", []).append(f"{s['control']}: {s['action']}")
            continue
        if s["kind"] == "slider":
            w["sliders"].append(s["latency_ms"])
        w["controls"].setdefault(f"{s['kind']} {s['control']}", []).append(s["latency_ms"])
    out = {}
    for key, w in widgets.items():
        med = statistics.median(w["sliders"]) if w["sliders"] else None
        out[key] = {
            "median_slider_ms": None if med is None else round(med, 1),
            "slider_steps": len(w["sliders"]),
            "meets_target": None if med is None else med < TARGET_MS,
            "per_control_median_ms": {k: round(statistics.median(v), 1) for k, v in w["controls"].items()},
            **({"steps_without_change": w["unchanged"]} if "unchanged" in w else {}),
        }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="notebook name prefixes (default: every widget notebook)")
    parser.add_argument("--repeats", type=int, default=5, help="steps per control (default 5)")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    if not Path(lab_driver.CHROMIUM).exists():
        sys.exit(lab_driver.INSTALL_HINT)
    from playwright.sync_api import sync_playwright

    notebooks = [
        p for p in lab_driver.widget_notebooks() if not args.lessons or any(p.name.startswith(x) for x in args.lessons)
    ]
    steps, run_s = [], {}
    with lab_driver.running_lab() as lab, sync_playwright() as pw:
        browser = lab_driver.launch_browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            lab_driver.load_lab(page, lab)
            for path in notebooks:
                try:
                    start = time.perf_counter()
                    lab_driver.open_notebook(page, lab, path.relative_to(ROOT).as_posix())
                    errors = lab_driver.run_all(page, lab, timeout=900)
                    run_s[path.stem] = round(time.perf_counter() - start, 1)
                    if errors:
                        sys.exit(f"{path.name}: error output after Run All Cells:\n{errors[0][:2000]}")
                    for s in lab_driver.exercise_widgets(page, lab, repeats=args.repeats):
                        steps.append({"notebook": path.stem, **s})
                finally:
                    lab_driver.close_documents(page, lab)
        finally:
            browser.close()
    result = {
        "what": "ms from a control's input event to the new image in the widget's Output (Chromium, JupyterLab)",
        "target_ms": TARGET_MS,
        "repeats": args.repeats,
        "note": "wall-clock on a shared 2-core machine: measured under load",
        "open_and_run_all_s": run_s,
        "widgets": summarize(steps),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
