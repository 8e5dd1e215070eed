"""The lab's own error: an experiment that is broken, as opposed to a user's mistake.

`pita.errors.UsageError` is a user's mistake (a bad id, a wrong flag, not a checkout).
`BrokenExperiment` is the experiment's: a program left no dump, its output is unusable, a compare
or trace could not run on the pin, a claim cannot observe its fact, a chapter quotes a marker its
source lacks. `pita run --all` reports such an experiment as broken and goes on; the command line
prints the one line and exits 2, as for a user's mistake, since neither is a bug in pita.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pita.errors import UsageError


class BrokenExperiment(Exception):
    """An experiment cannot run or render as declared; the message says which and why, in one line."""


def reported(handler: Callable[..., int]) -> Callable[..., int]:
    """A command whose broken experiment the command line reports as it does a user's mistake:
    one line on stderr and exit 2 (neither is a bug in pita, which gets a traceback)."""

    @functools.wraps(handler)
    def command(*args, **kwargs) -> int:
        try:
            return handler(*args, **kwargs)
        except BrokenExperiment as error:
            raise UsageError(str(error)) from None

    return command
