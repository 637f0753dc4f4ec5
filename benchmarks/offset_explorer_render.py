"""Time plot_offset_explorer from parameters to a rendered PNG (the widget's redraw work); prints JSON.

Usage: python benchmarks/offset_explorer_render.py   (the DESIGN target is < 300 ms per slider step)
"""

import io
import json
import statistics
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from utils.figures.plotting import plot_offset_explorer  # noqa: E402

SETTINGS = [
    dict(d_model=64, base=10000.0, k=10, pair=0, t=3),
    dict(d_model=512, base=10000.0, k=60, pair=200, t=50),
    dict(d_model=2, base=10.0, k=-60, pair=0, t=0),
]


def render_ms(settings, repeats=7):
    """Median milliseconds to draw the figure and encode it as PNG (what the inline backend sends)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fig = plot_offset_explorer(**settings)
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


if __name__ == "__main__":
    plot_offset_explorer()  # warm up imports and font cache
    plt.close("all")
    print(
        json.dumps(
            {
                "offset_explorer_render_ms": [dict(s, median_ms=round(render_ms(s), 1)) for s in SETTINGS],
                "note": "measured on a shared 2-core machine under load",
            },
            indent=1,
        )
    )
