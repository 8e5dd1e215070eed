"""A user's mistake: one line, exit 2 (a failed check is exit 1, a bug in pita exit 3)."""

EXIT_USAGE = 2
EXIT_BUG = 3


class UsageError(Exception):
    """Unusable input or arguments: the CLI prints one line on stderr and exits 2.

    `str(error)` is the message for Python callers. Where it names a setting, the command line
    spells it otherwise (`--allow-input-mismatch` for `allow_input_mismatch=True`): `cli_message`
    is the message with the flag, the one the CLI prints."""

    def __init__(self, message: str, *, cli_message: str | None = None):
        super().__init__(message)
        self.cli_message = message if cli_message is None else cli_message
