"""The two kinds of error: a user's mistake (one line, exit 2) and a failed check (exit 1)."""


class UsageError(Exception):
    """Unusable input or arguments: the CLI prints one line on stderr and exits 2."""


EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_USAGE = 2
EXIT_BUG = 3
