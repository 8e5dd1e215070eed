"""The locked crate sources: where cargo keeps each package the workspace's Cargo.lock resolves
(burn's backends included, built or not: `cargo metadata` lists every package of the lock), and
the methods an `impl` or `trait` block in one of those files defines."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pita.errors import UsageError
from pita_lab import repo_root
from pita_lab.errors import BrokenExperiment


@lru_cache(maxsize=1)
def package_dirs(root: Path) -> dict[str, tuple[str, Path]]:
    """package name -> (its locked version, the folder holding its Cargo.toml)."""
    proc = subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"cargo metadata failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr else ''}")
    packages = json.loads(proc.stdout)["packages"]
    return {p["name"]: (p["version"], Path(p["manifest_path"]).parent) for p in packages}


# The workspace whose Cargo.lock claims read burn's source from while a run checks them: the
# checkout's (None), or a `pita matrix` mirror's for another burn version.
_SOURCES_ROOT: ContextVar[Path | None] = ContextVar("sources_root", default=None)


@contextmanager
def sources_of(root: Path) -> Iterator[None]:
    token = _SOURCES_ROOT.set(root)
    try:
        yield
    finally:
        _SOURCES_ROOT.reset(token)


def sources_root() -> Path:
    """The workspace a claim reads locked sources from: the one set by `sources_of`, else the checkout."""
    return _SOURCES_ROOT.get() or repo_root()


def locked_file(root: Path, crate: str, file: str) -> tuple[str, str]:
    """The locked version of `crate` and the text of `file` inside it."""
    if crate not in package_dirs(root):
        raise BrokenExperiment(f"{crate} is not in the workspace's Cargo.lock")
    version, crate_dir = package_dirs(root)[crate]
    return version, (crate_dir / file).read_text()


@dataclass(frozen=True)
class Method:
    name: str
    line: int  # 1-based, in the file
    body: str  # from `fn` to the closing brace (or `;` for a method without a body)


# Comments, string and char literals: their braces are not code.
_NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\\n])\'', re.DOTALL)
_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def _blank(match: re.Match) -> str:
    """The literal or comment with every character but newlines replaced, so offsets stay."""
    return re.sub(r"[^\n]", " ", match.group(0))


def block_methods(text: str, header: str) -> dict[str, Method]:
    """The methods defined directly in the block whose first line contains `header` (e.g.
    `impl ActivationOps<Self> for CubeBackend`): a `fn` nested in a method body does not count,
    nor one in a comment or a string. An error when no line has `header`, or more than one."""
    code = _NOT_CODE.sub(_blank, text)
    starts = [m.start() for m in re.finditer(re.escape(header), code)]
    if len(starts) != 1:
        raise ValueError(f"{len(starts)} blocks start with {header!r}")
    open_at = code.index("{", starts[0])
    depth, methods = 0, {}
    for index in range(open_at, len(code)):
        char = code[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and char == "f":
            found = _FN.match(code, index)
            if found and (index == 0 or not (code[index - 1].isalnum() or code[index - 1] == "_")):
                methods[found.group(1)] = Method(found.group(1), code.count("\n", 0, index) + 1, _method_text(text, code, index))
    return methods


def _method_text(text: str, code: str, start: int) -> str:
    """From `fn` at `start` to its body's closing brace, or to `;` for a declaration."""
    depth, nested = 0, 0  # braces; brackets and parentheses (`[f32; 3]` in a signature)
    for index in range(start, len(code)):
        if code[index] in "[(":
            nested += 1
        elif code[index] in "])":
            nested -= 1
        elif code[index] == ";" and depth == 0 and nested == 0:
            return text[start:index + 1]
        elif code[index] == "{":
            depth += 1
        elif code[index] == "}":
            depth -= 1
            if depth == 0:
                return text[start:index + 1]
    return text[start:]
