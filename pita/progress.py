"""One progress line on stderr for long work (recording, trace, long compares).

    with Progress(total, "trace") as progress:
        for name in names:
            progress.advance(name)   # draws `[312/525] trace act/encoder.layer.3…`

The line is redrawn in place at most 10 times a second, fits the terminal (100 columns at most)
and is cleared when the work ends, so what follows starts on a clean line. It is drawn only when
stderr is a terminal: a pipe, a file or a CI log gets nothing at all. `PITA_PROGRESS=0` silences
it, `PITA_PROGRESS=1` draws it even off a terminal (tests). The burn recorder draws the same line
itself, with the same variable.
"""

from __future__ import annotations

import os
import sys
import time

from pita.errors import UsageError
from pita.text import printable

ENV = "PITA_PROGRESS"
MAX_COLUMNS = 100
MIN_INTERVAL_S = 0.1
_ELLIPSIS = "…"


def enabled(stream) -> bool:
    """Whether a progress line goes to `stream`: `PITA_PROGRESS` decides when set, else whether
    `stream` is a terminal."""
    value = os.environ.get(ENV, "")
    if value == "1":
        return True
    if value == "0":
        return False
    if value:
        raise UsageError(f"{ENV}={printable(value)!r}: expected 0 (never draw progress) or 1 (always draw it)")
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def shorten(name: str, width: int) -> str:
    """`name` in at most `width` characters: the middle gives way to `…`, so the kind at the
    front (`act/`) and the most specific part at the end (`layer.3.output`) both stay."""
    if len(name) <= width:
        return name
    if width <= 1:
        return _ELLIPSIS[:width]
    tail = (width - 1) // 2
    head = width - 1 - tail
    return name[:head] + _ELLIPSIS + name[len(name) - tail:]


def line(done: int, total: int, label: str, name: str, columns: int = MAX_COLUMNS) -> str:
    """The progress line, `[done/total] label name…`, in at most `columns` characters."""
    prefix = f"[{done}/{total}] " + (f"{printable(label)} " if label else "")
    room = columns - len(prefix) - len(_ELLIPSIS)
    return prefix + shorten(printable(name), max(room, 0)) + _ELLIPSIS


class Progress:
    """A progress line over `total` items. `advance(name)` counts one more item, the one being
    worked on now. Silent (writes nothing) unless `enabled(stream)`."""

    def __init__(self, total: int, label: str = "", *, stream=None, clock=time.monotonic):
        self.total = total
        self.label = label
        self.done = 0
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._active = enabled(self._stream)
        self._drawn_at: float | None = None
        self._drawn_width = 0
        self._columns = _columns() if self._active else MAX_COLUMNS

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def advance(self, name: str) -> None:
        self.done += 1
        if not self._active:
            return
        now = self._clock()
        if self._drawn_at is not None and now - self._drawn_at < MIN_INTERVAL_S:
            return
        self._drawn_at = now
        self._draw(line(self.done, self.total, self.label, name, self._columns))

    def close(self) -> None:
        """Clears the line, if one was drawn; the cursor ends where the line began."""
        if self._drawn_width:
            self._write("\r" + " " * self._drawn_width + "\r")
            self._drawn_width = 0

    def _draw(self, text: str) -> None:
        # Pad over the previous line's tail instead of an ANSI clear, so any terminal shows it right.
        self._write("\r" + text.ljust(self._drawn_width))
        self._drawn_width = len(text)

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):
            # A closed or broken stderr must not stop the work the line only reports on.
            self._active = False
            self._drawn_width = 0


def _columns() -> int:
    # One column short of the terminal: a line that fills it exactly wraps on some terminals.
    import shutil  # only where the line is drawn: pita compare's start-up does without it

    return max(min(MAX_COLUMNS, shutil.get_terminal_size((MAX_COLUMNS + 1, 24)).columns - 1), 20)
