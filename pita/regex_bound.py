"""Bounding a regex before it runs: an upper bound on the ways Python's `re` can try to match
one name, from the parse tree `re` itself builds.

Python's re backtracks and has no timeout: `^(a+)+$` against "aaa…a!" tries 2**n ways. Running
patterns in a subprocess with a timeout would cost more than the comparison, so each pattern is
bounded before it runs, on the parse tree re itself builds: `regex_paths` counts (as an upper
bound) the ways the engine can try to match a name of a given length, and the caller matches no
longer names. A repeat inside a repeat or a repeated alternation has exponentially
many ways and is refused; a few repeats side by side cost a power of the name length. An
alternation whose branches start with different characters (`(weight|bias)`) has one way.
Ways re takes longer over are weighted, as measured against a repeat of one character (`.*`,
`\\d+`): a repeat of more than one character (`(?:ab)*`, `(a)*`, `(?:a?b?){3}`) by 16, an
alternation whose branches can match the same text (`(a|ab)`) by 32. Over 1.2 million random
accepted patterns, the slowest took ~0.1 s on a hostile 256-character name.
"""

from __future__ import annotations

from re import _constants as _sre  # the parse tree re itself builds (sre_parse)
from re import _parser as _sre_parser

PATHS_CAP = 1 << 64
_GROUP_REPEAT_WEIGHT = 16
_AMBIGUOUS_WEIGHT = 32
_ONE_CHARACTER = (_sre.LITERAL, _sre.NOT_LITERAL, _sre.IN, _sre.ANY, _sre.CATEGORY)
_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT)
_ANCHORS = ((_sre.AT, _sre.AT_BEGINNING), (_sre.AT, _sre.AT_BEGINNING_STRING))


def regex_paths(pattern: str, length: int) -> int:
    """An upper bound on the ways `re` can try to match `pattern` (already compiled once, so
    valid) in a name of `length` characters, from every start position unless the pattern is
    anchored with ^ or \\A; PATHS_CAP where it is 2**64 or more."""
    items = list(_sre_parser.parse(pattern))
    starts = 1 if items and items[0] in _ANCHORS else length + 1
    return min(starts * _sequence_paths(items, length), PATHS_CAP)


def _sequence_paths(items, length: int) -> int:
    total = 1
    for op, arg in items:
        total = min(total * _item_paths(op, arg, length), PATHS_CAP)
    return total


def _item_paths(op, arg, length: int) -> int:
    if op in _REPEATS:
        low, high, body = arg
        inner = _sequence_paths(body, length)
        if inner == 1:  # one way per iteration: the choice is where the repeat stops
            stops = min(high - low, length) + 1
            one_character = len(body) == 1 and body[0][0] in _ONE_CHARACTER
            return stops if one_character else stops * _GROUP_REPEAT_WEIGHT
        if high > 64:  # a repeat of something ambiguous: exponential
            return PATHS_CAP
        return min(inner**high * (high - low + 1) * _GROUP_REPEAT_WEIGHT, PATHS_CAP)
    if op is _sre.BRANCH:
        ways = [_sequence_paths(alternative, length) for alternative in arg[1]]
        return max(ways) if _start_apart(arg[1]) else min(_AMBIGUOUS_WEIGHT * sum(ways), PATHS_CAP)
    if op is _sre.GROUPREF_EXISTS:  # the group decides which branch runs
        _, yes, no = arg
        return max(_sequence_paths(yes, length), _sequence_paths(no, length) if no else 1)
    if op is _sre.SUBPATTERN:
        return _sequence_paths(arg[3], length)
    if op in (_sre.ASSERT, _sre.ASSERT_NOT):
        return _sequence_paths(arg[1], length)
    if op is _sre.ATOMIC_GROUP:
        return _sequence_paths(arg, length)
    return 1  # a literal, a set, an anchor, a back reference: one way


def _start_apart(alternatives) -> bool:
    """Whether the alternatives start with literal characters no two of which are alike in any
    case (so even under IGNORECASE at most one of them can match at a position)."""
    firsts = [_first_literal(alternative) for alternative in alternatives]
    if None in firsts:
        return False
    cases = [{c, c.lower(), c.upper(), c.casefold()} for c in firsts]
    return all(a.isdisjoint(b) for i, a in enumerate(cases) for b in cases[i + 1:])


def _first_literal(items) -> str | None:
    items = list(items)
    if not items:
        return None
    op, arg = items[0]
    if op is _sre.LITERAL:
        return chr(arg)
    return _first_literal(arg[3]) if op is _sre.SUBPATTERN else None
