"""Where this collection lives online. The repository URL is written down here and nowhere else:
the Colab setup cell of every lesson, the README's Colab/Binder links and the site are built from it.
"""

REPOSITORY = "https://github.com/attention-by-hand/attention-by-hand"
# The fixed release that the Colab setup cell installs and that the Colab/Binder links open, so a
# learner's notebook and its utils always come from the same commit. To publish one: set it here, run
# `python scripts/colab_setup.py`, commit, and tag that commit with this name (CONTRIBUTING.md).
RELEASE = "v0.2.0"
BRANCH = RELEASE  # what the links open
PACKAGE = "attention-by-hand"  # the distribution name in pyproject.toml
COLAB_EXTRA = "colab"  # [project.optional-dependencies] group: pinned packages Colab lacks

COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"


def _slug():
    return REPOSITORY.removeprefix("https://github.com/").strip("/")


def colab_url(notebook):
    """'Open in Colab' link of a notebook given by its path in the repo, e.g. notebooks/01_x.ipynb."""
    return f"https://colab.research.google.com/github/{_slug()}/blob/{BRANCH}/{notebook}"


def binder_url(notebook):
    """'Launch Binder' link that opens the notebook in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{_slug()}/{BRANCH}?urlpath=lab/tree/{notebook}"


def badges(notebook):
    """The two Markdown badges a lesson row of the README carries."""
    return (
        f"[![Open In Colab]({COLAB_BADGE})]({colab_url(notebook)}) "
        f"[![Launch Binder]({BINDER_BADGE})]({binder_url(notebook)})"
    )


def pip_requirement():
    """What the Colab setup cell installs: this repo's utils at RELEASE plus the pinned extras Colab lacks."""
    return f"{PACKAGE}[{COLAB_EXTRA}] @ git+{REPOSITORY}@{RELEASE}"


def colab_setup_source():
    """The first code cell of every lesson (tagged colab-setup): does nothing outside Colab, and on Colab
    stops with one line saying what failed and what to do when the install fails. Laid out as ruff formats it."""
    return "\n".join(
        [
            f"# On Google Colab, install this collection's `utils` ({RELEASE}) first; elsewhere this cell does nothing.",
            "import subprocess",
            "import sys",
            "",
            'if "google.colab" in sys.modules:',
            f'    requirement = "{pip_requirement()}"',
            '    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", requirement], capture_output=True, text=True)',
            "    if pip.returncode != 0:",
            '        reason = (pip.stderr.strip().splitlines() or ["pip gave no message"])[-1]',
            "        raise SystemExit(",
            '            f"Setup failed: pip could not install {requirement} ({reason}). "',
            '            "Check that this runtime is online, then run this cell again."',
            "        )",
        ]
    )
