"""Strict JSON written a piece at a time: byte for byte what `pita.report.json_text` returns, but
without the whole text, or the whole dict, in memory at once.

`json.dumps(..., indent=2)` joins millions of small strings, and a comparison's `to_dict` holds a
dict per tensor: for 100,000 tensors, the two took 0.7 GB. Here the top level is written key by
key, each element of a top-level list on its own, and a comparison's tensors are turned into dicts
one at a time, as the writer reaches them (ARCHITECTURE.md, "Memory scales with the largest tensor").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pita.compare import ComparisonResult
from pita.report import json_text


class Later:
    """Stands for a dict in a top-level list until the writer reaches it."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], dict]):
        self.make = make


def json_chunks(data: dict) -> Iterator[str]:
    """`json_text(data)` in pieces: one per top-level key, one per element of a top-level list (a
    `Later` made into its dict only then). JSON strings hold no raw newline, so a nested value is
    indented by indenting its lines."""
    if not data:
        yield json_text(data)
        return
    yield "{"
    for i, (key, value) in enumerate(data.items()):
        yield ("," if i else "") + "\n  " + _nested(key, 0) + ": "
        if isinstance(value, list) and value:
            yield "["
            for j, item in enumerate(value):
                yield ("," if j else "") + "\n    " + _nested(item.make() if isinstance(item, Later) else item, 2)
            yield "\n  ]"
        else:
            yield _nested(value, 1)
    yield "\n}\n"


def _nested(value, depth: int) -> str:
    return json_text(value)[:-1].replace("\n", "\n" + "  " * depth)


def comparison_chunks(result: ComparisonResult) -> Iterator[str]:
    """`pita.report.render_json(result)` in pieces, each tensor's dict made when it is written."""
    return json_chunks(result.to_dict(tensor_dict=lambda tensor: Later(tensor.to_dict)))
