"""The documentation stays true: docs/ names every setting with its default, every cap on a
trace, every route of the app and every ablation preset; README.md stays short; every relative
link points at a file (and a heading) that exists; mkdocs.yml's nav lists exactly the pages in
docs/; and the site builds with --strict, which a broken link fails."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify

from attnviz.limits import LIMITS
from attnviz.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.rglob("*.md"))


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def flat(text: str) -> str:
    """The text with every run of whitespace (a line break included) as one space."""
    return re.sub(r"\s+", " ", text)


def anchors(path: Path) -> set[str]:
    """The ids of a page's headings, as MkDocs (Python-Markdown's toc) makes them."""
    headings = re.findall(
        r"^#{1,6} (.+?)\s*$", re.sub(r"^```.*?^```", "", read(path), flags=re.M | re.S), flags=re.M
    )
    return {slugify(h, "-") for h in headings}


# Settings: the table in docs/configuration.md.


def table_rows() -> dict[str, str]:
    text = read(DOCS / "configuration.md")
    rows = re.findall(r"^\| `(ATTNVIZ_[A-Z_]+)` \| ([^|]+) \|", text, flags=re.M)
    return {name: default.strip() for name, default in rows}


def test_every_setting_is_in_the_docs_with_its_default():
    rows = table_rows()
    names = {f"ATTNVIZ_{field.upper()}" for field in Settings.model_fields}
    assert set(rows) == names
    # The code's defaults, not this environment's: tests/conftest.py sets ATTNVIZ_DATA_DIR.
    for field, info in Settings.model_fields.items():
        value = info.get_default(call_default_factory=True)
        shown = rows[f"ATTNVIZ_{field.upper()}"].strip("`")
        if value is None or value == "":
            assert shown.startswith("("), (field, shown)
        elif isinstance(value, bool):
            assert shown == str(value).lower(), (field, shown)
        elif isinstance(value, (int, float)):
            assert float(shown) == value, (field, shown)
        else:
            assert shown == str(value), (field, shown)


def test_every_ablation_preset_is_in_the_docs():
    from attnviz.training.ablations import PRESETS

    text = read(DOCS / "train.md")
    for name in PRESETS:
        assert f"| `{name}` |" in text, name


# Limits: the caps the HTTP API page states are attnviz/limits.py's.


def e(number: float) -> str:
    """A float as the docs write it: 2e11, 5e11."""
    return f"{number:g}".replace("e+", "e")


def test_the_caps_in_the_docs_are_the_limits():
    api = flat(read(DOCS / "http-api.md"))
    lim = LIMITS
    stated = [
        f"Caps: {lim.max_tokens} tokens, {lim.max_dim} dimensions, {lim.max_layers} layers, "
        f"{lim.max_heads} heads, {lim.max_token_chars} characters a label, "
        f"|value| <= {lim.max_abs_value:g}.",
        f"more than {lim.max_text_chars:,} characters 422",
        f"up to {lim.max_generate} tokens after the text",
        f"At most {lim.max_ablate} heads (`LIMITS.max_ablate`",
        f"(default {lim.default_top_k}, at most {lim.max_top_k}: `LIMITS.default_top_k`, `max_top_k`)",
        f"(default 128, at most {lim.max_thumb}; 0: never pooled)",
        f"bound of {e(lim.max_unembed_flops)} operations (`LIMITS.max_unembed_flops`",
        f"to {lim.max_corpus_tokens:,} (default {lim.default_corpus_tokens:,};",
        f"an upload at most {lim.max_corpus_chars:,} characters, 1 to {lim.max_clusters} `clusters`",
        f"cut into windows of {lim.max_corpus_text_tokens} tokens",
        f"at most {lim.max_images} (`LIMITS.max_images`)",
        f"{lim.max_image_pixels:,} pixels (`LIMITS.max_image_pixels`",
    ]
    for sentence in stated:
        assert sentence in api, sentence
    performance = flat(read(DOCS / "performance.md"))
    assert f"(`max_rollout_flops`, {e(lim.max_rollout_flops)}:" in performance


# Routes: the endpoints table of docs/http-api.md is the app's routes.


def documented_endpoints() -> set[tuple[str, str]]:
    rows = re.findall(
        r"^\| `(GET|POST|PUT|PATCH|DELETE) ([^`?]+)[^`]*` \|",
        read(DOCS / "http-api.md"),
        flags=re.M,
    )
    return {(method, re.sub(r"\{[^}]*\}", "{}", path)) for method, path in rows}


def test_every_route_of_the_app_is_in_the_http_api_page(app):
    routes = {
        (method.upper(), re.sub(r"\{[^}]*\}", "{}", path))
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    assert routes, "the app has no routes"
    assert routes - documented_endpoints() == set(), "routes missing from docs/http-api.md"
    assert documented_endpoints() - routes == set(), "docs/http-api.md lists routes the app lacks"


# The README and the pages' links.


def test_the_readme_stays_short():
    assert len(read(README).splitlines()) < 250


def links(path: Path) -> list[str]:
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", prose(read(path)))


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(path):
    found = links(path)
    if path == README:
        assert any(link.startswith("docs/") for link in found), "the README links no docs page"
    for link in found:
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        assert file.is_file(), f"{path.name}: {link} -> no such file"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{path.name}: {link} -> no such heading"


# A path in the repository named in prose or code (`attnviz/capture/lens.py`, `tests/support/`):
# when a module or folder moves, the page that names it must follow.
REPO_PATH = re.compile(
    r"(?<![\w/.-])((?:attnviz|tests|static|templates|deploy)/[\w./-]*\w/?)(?![\w.<*{-])"
)


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_every_repository_path_named_points_at_one_that_exists(path):
    named = {m for m in REPO_PATH.findall(read(path)) if "<" not in m and "*" not in m}
    assert sorted(p for p in named if not (ROOT / p).exists()) == []


def nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in nav_pages(value)]
    return [page for item in node for page in nav_pages(item)]


def test_the_nav_lists_every_page_once_and_no_other():
    config = yaml.safe_load(read(ROOT / "mkdocs.yml"))
    assert config["docs_dir"] == "docs" and config["strict"] is True
    listed = nav_pages(config["nav"])
    assert len(listed) == len(set(listed)), "a page listed twice"
    assert set(listed) == {str(p.relative_to(DOCS)) for p in PAGES}


# The site.


def build(docs: Path, site: Path) -> None:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"), docs_dir=str(docs), site_dir=str(site))
    mkdocs_build(config)


def test_the_site_builds_strict_with_every_page(tmp_path):
    build(DOCS, tmp_path / "site")
    for page in PAGES:
        assert (tmp_path / "site" / page.relative_to(DOCS).with_suffix(".html")).is_file(), page


@pytest.mark.slow
def test_a_broken_link_fails_the_build(tmp_path):
    from mkdocs.exceptions import Abort

    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    with (docs / "index.md").open("a", encoding="utf-8") as f:
        f.write("\n[a page that is not there](missing.md)\n")
    with pytest.raises(Abort, match="strict"):
        build(docs, tmp_path / "site")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_page_has_one_title(path):
    """One top-level heading a page: a second ``# `` would be a second title in the site's nav
    and in the page's outline."""
    titles = re.findall(r"^# \S", re.sub(r"^```.*?^```", "", read(path), flags=re.M | re.S),
                        flags=re.M)  # fmt: skip
    assert len(titles) == 1, f"{path.name}: {len(titles)} top-level headings"


