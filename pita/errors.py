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


def warn_user(message: str) -> None:
    """`warnings.warn(message)` located at the first caller outside pita, whatever the depth of
    pita's own frames (Python 3.12's `skip_file_prefixes`): a warning names the user's line, and
    a record of it does not change when pita's own lines move."""
    import sys
    import warnings
    from pathlib import Path

    package = str(Path(__file__).resolve().parent)
    frame, level = sys._getframe(1), 2  # stacklevel 2 is warn_user's caller
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, stacklevel=level)
