"""The README and docs/: every relative link resolves to a file of the repository (and a #heading to a heading
of it), and nothing points outside the repository: no ../shared, no notes a user of the project does not have."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# Text files a user of the project has: where a note outside the repository must not be named.
TEXT = {".py", ".md", ".json", ".js", ".css", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml"}
OUTSIDE = re.compile(r"\.\./shared|\bFACTS\b")  # the project's working notes, which stay outside it
SKIP_DIRS = {".git", ".venv", ".venv-vllm", "__pycache__", ".pytest_cache", "artifacts", "node_modules"}


def links(page: Path) -> list[str]:
    """The targets of a Markdown page's links and images, outside code blocks."""
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m) for m in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)  # http:, https:, mailto: are not checked here


def test_the_pages_exist():
    names = {p.name for p in PAGES}
    assert {"README.md", "what-it-teaches.md", "architecture.md", "operators.md", "security.md",
            "performance.md", "tour.md"} <= names, names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in filter(relative, links(page)):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.is_file() or ROOT not in file.parents:
            broken.append(f"{target}: no file {file}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading #{fragment} in {file.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_readme_keeps_its_screenshot_and_links_what_the_page_teaches():
    found = links(ROOT / "README.md")
    assert "assets/screenshot.png" in found
    assert "docs/what-it-teaches.md" in found and "docs/tour.md" in found


README_MAX_BYTES = 15_000  # the README is read on one visit; the tour of the tabs lives in docs/tour.md


def test_the_readme_stays_short():
    size = len((ROOT / "README.md").read_bytes())
    assert size < README_MAX_BYTES, f"README.md is {size:,} bytes: move detail to a page of docs/ and link it"


def test_the_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"^```bash\n(.*?)^```", text, re.S | re.M).group(1)
    assert [line.split()[:2] for line in first.splitlines()] == [["make", "run"], ["make", "test"]]


def test_nothing_names_a_note_outside_the_repository():
    named = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            file = Path(folder) / name
            if file.suffix not in TEXT or file == Path(__file__).resolve():
                continue
            text = file.read_text(encoding="utf-8", errors="replace")
            named += [f"{file.relative_to(ROOT)}: {m.group()}" for m in OUTSIDE.finditer(text)]
    assert not named, "name docs/what-it-teaches.md instead: " + "; ".join(named)
