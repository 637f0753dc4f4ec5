"""What a learner reads: no references to files they cannot see, no tooling words, a Sources list."""

import re

import jupytext
import pytest

from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
SOURCES = [lesson.source for lesson in lessons() if lesson.source.exists()]
SEED_REF = re.compile(r"\bseeds? 00\d\b", re.I)
# Tooling words a learner should never meet in a lesson's text or visible code.
TOOLING = re.compile(r"nbval|noqa|\bCI\b|the tests? compares?|this machine|\b\d+ (CPU )?cores\b", re.I)


def learner_text(path):
    """Every cell's visible text (cell markers and tags are metadata, not text)."""
    return [(i, c.cell_type, c.source) for i, c in enumerate(jupytext.read(path).cells)]


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_no_source_document_is_called_a_seed(src):
    hits = [i for i, _, text in learner_text(src) if SEED_REF.search(text)]
    assert not hits, f"{src.name} cells {hits} say 'seed 00N': name the source (see the Sources list)"


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_no_tooling_words_in_learner_text(src):
    hits = [(i, TOOLING.search(text).group()) for i, _, text in learner_text(src) if TOOLING.search(text)]
    assert not hits, f"{src.name}: tooling words in cells {hits}; use cell tags, keep notes in CONTRIBUTING.md"


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_lesson_ends_with_its_sources(src):
    markdown = [text for _, kind, text in learner_text(src) if kind == "markdown"]
    assert any(re.search(r"^#+ .*Sources", text, re.M) for text in markdown[-3:]), (
        f"{src.name}: end the lesson with a 'Sources' section naming what it cites"
    )


def test_package_readme_and_exercises_never_say_seed():
    files = [ROOT / "README.md", *(ROOT / "utils").rglob("*.py")]
    hits = [f.relative_to(ROOT).as_posix() for f in files if SEED_REF.search(f.read_text())]
    assert not hits, f"these files say 'seed 00N' to learners: {hits}"


def test_every_lesson_keeps_its_main_line_within_its_word_limit(script):
    rows = script("word_counts").table()
    assert rows, "no lesson was counted"
    over = [(r["lesson"], r["main"], r["limit"]) for r in rows if r["main"] > r["limit"]]
    assert not over, f"(lesson, main-line words, limit): {over}; move detours to a 'Going further' section"


MAIN_SECTION = re.compile(r"^## \d+\.", re.M)
CHECK_CALL = re.compile(r"\bcheck\.(\w+)\(")


def sections(src):
    """{level-2 heading: the (cell type, text) blocks under it, up to the next level-2 heading}."""
    found, current = {}, None
    for cell in jupytext.read(src).cells:
        for block in re.split(r"(?m)^(?=## )", cell.source) if cell.cell_type == "markdown" else [cell.source]:
            if cell.cell_type == "markdown" and block.startswith("## "):
                current = block.splitlines()[0]
                found[current] = []
            if current:
                found[current].append((cell.cell_type, block))
    return found


def main_sections(src):
    """The numbered sections ('## 1. ...') of a lesson, as `sections` gives them."""
    return {title: blocks for title, blocks in sections(src).items() if MAIN_SECTION.match(title)}


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_every_main_section_has_a_prediction_checked_after_the_code_that_settles_it(src):
    import importlib

    module = importlib.import_module(f"utils.course.exercises.lesson{src.stem[:2]}")
    predictions = {name for name, e in vars(module).items() if getattr(e, "kind", None) == "prediction"}
    sections = main_sections(src)
    assert sections, f"{src.name} has no numbered section ('## 1. ...')"
    missing = []
    for title, cells in sections.items():
        code = [text for kind, text in cells if kind == "code"]
        checked = [i for i, text in enumerate(code) for name in CHECK_CALL.findall(text) if name in predictions]
        if not checked or checked[0] < 2:  # a guess cell and the code that settles it come before the check
            missing.append(title)
    assert not missing, f"{src.name}: these sections have no prediction checked after its demonstration: {missing}"


STRING = re.compile(r"(?:[rfbu]{0,2})(\"\"\"[\s\S]*?\"\"\"|\"[^\"\n]*\"|'[^'\n]*')")
TOLERANCE = re.compile(r"(<|<=|≤|within)\s*\d(\.\d+)?e-\d+|\|diff\|")


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_checks_say_their_claim_in_plain_words_not_a_log_line_or_a_tolerance(src):
    loud = []
    for i, kind, text in learner_text(src):
        if kind != "code":
            continue
        for literal in STRING.findall(text):
            if "PASS" in literal or TOLERANCE.search(literal):
                loud.append((i, literal[:60]))
    assert not loud, f"{src.name}: a check prints 'PASS' or its tolerance (keep the tolerance in code): {loud[:5]}"


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_the_exercises_section_has_four_exercises_two_of_them_transfer(src):
    import importlib

    module = importlib.import_module(f"utils.course.exercises.lesson{src.stem[:2]}")
    kinds = {name: getattr(e, "kind", None) for name, e in vars(module).items()}
    exercises = [blocks for title, blocks in sections(src).items() if title.startswith("## Exercises")]
    code = [text for blocks in exercises for kind, text in blocks if kind == "code"]
    called = []
    for text in code:
        called += [name for name in CHECK_CALL.findall(text) if name in kinds and name not in called]
    transfer = [name for name in called if kinds[name] == "transfer"]
    assert len(called) >= 4 and len(transfer) >= 2, (
        f"{src.name}: its Exercises section checks {called} ({len(transfer)} transfer); it needs 4, 2 of them transfer"
    )


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_every_link_within_a_lesson_leads_to_one_of_its_headings(src):
    """A link `[..](#id)` works in JupyterLab (and on the site) only when a heading's id is exactly `id`: its
    title with spaces as hyphens, case kept ('## Going further' -> 'Going-further')."""
    cells = jupytext.read(src).cells
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    ids = {title.strip().replace(" ", "-") for title in re.findall(r"(?m)^#{1,6} (.+)$", text)}
    broken = sorted(set(re.findall(r"\]\(#([^)\s]+)\)", text)) - ids)
    assert not broken, f"{src.name}: links to {broken}, which no heading has; headings: {sorted(ids)[:12]}"
