"""Every relative link in the repo's markdown points at a file that exists, and every #anchor at a heading
of that file (the reference lives in per-folder READMEs that link each other)."""
from __future__ import annotations

import os
import re
import subprocess

from tests.conftest import REPO_ROOT

LINK_RE = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _markdown_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=60, check=True).stdout.split()
    return [f for f in listed if "node_modules" not in f]


def _anchors(path: str) -> set[str]:
    text = re.sub(r"```.*?```", "", (REPO_ROOT / path).read_text(), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.*)", text)}


def test_every_relative_link_and_anchor_resolves():
    files = _markdown_files()
    assert "README.md" in files and "modules/README.md" in files
    broken = []
    for path in files:
        for match in LINK_RE.finditer((REPO_ROOT / path).read_text()):
            url = match.group(2)
            if url.startswith(("http://", "https://", "mailto:")):
                continue
            target, _, anchor = url.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not (REPO_ROOT / resolved).exists():
                broken.append(f"{path}: {url} (no such file)")
            elif anchor and resolved.endswith(".md") and anchor not in _anchors(resolved):
                broken.append(f"{path}: {url} (no such heading)")
    assert broken == []


def test_the_root_readme_stays_short_and_links_each_folder_reference():
    readme = (REPO_ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12 * 1024
    for folder in ("modules", "tenants", "infra/local", "infra/deploy", "spark_jobs", "spark_jobs/quality",
                   "policies", "bench", "tests/reliability"):
        assert f"]({folder}/README.md)" in readme, folder
        assert (REPO_ROOT / folder / "README.md").is_file(), folder


def test_every_readme_section_the_cli_help_cites_exists():
    """`python -m spark_jobs --help` and its commands cite README sections by file and title
    (`spark_jobs/README.md "Schema evolution"`, or 'The pipeline > Recovery' for a nested one)."""
    cited = re.compile(r"""(spark_jobs/[\w/]*README\.md),?\s*["']+\s*([^"']+?)["']""")
    missing = []
    for source in sorted((REPO_ROOT / "spark_jobs").rglob("*.py")):
        text = re.sub(r'"\s*\n\s*"', "", source.read_text())  # join adjacent string literals
        text = re.sub(r"\s*\n\s*#\s*", " ", text)  # and comment lines
        for readme, title in cited.findall(text):
            headings = [_slug(h) for h in re.findall(r"(?m)^#{1,6} (.*)", (REPO_ROOT / readme).read_text())]
            # a title may be a heading's start ("Erasure" for "Erasure (GDPR Art. 17)")
            if not all(any(h.startswith(_slug(part)) for h in headings) for part in title.split(" > ")):
                missing.append(f"{source.relative_to(REPO_ROOT)}: {readme} {title!r}")
    assert missing == []
