"""The source fingerprint of a plugin recommender: its modules and the user's modules they import.

The workflow carries the fingerprint in the ``params`` of the jobs that use a plugin, so that
an edit of the plugin, or of a module of one's own that it imports, reruns exactly those jobs
(Snakemake's code trigger sees only the rule's script, not what it imports).

- **Which files.** :func:`import_closure` follows, from the plugin class's module, every module
  that an ``import`` statement names (``import a.b``, ``from a import b``, relative imports,
  imports inside functions or ``try`` blocks) and ``importlib.import_module("literal")``
  calls, found statically with :mod:`ast` and resolved with the import system's finders
  without executing any module. It stops at the standard library, at installed packages
  (site-packages) other than the plugin's own top-level package, and at ``debiaseval``, whose
  code the workflow covers with :func:`debiaseval.code_hash`. A module imported by a name
  computed at run time is not seen.
- **What is hashed.** Each file's abstract syntax tree without docstrings and without line
  numbers (``ast.dump(..., include_attributes=False)``), so that an edit of comments,
  docstrings, blank lines or layout changes nothing; a file that does not parse is hashed by
  its bytes. The dump's format belongs to the Python version, which is therefore part of the
  hash: a new minor version of Python (3.11 to 3.12) reruns the plugin's jobs once.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import site
import sys
import sysconfig
from functools import cache
from importlib.machinery import ModuleSpec
from pathlib import Path

__all__ = ["import_closure", "module_origin", "source_digest", "sources_hash"]

_OWN_PACKAGE = "debiaseval"
_INSTALLED_FOLDERS = ("site-packages", "dist-packages")

# SHA-256 of a file's bytes -> (digest of its code, its imports): a file is parsed once per
# process while its content is unchanged, wherever it lies (keyed by content, never stale).
_PARSED: dict[bytes, tuple[str, tuple[tuple[str, int], ...]]] = {}


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


def _imports(tree: ast.Module) -> tuple[tuple[str, int], ...]:
    """Every import of ``tree`` as (name, relative level).

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
            func, first = node.func, node.args[0]
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if (
                called in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and not first.value.startswith(".")
            ):
                found.append((first.value, 0))
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


def import_closure(module: str) -> dict[str, Path]:
    """Module name -> source file of ``module`` and of the modules of one's own that it imports,
    directly or not, in name order (see this module's docstring for where it stops).

    ``module`` itself is included when it has a source file, even installed, and so are the
    modules of its top-level package that it imports (an installed plugin package's helpers).
    """
    own = module.partition(".")[0]
    if own == _OWN_PACKAGE:
        return {}
    roots = _library_roots()
    found: dict[str, Path] = {}
    queue, seen = [module], {module}
    while queue:
        name = queue.pop()
        top = name.partition(".")[0]
        if top == _OWN_PACKAGE or top in sys.builtin_module_names:
            continue
        spec = _find_spec(name)
        path = _source_file(spec)
        if path is None or not path.is_file() or (top != own and _is_library(path, roots)):
            continue
        found[name] = path
        is_package = spec is not None and spec.submodule_search_locations is not None
        package = name if is_package else name.rpartition(".")[0]
        for imported, level in _parsed(path)[1]:
            try:
                target = importlib.util.resolve_name("." * level + imported, package)
            except (ImportError, ValueError):  # beyond the top-level package
                continue
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # `import a.b.c` runs a, a.b and a.b.c
                candidate = ".".join(parts[:i])
                if candidate not in seen:
                    seen.add(candidate)
                    queue.append(candidate)
    return dict(sorted(found.items()))


def sources_hash(module: str) -> str:
    """SHA-256 (16 hex digits) of the code of :func:`import_closure` of ``module`` and of the
    Python version whose AST format it uses; "" when no module of it has a source file."""
    closure = import_closure(module)
    if not closure:
        return ""
    digest = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}\0".encode())
    for name, path in closure.items():
        digest.update(f"{name}\0{source_digest(path)}\0".encode())
    return digest.hexdigest()[:16]
