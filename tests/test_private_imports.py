"""No module of pita or its lab uses another module's private names (a leading underscore): a
name one module keeps to itself may change without the others noticing. import-linter holds the
layers (`lint-imports`); it cannot say this, so this test does."""

import ast
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGES = (ROOT / "pita", ROOT / "lab" / "pita_lab")


def our_modules() -> dict[str, Path]:
    """Module name -> file, for every module of the two packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            found[".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")] = path
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def absolute(module: str, level: int, importer: str, is_package: bool) -> str:
    """The module a `from … import` names, relative ones (`from .base import x`) resolved."""
    if not level:
        return module
    base = importer.split(".")
    base = base[:len(base) - level + (1 if is_package else 0)]
    return ".".join(base + ([module] if module else []))


def private_uses(source: str, importer: str, modules: set[str], is_package: bool = False) -> list[str]:
    """`from X import _name` and `X._name`, where X is another module of `modules`: each as
    `line: what`."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # a local name -> the module of ours it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source_module = absolute(node.module or "", node.level, importer, is_package)
            for alias in node.names:
                if f"{source_module}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{source_module}.{alias.name}"
                if source_module in modules and source_module != importer and is_private(alias.name):
                    found.append(f"{node.lineno}: from {source_module} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = dotted(node.value, bound)
            if owner in modules and owner != importer:
                found.append(f"{node.lineno}: {owner}.{node.attr}")
    return sorted(found, key=lambda use: int(use.split(":")[0]))


def dotted(node: ast.AST, bound: dict[str, str]) -> str | None:
    """The module an expression names (`drift`, `pita_lab.drift`), or None."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = dotted(node.value, bound)
        return f"{owner}.{node.attr}" if owner else None
    return None


def test_the_check_sees_both_forms_and_only_across_modules():
    modules = {"pita", "pita.stats", "pita.compare", "pita_lab", "pita_lab.drift", "pita_lab.matrix"}
    source = ("from pita_lab.drift import _walk, compare_records\n"
              "from pita_lab import drift\n"
              "import pita.stats as stats\n"
              "import pita_lab.drift\n"
              "from . import stats as own\n"
              "drift._walk(1)\nstats._kernel\npita_lab.drift._show\nown._kernel\ndrift.__name__\nself._private\n")
    assert private_uses(source, "pita_lab.matrix", modules) == [
        "1: from pita_lab.drift import _walk", "6: pita_lab.drift._walk", "7: pita.stats._kernel", "8: pita_lab.drift._show"]
    assert private_uses("from pita_lab.drift import _walk\n", "pita_lab.drift", modules) == []  # a module's own names
    assert private_uses("from .stats import _kernel\n", "pita.compare", modules) == ["1: from pita.stats import _kernel"]


@pytest.mark.parametrize("name", sorted(our_modules()))
def test_no_module_uses_another_modules_private_names(name):
    modules = our_modules()
    path = modules[name]
    found = private_uses(path.read_text(encoding="utf-8"), name, set(modules), is_package=path.name == "__init__.py")
    assert not found, f"{path.relative_to(ROOT)}: " + "; ".join(found)
