"""Every Python snippet in README.md and docs/ runs as printed.

A page's snippets run in order in one fresh interpreter (a reader goes top to bottom: a
snippet may use the model an earlier one made), in a scratch folder. A comment just
before a fence changes what "runs" means for that snippet:

- ``<!-- snippet: excerpt PATH -->``: a quote of the project's code; every line that is
  not an elision (``...``) must still be in PATH, so the quote stays true;
- ``<!-- snippet: script NAME: COMMAND -->``: the snippet is the file NAME, run with the
  shell COMMAND (``ember run -n 2 NAME``: several ranks);
- ``<!-- snippet: outline -->``: a recipe with parts left to the reader; it must compile
  and every ``ember`` name it uses must exist.
"""
from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

import ember

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?:<!-- snippet: (?P<mark>[^>]*?) -->\n)?```python\n(?P<code>.*?)```",
                   re.S)


def snippets(page: str) -> list[tuple[int, str, str]]:
    """(line, marker, code) for each ```python block of a page."""
    text = (ROOT / page).read_text()
    return [(text[:m.start("code")].count("\n"), m.group("mark") or "", m.group("code"))
            for m in FENCE.finditer(text)]


def _run(args: list[str], cwd: pathlib.Path, timeout: int = 300) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), EMBER_CACHE_DIR=str(cwd / "cache"))
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-3000:]}"


@pytest.mark.parametrize("page", PAGES)
def test_runnable_snippets_run_in_order(page: str, tmp_path: pathlib.Path) -> None:
    blocks = [(line, code) for line, mark, code in snippets(page) if not mark]
    if not blocks:
        pytest.skip(f"{page} has no runnable snippet")
    # One script: each snippet under its page and line, so a failure names the snippet.
    program = "\n".join(
        f"exec(compile({code!r}, {f'{page}:{line}'!r}, 'exec'), globals())"
        for line, code in blocks)
    script = tmp_path / "snippets.py"
    script.write_text("import faulthandler\nfaulthandler.enable()\n" + program)
    _run([sys.executable, str(script)], tmp_path)


def _marked(kind: str) -> list[tuple[str, int, str, str]]:
    return [(page, line, mark[len(kind):].strip(), code) for page in PAGES
            for line, mark, code in snippets(page) if mark.startswith(kind)]


@pytest.mark.parametrize("page,line,path,code", _marked("excerpt"))
def test_excerpts_are_still_in_the_code(page: str, line: int, path: str, code: str) -> None:
    source = {ln.strip() for ln in (ROOT / path).read_text().splitlines()}
    stale = [ln for ln in code.splitlines()
             if ln.strip() and "..." not in ln and ln.strip() not in source]
    assert not stale, f"{page}:{line} quotes lines that {path} no longer has: {stale}"


@pytest.mark.parametrize("page,line,spec,code", _marked("script"))
def test_script_snippets_run(page: str, line: int, spec: str, code: str,
                             tmp_path: pathlib.Path) -> None:
    name, _, command = spec.partition(":")
    if command.split()[:2] == ["ember", "run"]:
        pytest.importorskip("mpi4py")
    (tmp_path / name.strip()).write_text(code)
    args = command.split()
    if args[0] == "ember":  # this checkout's ember, whatever is on PATH
        args = [sys.executable, "-m", "ember.cli", *args[1:]]
    elif args[0] == "python":  # this interpreter, whatever is on PATH
        args = [sys.executable, *args[1:]]
    _run(args, tmp_path)


def _ember_names(tree: ast.AST) -> list[str]:
    """Dotted names rooted at `ember` that the code reads (ember.x.y, from ember.x import y)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ember"):
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute):
            parts = []
            while isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id == "ember":
                names.append(".".join(["ember", *reversed(parts)]))
    return names


def _resolves(dotted: str) -> bool:
    import importlib
    parts = dotted.split(".")
    obj = ember
    for i, part in enumerate(parts[1:], start=2):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            return False
    return True


@pytest.mark.parametrize("page,line,_,code", _marked("outline"))
def test_outlines_compile_and_name_real_api(page: str, line: int, _: str, code: str) -> None:
    tree = ast.parse(code, f"{page}:{line}")
    missing = [n for n in _ember_names(tree) if not _resolves(n)]
    assert not missing, f"{page}:{line} uses names ember does not have: {missing}"


def test_every_python_fence_is_checked() -> None:
    """A marker that is misspelt would leave its snippet unchecked."""
    for page in PAGES:
        for line, mark, _ in snippets(page):
            assert mark.split(" ")[0] in ("", "excerpt", "script", "outline"), \
                f"{page}:{line}: unknown snippet marker {mark!r}"
