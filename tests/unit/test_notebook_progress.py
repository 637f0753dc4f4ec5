"""utils.figures.progress: in a kernel, the progress line is one display updated in place that ends as the
finished bar; elsewhere it is the model's tqdm bar."""

import pytest
import torch

from utils.figures import progress
from utils.figures.progress import NotebookProgressLine
from utils.translator.train import ProgressLine, train


class FakeHandle:
    def __init__(self, shown):
        self.shown = shown

    def update(self, obj):
        self.shown.append(repr(obj))


def test_in_a_kernel_one_display_is_updated_and_ends_as_the_finished_bar(monkeypatch):
    shown = []

    def display(obj, display_id=False):
        assert display_id is True
        shown.append(repr(obj))
        return FakeHandle(shown)

    monkeypatch.setattr(progress, "_notebook_display", lambda: display)
    bar = NotebookProgressLine(40, desc="training")
    assert bar.bar is None and "0/40" in shown[0]
    bar.update(10, 0.5)  # within `interval` of the start: not redrawn
    assert len(shown) == 1
    bar.close(40, 0.0123)
    assert len(shown) == 2 and "100%" in shown[-1] and "40/40" in shown[-1] and "loss=0.012" in shown[-1]
    assert shown[-1].split(" [")[0] == bar.text(40, 0.0123).split(" [")[0]  # the model's line, up to the timing


def test_outside_a_kernel_it_is_the_models_tqdm_bar(capsys):
    bar = NotebookProgressLine(5, desc="training")
    assert bar.handle is None and bar.bar is not None
    bar.close(5, 0.25)
    assert "5/5" in capsys.readouterr().err


def test_train_takes_a_progress_line_class_and_refuses_anything_else():
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 2)
    for bad in (1, "yes", int):
        with pytest.raises(TypeError, match="progress must be a bool or a ProgressLine class"):
            train(model, None, None, steps=1, progress=bad)
    assert issubclass(NotebookProgressLine, ProgressLine)
