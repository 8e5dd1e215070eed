"""Untrusted text, printed safely: the one rule every report line and message goes through.

A value read from a file (metadata such as `framework` or `backend`, a path, a note quoting a
file's value, a rules-file string) reaches a terminal or a report line only through `printable`:
a newline there could forge a report line (`worst=0.00e+00 tol=1e-06 OK`), an ANSI escape could
recolour or rewrite the terminal, a bidi override could reorder what is shown.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def printable(value) -> str:
    """`value` as text on one line: unchanged when every character prints (so what pita itself
    writes never changes); otherwise, as `repr` spells a string without its quotes, every C0 and
    C1 control, DEL, format character (bidi overrides, zero-width joiners), line or paragraph
    separator, lone surrogate and backslash escaped (`\\n`, `\\x1b`, `\\u202e`, `\\\\`)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(_escaped(c) for c in text)


def _escaped(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    if c == " " or c.isprintable():
        return c
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
