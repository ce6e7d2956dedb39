"""Code fingerprints blind to comments, docstrings and layout: a module's import closure, found
statically, and the hash of its code.

Two users, one mechanism:

- a **plugin recommender** (:func:`sources_hash`): its module and the modules of one's own it
  imports, so that an edit of the plugin, or of a helper it imports, reruns exactly the jobs
  that use it (:func:`debiaseval.recommenders.registry.plugin_source_hash`);
- a **workflow step** (:func:`file_closure` with ``within="debiaseval"``): the modules of the
  package that a rule's script imports, the stamp that reruns a job when the code its step
  runs changes, and only then (:mod:`debiaseval.workflow.code_stamps`).

- **Which files.** The walk follows every module that an ``import`` statement names
  (``import a.b``, ``from a import b``, relative imports, imports inside functions or ``try``
  blocks) and ``importlib.import_module(...)`` calls, found with :mod:`ast` and resolved with
  the import system's finders without executing any module; ``import a.b.c`` brings in
  ``a`` and ``a.b`` (package ``__init__`` modules) too. A name computed at run time from an
  f-string (``import_module(f"pkg.sub.{name}")``) is resolved with ``bindings`` (``{"name":
  "e3"}``) where they name every placeholder, else it brings in every module under its
  literal head (``pkg.sub``); any other computed name is not seen. Plugin walks stop at the
  standard library, at installed packages (site-packages) other than the plugin's own
  top-level package, and at ``debiaseval``; a walk ``within`` a package follows that
  package's modules only.
- **What is hashed.** Each file's abstract syntax tree without docstrings and without line
  numbers (``ast.dump(..., include_attributes=False)``), so that an edit of comments,
  docstrings, blank lines or layout changes nothing; a file that does not parse is hashed by
  its bytes. The dump's format belongs to the Python version, which is therefore part of the
  hash: a new minor version of Python (3.11 to 3.12) changes every hash once.

It imports only :mod:`debiaseval.io.files`.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import site
import sys
import sysconfig
from collections.abc import Callable, Mapping
from functools import cache
from importlib.machinery import ModuleSpec
from pathlib import Path

from debiaseval.io.files import write_text

__all__ = [
    "closure_hash",
    "file_closure",
    "import_closure",
    "load_parsed",
    "module_origin",
    "save_parsed",
    "source_digest",
    "sources_hash",
]

_OWN_PACKAGE = "debiaseval"
_INSTALLED_FOLDERS = ("site-packages", "dist-packages")

# SHA-256 of a file's bytes -> (digest of its code, its imports): a file is parsed once per
# process while its content is unchanged, wherever it lies (keyed by content, never stale).
_PARSED: dict[bytes, tuple[str, tuple[tuple[str, int], ...]]] = {}
_PARSED_SAVED = 0  # how many entries of _PARSED the last load or save held


@cache
def _library_roots() -> tuple[Path, ...]:
    """The standard library's and the installed packages' folders."""
    paths = sysconfig.get_paths()
    roots = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    roots += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    roots.append(site.getusersitepackages())
    return tuple(dict.fromkeys(Path(root).resolve() for root in roots))


def _is_library(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(part in _INSTALLED_FOLDERS for part in path.parts) or any(
        path.is_relative_to(root) for root in roots
    )


def _strip_docstrings(tree: ast.Module) -> ast.Module:
    """``tree`` without the docstrings of the module, its classes and its functions."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr):
                value = body[0].value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def _template(node: ast.expr) -> str | None:
    """The module name an ``import_module``/``__import__`` argument gives: a literal, or an
    f-string as a template whose placeholders are ``{name}`` for a plain name and ``{}`` for
    any other expression; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value.replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
            parts.append("{" + value.value.id + "}")
        else:
            parts.append("{}")
    return "".join(parts)


def _imports(tree: ast.Module) -> tuple[tuple[str, int], ...]:
    """Every import of ``tree`` as (name template, relative level): a name with ``{`` and ``}``
    doubled, or, for a computed ``import_module`` argument, the template of :func:`_template`.

    ``from a import b`` gives ``a`` and ``a.b`` (``b`` may be a submodule or an attribute);
    ``import a.b`` gives ``a.b``, whose parents are added when it is resolved.
    """
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if base:
                found.append((base, node.level))
            for alias in node.names:
                if alias.name != "*":
                    found.append((f"{base}.{alias.name}" if base else alias.name, node.level))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called not in ("import_module", "__import__"):
                continue
            template = _template(node.args[0])
            if template and not template.startswith("."):
                found.append((template, 0))
    return tuple(dict.fromkeys(found))


def _parsed(path: Path) -> tuple[str, tuple[tuple[str, int], ...]]:
    """The digest of file ``path``'s code and its imports, cached by the file's content."""
    data = path.read_bytes()
    key = hashlib.sha256(data).digest()
    cached = _PARSED.get(key)
    if cached is not None:
        return cached
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):  # does not parse: its bytes stand for it
        digest, imports = hashlib.sha256(b"bytes\0" + data).hexdigest(), ()
    else:
        imports = _imports(tree)
        dump = ast.dump(_strip_docstrings(tree), include_attributes=False)
        digest = hashlib.sha256(b"ast\0" + dump.encode()).hexdigest()
    _PARSED[key] = (digest, imports)
    return digest, imports


def _python() -> str:
    return f"python {sys.version_info[0]}.{sys.version_info[1]}"


def load_parsed(cache: str | Path) -> None:
    """Add the parses recorded in JSON file ``cache`` (by :func:`save_parsed`, under this
    Python version) to this process's; a missing, unreadable or foreign file adds none."""
    global _PARSED_SAVED
    try:
        record = json.loads(Path(cache).read_text(encoding="utf-8"))
        if record.get("python") != _python():
            return
        for key, (digest, imports) in record["files"].items():
            _PARSED.setdefault(bytes.fromhex(key), (digest, tuple(map(tuple, imports))))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return
    _PARSED_SAVED = len(_PARSED)


