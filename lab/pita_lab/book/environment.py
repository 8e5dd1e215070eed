"""What every page of the book renders with: the Jinja environment over the shared layouts and
the chapters' folders, and the Chinese names the pages give main-line stages and kinds."""

from __future__ import annotations

from pathlib import Path

import jinja2

from pita_lab import catalog
from pita_lab.book.measured import MeasuredLoader, install
from pita_lab.kinds import Kind, Stage

TEMPLATES = Path(__file__).parent / "templates"
MAINLINE_ZH = {stage.value: stage.zh for stage in Stage}
KIND_ZH = {kind.value: kind.zh for kind in Kind}


def book_dir(root: Path) -> Path:
    """Where the pages of the checkout `root` go."""
    return root / "book"


def environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        # Shared layouts by name (`layout.md.j2`), chapters by folder (`p12-…/chapter.md.j2`).
        loader=MeasuredLoader([TEMPLATES, catalog.experiments_dir(), catalog.examples_dir(), catalog.ports_dir(), catalog.guides_dir()]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(g9=lambda v: f"{v:.9g}", e2=lambda v: f"{v:.2e}", tail=tail)
    install(environment)  # `int`, `round` and `format` refuse to print a figure that was not measured
    return environment


def tail(text: str, count: int) -> str:
    return "\n".join(text.strip("\n").splitlines()[-count:])
