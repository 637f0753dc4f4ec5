"""Where this collection lives online. The repository URL is written down here and nowhere else:
the Colab setup cell of every lesson, the README's Colab/Binder links and the site are built from it.
"""

REPOSITORY = "https://github.com/attention-by-hand/attention-by-hand"
BRANCH = "main"
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
    return (f"[![Open In Colab]({COLAB_BADGE})]({colab_url(notebook)}) "
            f"[![Launch Binder]({BINDER_BADGE})]({binder_url(notebook)})")


def pip_requirement():
    """What the Colab setup cell installs: this repo's utils plus the pinned extras Colab lacks."""
    return f"{PACKAGE}[{COLAB_EXTRA}] @ git+{REPOSITORY}"


def colab_setup_source():
    """The first code cell of every lesson (tagged colab-setup): does nothing outside Colab."""
    return "\n".join([
        "# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.",
        "import sys",
        "",
        'if "google.colab" in sys.modules:',
        "    get_ipython().run_line_magic(",
        f"        \"pip\", \"install -q '{pip_requirement()}'\"",
        "    )",
    ])