def save_parsed(cache: str | Path) -> None:
    """Write this process's parses (file content's SHA-256 -> code digest and imports) to JSON
    file ``cache`` (atomically), so that a later process parses only the files that changed;
    nothing when no file was parsed since the last load or save, or the folder is not
    writable."""
    global _PARSED_SAVED
    if len(_PARSED) == _PARSED_SAVED:
        return
    files = {key.hex(): [digest, imports] for key, (digest, imports) in _PARSED.items()}
    try:
        write_text(json.dumps({"python": _python(), "files": files}), cache)
    except OSError:
        return
    _PARSED_SAVED = len(_PARSED)


def source_digest(path: str | Path) -> str:
    """SHA-256 of the code of Python file ``path``: its AST without docstrings and positions
    (the bytes of a file that does not parse), under this Python version's AST format."""
    return _parsed(Path(path).resolve())[0]


def _find_spec(name: str) -> ModuleSpec | None:
    """The spec of module ``name`` from ``sys.modules`` or the import system's finders, without
    importing it or its parents (``importlib.util.find_spec`` would import the parents)."""
    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__spec__", None)
    parent, _, _ = name.rpartition(".")
    path = None
    if parent:
        parent_spec = _find_spec(parent)
        if parent_spec is None or parent_spec.submodule_search_locations is None:
            return None
        path = list(parent_spec.submodule_search_locations)
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, path)
        except (ImportError, ValueError, AttributeError, TypeError):
            continue
        if spec is not None:
            return spec
    return None


def module_origin(name: str) -> str | None:
    """The file module ``name`` is loaded from (source or compiled), found without importing it
    or its parents; None when it has none or is not found."""
    spec = _find_spec(name)
    origin = getattr(spec, "origin", None)
    return origin if spec is not None and spec.has_location and origin else None


def _source_file(spec: ModuleSpec | None) -> Path | None:
    origin = getattr(spec, "origin", None)
    if not (spec is not None and spec.has_location and origin and origin.endswith(".py")):
        return None  # built in, frozen, compiled or a namespace package: no source to hash
    return Path(origin).resolve()


def _submodules(name: str) -> list[str]:
    """Every module under package ``name`` (its subpackages' too), from its source folders."""
    spec = _find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return []
    found = []
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if parts and all(part.isidentifier() for part in parts):
                found.append(".".join((name, *parts)))
    return found


def _targets(template: str, level: int, package: str, bindings: Mapping[str, str]) -> list[str]:
    """The absolute module names an import of :func:`_imports` may load: its name, its template
    filled from ``bindings``, or every module under the template's literal head."""
    try:
        name = template.format_map(_Strict(bindings))
    except (KeyError, IndexError, ValueError):  # a placeholder ``bindings`` does not fill
        head = template.split("{")[0]  # module names hold no braces
        if "." not in head:
            return []
        name = head.rpartition(".")[0]
        try:
            base = importlib.util.resolve_name("." * level + name, package)
        except (ImportError, ValueError):
            return []
        return [base, *_submodules(base)]
    try:
        return [importlib.util.resolve_name("." * level + name, package)]
    except (ImportError, ValueError):  # beyond the top-level package
        return []