# The Makefile's commands as the docs give them, dry-run (make -n: nothing installed, nothing
# downloaded), for a .venv that does not exist yet.


def dry_run(tmp_path: Path, *args: str) -> list[str]:
    import subprocess

    out = subprocess.run(["make", "-n", "--no-print-directory", f"VENV={tmp_path / 'venv'}",
                          *args], cwd=ROOT, capture_output=True, text=True, check=True)  # fmt: skip
    return out.stdout.splitlines()


def torch_line(lines: list[str]) -> str:
    (line,) = [x for x in lines if re.search(r"pip .*install .*\"torch", x)]
    return line


@pytest.mark.parametrize(
    ("args", "index", "requirement"),
    [
        ((), None, "torch==2.13.0"),  # pip's own indexes: PyPI's CUDA build, the CPU file here
        (("TORCH=cpu",), "https://download.pytorch.org/whl/cpu", "torch==2.13.0"),
        (("TORCH=cu128",), "https://download.pytorch.org/whl/cu128", "torch==2.13.0"),
        (("TORCH=torch==2.13.0+cpu",), None, "torch==2.13.0+cpu"),
    ],
)
def test_make_serve_installs_the_pytorch_build_the_docs_say(tmp_path, args, index, requirement):
    line = torch_line(dry_run(tmp_path, "serve", *args))
    assert line.endswith(f'"{requirement}"')
    assert ("--index-url" in line) == (index is not None)
    if index:
        assert f"--index-url {index} " in line
    said = flat(read(DOCS / "configuration.md"))
    for arg in args:
        assert f"make serve {arg}" in said


def test_make_docs_serve_serves_the_built_site_on_this_machine_alone(tmp_path):
    lines = dry_run(tmp_path, "docs-serve")
    assert any("mkdocs build --strict" in x for x in lines)
    assert lines[-1].endswith("-m http.server 8001 --bind 127.0.0.1 --directory site")
    assert "make docs-serve" in read(DOCS / "contributing.md")
