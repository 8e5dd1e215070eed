"""The lab's structure: its layers hold (`lint-imports`, pyproject.toml), and no import inside a
function hides a cycle from them."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

LAB = ROOT / "lab" / "pita_lab"
# The command line is imported by every `pita` command, `pita compare` too: it imports the lab's
# modules only when one of its commands runs, to keep the others fast.
LAZY_FOR_SPEED = {LAB / "cli.py"}


def lab_imports_inside_functions(source: str) -> list[str]:
    """`line: module` for each import of a pita_lab module inside a function of `source`."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
                if any(name.split(".")[0] == "pita_lab" for name in names):
                    found.append(f"{node.lineno}: {', '.join(names)}")
    return found


def test_the_import_contracts_hold():
    """No library→lab import, each lab layer importing only those below it, no cycle."""
    proc = subprocess.run([Path(sys.executable).parent / "lint-imports", "--no-logo"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_an_import_of_the_lab_inside_a_function_is_found():
    source = "import os\n\ndef f():\n    from pita_lab.drift import render\n    import pita_lab.run\n    import json\n"
    assert lab_imports_inside_functions(source) == ["4: pita_lab.drift", "5: pita_lab.run"]


@pytest.mark.parametrize("path", sorted(set(LAB.rglob("*.py")) - LAZY_FOR_SPEED), ids=lambda path: str(path.relative_to(LAB)))
def test_the_lab_imports_its_modules_at_the_top(path):
    """An import inside a function is how a cycle hides from a reader; the layers need none."""
    assert lab_imports_inside_functions(path.read_text(encoding="utf-8")) == []