class _Strict(dict):  # type: ignore[type-arg]
    """Bindings whose missing key is an error (``str.format_map`` then gives up)."""

    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def _walk(
    seeds: list[tuple[str, int, str]],
    keep: Callable[[str, Path], bool],
    bindings: Mapping[str, str],
    located: dict[str, tuple[Path | None, bool]],
) -> dict[str, Path]:
    """Module name -> source file of every module reached from ``seeds`` ((name template,
    level, importing package) as :func:`_imports` gives them) that ``keep`` accepts, in name
    order; a module ``keep`` refuses is not followed. ``located`` keeps, between walks, where
    each name was found (its source file or None, and whether it is a package)."""
    found: dict[str, Path] = {}
    queue: list[str] = []
    seen: set[str] = set()

    def add(template: str, level: int, package: str) -> None:
        for target in _targets(template, level, package, bindings):
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # `import a.b.c` runs a, a.b and a.b.c
                candidate = ".".join(parts[:i])
                if candidate not in seen:
                    seen.add(candidate)
                    queue.append(candidate)

    for template, level, package in seeds:
        add(template, level, package)
    while queue:
        name = queue.pop()
        if name.partition(".")[0] in sys.builtin_module_names:
            continue
        if name not in located:
            spec = _find_spec(name)
            path = _source_file(spec)
            is_package = spec is not None and spec.submodule_search_locations is not None
            located[name] = (path if path is not None and path.is_file() else None, is_package)
        path, is_package = located[name]
        if path is None or not keep(name, path):
            continue
        found[name] = path
        package = name if is_package else name.rpartition(".")[0]
        for imported, level in _parsed(path)[1]:
            add(imported, level, package)
    return dict(sorted(found.items()))


def import_closure(module: str) -> dict[str, Path]:
    """Module name -> source file of plugin ``module`` and of the modules of one's own that it
    imports, directly or not, in name order (see this module's docstring for where it stops).

    ``module`` itself is included when it has a source file, even installed, and so are the
    modules of its top-level package that it imports (an installed plugin package's helpers).
    """
    own = module.partition(".")[0]
    if own == _OWN_PACKAGE:
        return {}
    roots = _library_roots()

    def keep(name: str, path: Path) -> bool:
        top = name.partition(".")[0]
        return top != _OWN_PACKAGE and (top == own or not _is_library(path, roots))

    return _walk([(module.replace("{", "{{").replace("}", "}}"), 0, "")], keep, {}, {})


def file_closure(
    path: str | Path,
    *,
    within: str,
    bindings: Mapping[str, str] | None = None,
    located: dict[str, tuple[Path | None, bool]] | None = None,
) -> dict[str, Path]:
    """Module name -> source file of every module of package ``within`` that the Python file
    ``path`` (a script, not itself a module of it) imports, directly or not, in name order.

    ``bindings`` fill the placeholders of computed imports (``{"experiment": "e3"}`` turns
    ``import_module(f"pkg.figures.{experiment}")`` into ``pkg.figures.e3``); a computed import
    they do not fill brings in every module under its literal head. ``located``, shared by
    the calls of one process that walk the same package, finds each module once.
    """
    imports = _parsed(Path(path).resolve())[1]

    def keep(name: str, _: Path) -> bool:
        return name.partition(".")[0] == within

    seeds = [(template, level, "") for template, level in imports if level == 0]
    return _walk(seeds, keep, bindings or {}, {} if located is None else located)


def closure_hash(closure: Mapping[str, Path]) -> str:
    """SHA-256 (16 hex digits) of the code of the modules of ``closure`` (name -> file, as
    :func:`import_closure` gives it) and of the Python version whose AST format it uses."""
    digest = hashlib.sha256(f"{_python()}\0".encode())
    for name, path in closure.items():
        digest.update(f"{name}\0{source_digest(path)}\0".encode())
    return digest.hexdigest()[:16]


def sources_hash(module: str) -> str:
    """SHA-256 (16 hex digits) of the code of :func:`import_closure` of ``module`` and of the
    Python version whose AST format it uses; "" when no module of it has a source file."""
    closure = import_closure(module)
    return closure_hash(closure) if closure else ""
