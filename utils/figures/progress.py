"""The translator's training progress line in a notebook: a display updated by id, so the saved output is the
finished bar, never a frozen one (the model's own ProgressLine draws on stderr)."""

from utils.translator.train import ProgressLine


class NotebookProgressLine(ProgressLine):
    """ProgressLine drawn as one display updated in place inside a Jupyter kernel; elsewhere the tqdm bar."""

    def start_bar(self):
        display = _notebook_display()
        self.handle = None if display is None else display(_Line(self.text(0, None)), display_id=True)
        return super().start_bar() if self.handle is None else None

    def show(self, n, loss):
        if self.handle is None:
            super().show(n, loss)
        else:
            self.handle.update(_Line(self.text(n, loss)))


class _Line:
    """A plain-text display object (its repr is the line)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _notebook_display():
    """IPython's display function when running inside a Jupyter kernel, else None."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    return display if shell is not None and hasattr(shell, "kernel") else None
