"""benchmarks/widget_latency.py's summary: medians per widget over slider steps, per control, and
steps whose figure never changed listed rather than hidden (no timing is asserted here)."""

import pytest


@pytest.fixture
def widget_latency(script):
    return script("widget_latency", folder="benchmarks")


def step(control, kind, ms, index=0):
    return {
        "notebook": "01_x",
        "widget": "pe_explorer",
        "index": index,
        "control": control,
        "kind": kind,
        "action": "ArrowRight from 3",
        "latency_ms": ms,
    }


def test_summary_medians_and_unchanged_steps(widget_latency):
    steps = [
        step("a", "slider", 100),
        step("a", "slider", 300),
        step("b", "slider", 200),
        step("c", "dropdown", 900),
        step("d", "slider", None),
    ]
    ((key, w),) = widget_latency.summarize(steps).items()
    assert key == "01_x:pe_explorer"
    assert w["median_slider_ms"] == 200 and w["slider_steps"] == 3 and w["meets_target"] is True
    assert w["per_control_median_ms"] == {"slider a": 200, "slider b": 200, "dropdown c": 900}
    assert w["steps_without_change"] == ["d: ArrowRight from 3"]


def test_a_slow_widget_misses_the_target_and_widgets_are_kept_apart(widget_latency):
    steps = [step("a", "slider", 400), step("a", "slider", 500, index=1)]
    summary = widget_latency.summarize(steps)
    assert set(summary) == {"01_x:pe_explorer", "01_x:pe_explorer#1"}
    assert summary["01_x:pe_explorer"]["meets_target"] is False
