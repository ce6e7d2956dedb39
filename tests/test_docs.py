"""The documentation site: the strict build, and the configuration reference it generates
from the JSON schemas (debiaseval.workflow.config_reference)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from debiaseval.io.schema import experiment_names, load_schema
from debiaseval.workflow.config_reference import block_reference, config_reference

ROOT = Path(__file__).resolve().parents[1]

TOY = {
    "$defs": {
        "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "testset": {
            "type": "object",
            "description": "A test set.",
            "properties": {"strategy": {"enum": ["reg", "skew"], "description": "How."}},
        },
        "recommender": {"type": "object", "properties": {}},
        "source": {"type": "object", "properties": {}},
        "own_dataset": {"type": "object", "properties": {}},
        "resources": {"type": "object", "properties": {}},
    },
    "properties": {
        "seeds": {"type": "integer", "minimum": 1, "default": 2, "description": "Runs <n>."},
        "e1": {
            "type": "object",
            "description": "E1 | the first.",
            "properties": {
                "rho": {"$ref": "#/$defs/fraction", "default": 0.5, "description": "Size."},
                "testsets": {
                    "type": "object",
                    "additionalProperties": {"$ref": "#/$defs/testset"},
                    "default": {"REG": {"strategy": "reg"}},
                    "description": "Named test sets.",
                },
                "split": {
                    "type": "object",
                    "properties": {"train": {"type": ["number", "null"], "default": None}},
                },
            },
        },
    },
}


def test_block_reference_of_a_known_schema():
    assert block_reference("e1", TOY).splitlines() == [
        "| key | type | default | description |",
        "|---|---|---|---|",
        "| `e1.rho` | number in (0, 1] | `0.5` | Size. |",
        "| `e1.testsets` | mapping of name → [test set](../configuration.md#shared-testset) "
        '| `{"REG": {"strategy": "reg"}}` | Named test sets. |',
        "| `e1.split` | mapping |  |  |",
        "| `e1.split.train` | number or null | `null` |  |",
    ]


def test_config_reference_escapes_prose_and_describes_shared_blocks(monkeypatch):
    import debiaseval.workflow.config_reference as reference

    monkeypatch.setattr(reference, "experiment_names", lambda: ["e1"])
    text = config_reference(TOY)
    assert "| `seeds` | integer ≥ 1 | `2` | Runs &lt;n&gt;. |" in text
    assert "E1 \\| the first." in text
    assert "## Test set {#shared-testset}" in text
    assert '| `strategy` | one of `"reg"`, `"skew"` |  | How. |' in text


def _keys(schema, root, path=""):
    """Every dotted key of the real schema, with <name> for named entries."""
    from debiaseval.workflow.config_reference import SHARED_TITLES, _ref_name, _resolve

    node = _resolve(schema, root)
    for key, child in node.get("properties", {}).items():
        dotted = f"{path}.{key}" if path else key
        yield dotted
        if _ref_name(child) not in SHARED_TITLES:
            yield from _keys(child, root, dotted)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and _ref_name(extra) not in SHARED_TITLES:
        yield from _keys(extra, root, f"{path}.<name>")


def test_every_key_of_the_schema_is_in_the_reference():
    schema = load_schema()
    text = config_reference(schema)
    keys = [key for key in _keys(schema, schema) if key not in experiment_names()]
    assert len(keys) > 150
    missing = [key for key in keys if f"| `{key}` |" not in text]
    assert not missing
    for name in experiment_names():
        assert f"## `{name}`" in text
        assert f"| `{name}.datasets` |" in block_reference(name)


@pytest.mark.slow
def test_docs_build_strictly(tmp_path):
    """mkdocs build --strict: a broken link or anchor, a page missing from the nav, or an API
    reference to a name that does not exist fails it."""
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    built = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("index.html")}
    for page in ("configuration", "experiments/e1", "own-recommender", "api/data"):
        assert f"{page}/index.html" in built
    reference = (tmp_path / "configuration" / "index.html").read_text()
    assert "e1.rho" in reference and "shared-testset" in reference
    api = (tmp_path / "api" / "evaluation" / "index.html").read_text()
    assert "<code>" in api and ":func:" not in api and ":class:" not in api  # roles dropped
    pages = {p.relative_to(tmp_path).as_posix(): p.read_text() for p in tmp_path.rglob("*.html")}
    # the equations are MathML, typeset at build time: none is left as TeX for a script
    e1 = pages["experiments/e1/index.html"]
    assert e1.count("<math") > 100 and 'display="block"' in e1
    raw = [page for page, text in pages.items() if re.search(r'"arithmatex">\s*\\[(\[]', text)]
    assert not raw
    # and no page loads a script, stylesheet or font from another host: the site reads offline
    remote = sorted({f"{page}: {m}" for page, text in pages.items() for m in _REMOTE.findall(text)})
    assert not remote


_REMOTE = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=\"(?:https?:)?//[^\"]+\"")
"""A tag that loads a resource from another host (a plain link ``<a href>`` does not)."""


def test_the_site_loads_nothing_from_a_cdn():
    """mkdocs.yml and the docs' hook name no script or stylesheet host: the math is MathML."""
    config = (ROOT / "mkdocs.yml").read_text()
    hooks = (ROOT / "docs" / "hooks.py").read_text()
    for text in (config, hooks):
        assert not re.search(r"https?://|cdn|mathjax", text, re.I)
    assert "extra_javascript" not in config and "extra_css" not in config


