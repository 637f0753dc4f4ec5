"""Count the Markdown words of each lesson: its main line, and its "Going further" / "Errata" part.

Usage: python scripts/word_counts.py [--json]
The main line is every Markdown cell outside a level-2 section whose title starts with "Going further"
or "Errata"; display math, inline math and code spans are not words.
"""

import argparse
import json
import re
import sys

import jupytext

from utils.course.lessons import lessons

LIMIT = 2500  # words on the main line
LIMITS = {"00": 2000}  # lesson 00 is the shortest door into the course
DETOUR = re.compile(r"^##\s+(Going further|Errata)\b", re.I)
SECTION = re.compile(r"^##\s+\S")
NOT_WORDS = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]*`|<[^>\n]+>|\]\([^)\s]*\)", re.S)
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")


def words(text):
    """The words of a Markdown text: math, code spans, HTML tags and link targets removed."""
    return len(WORD.findall(NOT_WORDS.sub(" ", text)))


def count(path):
    """(main-line words, detour words) of one lesson source."""
    main = detour = 0
    in_detour = False
    for cell in jupytext.read(path).cells:
        if cell.cell_type != "markdown":
            continue
        for block in re.split(r"(?m)^(?=##\s)", cell.source):
            if SECTION.match(block):
                in_detour = bool(DETOUR.match(block))
            if in_detour:
                detour += words(block)
            else:
                main += words(block)
    return main, detour


def limit(stem):
    """The main-line word limit of a lesson named NN_..."""
    return LIMITS.get(stem[:2], LIMIT)


def table():
    """One row per lesson source: name, main-line words, detour words, limit."""
    rows = []
    for lesson in lessons():
        if lesson.source.exists():
            main, detour = count(lesson.source)
            rows.append(
                {
                    "lesson": lesson.source.stem,
                    "main": main,
                    "going_further": detour,
                    "limit": limit(lesson.source.stem),
                }
            )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    rows = table()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'lesson':36} {'main line':>9} {'limit':>6} {'going further':>13}")
    for r in rows:
        flag = "" if r["main"] <= r["limit"] else "  over"
        print(f"{r['lesson']:36} {r['main']:9} {r['limit']:6} {r['going_further']:13}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