def test_typeset_turns_tex_into_mathml_and_names_a_bad_equation():
    pytest.importorskip("latex2mathml")
    hooks = _hooks()
    page = (
        '<p>a <span class="arithmatex">\\(\\hat{R}_{\\mathrm{IPS}} &lt; 1\\)</span></p>\n'
        '<div class="arithmatex">\\[\\frac{1}{|U|}\\sum_{u} x_u\\]</div>'
    )
    out = hooks.typeset(page)
    assert out.count("<math") == 2 and 'display="block"' in out
    assert "\\(" not in out and "\\[" not in out and "<mo>&#x0003C;</mo>" in out
    assert out.startswith('<p>a <span class="arithmatex"><math')
    for tex, reason in (
        ("x^", "MissingSuperScriptOrSubscriptError"),
        (r"\foo x", r"unknown command \foo"),
    ):
        with pytest.raises(ValueError) as error:
            hooks.typeset(f'<span class="arithmatex">\\({tex}\\)</span>', "e1.md")
        assert str(error.value).startswith(f"e1.md: cannot typeset the equation {tex!r}: {reason}")


def _hooks():
    """docs/hooks.py as a module (MkDocs loads it by path; it is not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


JSON_SCHEMA_KEYWORDS = {
    "$schema",
    "$defs",
    "$ref",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "type",
    "enum",
    "const",
    "properties",
    "additionalProperties",
    "propertyNames",
    "required",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
}


def test_every_schema_keyword_is_a_json_schema_keyword():
    """A comma in an unquoted YAML flow-mapping description ({description: a, b}) silently
    cuts it and adds a bogus key; the reference would show the cut text."""

    def walk(node, path):
        if isinstance(node, dict):
            for key, child in node.items():
                if path and path[-1] in ("properties", "$defs"):
                    yield from walk(child, [*path, key])
                elif key not in ("default", "examples", "const", "enum"):
                    if key not in JSON_SCHEMA_KEYWORDS:
                        yield ".".join(map(str, [*path, key]))
                    yield from walk(child, [*path, key])
        elif isinstance(node, list):
            for index, child in enumerate(node):
                yield from walk(child, [*path, index])

    assert not list(walk(load_schema(), []))


def test_the_readme_links_to_pages_that_exist():
    """The README is the landing page: every relative link names a file of the repository,
    and every docs page it links to is in the site's nav."""
    import re

    readme = (ROOT / "README.md").read_text()
    targets = {
        link.split("#", 1)[0]
        for link in re.findall(r"\]\(([^)]+)\)", readme)
        if "://" not in link and not link.startswith("#")
    }
    assert {"docs/experiments/e1.md", "docs/experiments/e6.md", "docs/configuration.md"} <= targets
    missing = sorted(t for t in targets if not (ROOT / t).exists())
    assert not missing
    nav = (ROOT / "mkdocs.yml").read_text()
    for target in targets:
        if target.startswith("docs/"):
            assert target.removeprefix("docs/") in nav, target


def test_the_config_readme_names_every_config_file():
    """config/README.md, as in the Snakemake catalogue: every file of config/ in its table, every
    `--configfile` it gives exists, and its relative links name files of the repository."""
    import re

    readme = (ROOT / "config" / "README.md").read_text(encoding="utf-8")
    files = {p.name for p in (ROOT / "config").glob("*.yaml")}
    listed = set(re.findall(r"^\| `([\w.-]+\.yaml)` \|", readme, re.M))
    assert files and listed == files
    given = re.findall(r"config/([\w.-]+\.yaml)", readme)
    assert given and set(given) <= files
    links = [link.split("#", 1)[0] for link in re.findall(r"\]\(([^)]+)\)", readme)]
    assert links and all((ROOT / "config" / link).exists() for link in links), links
    for word in ("--configfile", "--config", "src/debiaseval/schemas", "snakemake.utils.validate"):
        assert word in readme, word


def test_every_table_row_has_as_many_cells_as_its_header():
    """A | inside an equation of a table cell splits the row silently (one inside a code span
    does not: Python-Markdown's tables skip code spans)."""
    import re

    bad = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        header = None
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if not line.startswith("|"):
                header = None
                continue
            text = re.sub(r"`[^`]*`", "code", line.strip())
            cells = len(re.split(r"(?<!\\)\|", text)) - 2
            if header is None:
                header = cells
            elif cells != header:
                bad.append(f"{page.relative_to(ROOT)}:{number}: {cells} cells, header {header}")
    assert not bad


def test_no_page_holds_a_control_character():
    """A TeX macro written through a Python string (\\top, \\theta) turns into a tab: catch it."""
    bad = [
        f"{page.relative_to(ROOT)}:{n}"
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if any(ord(c) < 32 for c in line)
    ]
    assert not bad, bad
