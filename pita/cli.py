"""The `pita` command line. Data goes to stdout, progress and errors to stderr.

Exit codes: 0 everything held, 1 a mismatch or a failed claim, 2 unusable input or arguments,
or an output that could not be written (stdout closed, full or over a file-size limit; a reader
that closed the pipe early, as `| head` does, ends pita quietly with 2: the report was not
delivered whole), 3 a bug in pita (with its traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys

from pita.errors import EXIT_BUG, EXIT_USAGE, UsageError
from pita.text import printable

# Other packages add commands through this entry-point group: each entry is a function taking
# argparse's subparsers (pita's lab registers its own there, from a source checkout).
COMMANDS_GROUP = "pita.commands"
# pita's own commands: a command line that starts with one of them builds no plugin's commands, as
# finding the plugins (importlib.metadata reads every installed distribution) costs start-up.
CORE_COMMANDS = ("compare", "trace", "lint")
LAB_EPILOG = "More commands come with pita's lab, which needs a source checkout."
LAB_MISSING = ("pita {command} is not a command of this pita ({known}); it may be one of pita's lab, which runs from a source "
               "checkout and is not installed here: clone the repository and run scripts/setup")


# The distribution's name on the package index: `pita` there is another project, which also
# installs a package and a command named `pita` (ARCHITECTURE.md, "A name of our own").
DISTRIBUTION = "pita-parity"
# `pita lint --format`: pita.lint renders each (not imported here, so the parser stays light).
LINT_FORMATS = ("text", "json", "sarif")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, as for any other unusable input
        raise UsageError(f"{self.prog}: {message}")


class _Version(argparse.Action):
    """`pita --version`: the distribution and its version on stdout; on stderr, any other
    installed distribution that also provides the package `pita` (they overwrite each other)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help=f"print the distribution ({DISTRIBUTION}) and its version, then exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib import metadata

        import pita

        write_stdout([f"{DISTRIBUTION} {pita.__version__}\n"])  # a full or closed stdout: one line, exit 2
        others = sorted({name for name in metadata.packages_distributions().get("pita", []) if _normal(name) != DISTRIBUTION})
        for name in others:
            print(f"pita: warning: the distribution {name!r} {metadata.version(name)} also installs the package `pita` here, "
                  f"and the two overwrite each other's files: uninstall both, then install {DISTRIBUTION} again", file=sys.stderr)
        parser.exit()


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def build_parser() -> argparse.ArgumentParser:
    return _parser_and_commands()[0]


def _parser_and_commands(plugins: bool = True):
    """The parser; its subcommands; whether any plugin (pita's lab) added commands (never, where
    `plugins` is False: they are not looked for)."""
    parser = _Parser(prog="pita", description="Checks PyTorch-to-burn ports: dumps, parity, diagnosis; in a checkout, the lab's experiments and handbook.")
    parser.add_argument("--version", action=_Version)
    # prog given: argparse would otherwise make a help formatter to find it, which imports shutil (start-up)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, prog=parser.prog)

    compare = commands.add_parser("compare", help="compare two dumps (reference first)")
    _comparison_options(compare)
    compare.add_argument("--histogram", action="store_true",
                         help="add to each float tensor of the JSON result its ULP histogram (ulp_histogram: edges, counts, "
                              "unbounded; log2 bins 0, 1, 2-3, 4-7, ...) and to each failing tensor its error map (error_map: "
                              "shape, view, cells, grid of the largest |diff| per block, at most 64x64)")
    compare.add_argument("--html", metavar="FILE",
                         help="also write the comparison as one self-contained HTML page: the table, the ULP histograms, "
                              "and where each failing tensor's errors sit (implies --histogram)")
    compare.set_defaults(handler=_compare)

    trace = commands.add_parser("trace", help="walk two recordings of a training run to the first divergence (reference first)")
    _comparison_options(trace)
    trace.add_argument("--strict", action="store_true",
                       help="also fail when an activation is recorded on one side only (by default it is listed as unobserved)")
    trace.add_argument("--html", metavar="FILE",
                       help="also write the trace as one self-contained HTML page: the first divergence, each phase as a row of "
                            "modules coloured by error against the budget, error against depth, and, for a long run, against step")
    trace.set_defaults(handler=_trace)

    lint = commands.add_parser("lint", help="find the catalog's pitfalls in burn source, before anything runs (needs the extra: pita-parity[lint])")
    lint.add_argument("path", help="a .rs file, or a folder (every .rs under it, without target/, tests/, benches/ and hidden folders)")
    lint.add_argument("--format", choices=LINT_FORMATS, default="text",
                      help="text: file:line:col: id title — fix (chapter); json: a list of findings; sarif: SARIF 2.1.0 for code scanning")
    lint.set_defaults(handler=_lint)

    lab = _add_plugin_commands(commands) if plugins else False
    if plugins and not lab:
        parser.epilog = LAB_EPILOG
    return parser, commands, lab


def _comparison_options(command) -> None:
    """The options compare and trace share: the two dumps, the tolerance, the rules file, the format."""
    command.add_argument("reference")
    command.add_argument("candidate")
    command.add_argument("--atol", type=float, help="absolute tolerance (default 1e-6 for float32/float64; torch.testing's for float16/bfloat16)")
    command.add_argument("--rtol", type=float,
                         help="relative tolerance, times |reference| (default 0 for float32/float64; torch.testing's for float16/bfloat16)")
    command.add_argument("--ulp", type=int, metavar="N", help="an element also passes when at most N ULPs apart")
    command.add_argument("--equal-nan", action="store_true", help="let NaN match NaN")
    command.add_argument("--allow-input-mismatch", action="store_true", help="compare dumps whose input hashes differ")
    command.add_argument("--rules", metavar="FILE", help="TOML rules: renames, transposes, per-tensor tolerances")
    command.add_argument("--reference64", metavar="FILE",
                         help="a float64 run of the reference: judge each float tensor by the float64 budget (docs/recording.md); "
                              "by default the run the reference's metadata names (pita.torch.record writes it beside the recording)")
    command.add_argument("--no-reference64", action="store_true",
                         help="judge by the tolerance alone, even where the reference names a float64 run")
    command.add_argument("--verbose", action="store_true", help="list every name mapping the rules file applied (default: a count and a few)")
    command.add_argument("--format", choices=("text", "json"), default="text")
    command.add_argument("--json", metavar="FILE",
                         help="also write the result as JSON to FILE (what --format json prints), so one run gives the printed "
                              "report and the JSON")


def _tolerance_and_rules(args):
    """The `Tolerance` and the `Rules` (or None) the shared options ask for, checked."""
    from pita.rules import load_rules
    from pita.tolerance import Tolerance

    tolerance = Tolerance.from_options(atol=args.atol, rtol=args.rtol, ulp=args.ulp, equal_nan=args.equal_nan)
    if args.rules == "":
        raise UsageError("--rules: empty path: name a rules file")
    return tolerance, load_rules(args.rules) if args.rules is not None else None


def _compare(args) -> int:
    from pita.compare import compare_dumps
    from pita.dump import write_atomically
    from pita.json_stream import comparison_chunks
    from pita.report import render_text

    tolerance, rules = _tolerance_and_rules(args)
    reference, candidate = _read_compared(args.reference), _read_compared(args.candidate)
    reference64_path, note = _reference64_path(args, reference)
    inputs = (args.reference, args.candidate, reference64_path, args.rules)
    html_path, json_path = _checked_outputs(inputs, ("--html", args.html), ("--json", args.json))
    result = compare_dumps(reference, candidate, tolerance, allow_input_mismatch=args.allow_input_mismatch,
                           rules=rules, reference64=_read_compared(reference64_path) if reference64_path is not None else None,
                           distributions=args.histogram or html_path is not None)
    result.notes += [note] if note else []
    if html_path:
        from pita.report_html import render_html

        write_atomically(html_path, render_html(result).encode())
    return _report(result, lambda: comparison_chunks(result), lambda: render_text(result), args.format, json_path)


def _read_compared(path):
    """A dump as compare and trace read it: tensors from 64 KiB up left in their file, for pita.stats to read in parallel."""
    from pita.dump import COMPARED_LAZY_MIN_BYTES, read_dump

    return read_dump(path, lazy_min_bytes=COMPARED_LAZY_MIN_BYTES)


def _reference64_path(args, reference):
    """The float64 run to judge by: --reference64's, else the one the reference names (unless
    --no-reference64); and a note saying which, or why none."""
    from pita.budget import named_reference64

    if args.reference64 is not None:
        if args.no_reference64:
            raise UsageError("--reference64 and --no-reference64: choose one")
        return args.reference64, None
    if args.no_reference64:
        return None, None
    return named_reference64(args.reference, reference.metadata)


def _report(result, json_pieces, text, output_format: str, json_path) -> int:
    """Writes the JSON file if asked, prints the result in the format asked; the exit code.
    The JSON is made, in pieces, once for each place it goes (`pita.json_stream`), never whole."""
    if json_path:
        from pita.dump import write_atomically

        write_atomically(json_path, json_pieces())
    write_stdout(json_pieces() if output_format == "json" else [text()])
    return 0 if result.ok else 1


def _file_keys(path) -> list:
    """What tells one file from another: its resolved path and, where it exists, its (device,
    inode), so a symbolic or hard link to a file is known as that file."""
    keys = [os.path.realpath(path)]
    with contextlib.suppress(OSError, ValueError):
        status = os.stat(path)
        keys.append((status.st_dev, status.st_ino))
    return keys


def _checked_outputs(inputs, *outputs: tuple[str, str | None]) -> list:
    """Each output path (None where the option is not given), checked before the comparison runs
    (a long one would otherwise end in the error): a file in an existing folder; not empty, not a
    folder, a FIFO, a device or a socket; not one of the files the inputs were read from, by path or
    by identity (a link to one), nor the path of another output."""
    from pathlib import Path

    from pita.dump import check_destination, files_read
    from pita.files import shown

    read = {}
    for given in (path for path in inputs if path is not None):
        for file in files_read(given):
            read.update((key, (given, file)) for key in _file_keys(file))
    checked, written = [], {}
    for option, path in outputs:
        if path is None:
            checked.append(None)
            continue
        if not path:
            raise UsageError(f"{option}: empty path: name the file to write")
        target = Path(path)
        if target.is_dir():
            raise UsageError(f"{option} {path}: is a folder, not a file")
        if not target.parent.is_dir():
            raise UsageError(f"{option} {path}: folder {target.parent} does not exist")
        try:
            check_destination(target)
        except UsageError as error:
            raise UsageError(f"{option} {error}") from None
        keys = _file_keys(target)
        source = next((read[key] for key in keys if key in read), None)
        if source is not None:
            given, file = source
            what = f"the input {shown(given)}" if os.fspath(file) == os.fspath(given) else f"{shown(file)}, read through the input {shown(given)}"
            raise UsageError(f"{option} {shown(path)}: is {what} (the same file): writing there would destroy it; name another file")
        if keys[0] in written:
            raise UsageError(f"{option} {shown(path)}: {written[keys[0]]} names the same file; name two files")
        written[keys[0]] = option
        checked.append(target)
    return checked


def _trace(args) -> int:
    from pita.json_stream import json_chunks
    from pita.trace import render_trace_text, trace_dumps

    tolerance, rules = _tolerance_and_rules(args)
    reference, candidate = _read_compared(args.reference), _read_compared(args.candidate)
    reference64_path, note = _reference64_path(args, reference)
    html_path, json_path = _checked_outputs((args.reference, args.candidate, reference64_path, args.rules),
                                            ("--html", args.html), ("--json", args.json))
    result = trace_dumps(reference, candidate, tolerance, rules, allow_input_mismatch=args.allow_input_mismatch,
                         reference64=_read_compared(reference64_path) if reference64_path is not None else None,
                         strict=args.strict, verbose=args.verbose)
    result.notes += [note] if note else []
    if html_path:
        from pita.dump import write_atomically
        from pita.trace_html import render_trace_html

        write_atomically(html_path, render_trace_html(result).encode())
    return _report(result, lambda: json_chunks(result.to_dict()), lambda: render_trace_text(result), args.format, json_path)


def _lint(args) -> int:
    from pita.lint import lint_path, load_rules, render

    rules = load_rules()
    findings = lint_path(args.path, rules)
    write_stdout([render(findings, rules, args.format)])
    return 1 if findings else 0


STDOUT_CLOSED = "stdout is closed: pita prints its report there (redirect it to /dev/null to discard it)"


def write_stdout(pieces) -> None:
    """Writes text to stdout and flushes it. A stdout that cannot take it (full, over a file-size
    limit) is `UsageError`; a reader that closed the pipe, `BrokenPipeError` (main ends quietly)."""
    if sys.stdout is None:
        raise UsageError(STDOUT_CLOSED)
    try:
        for piece in pieces:
            sys.stdout.write(piece)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        _discard_stdout()
        raise UsageError(f"cannot write the report to stdout ({error.strerror or error})") from None


def _discard_stdout() -> None:
    """Points stdout at /dev/null, so that what is left in its buffer does not fail again (with a
    traceback) when Python flushes it on the way out."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _file_size_limit_as_error() -> None:
    """A write over the file-size limit (`ulimit -f`) then fails with EFBIG, which pita reports,
    instead of SIGXFSZ killing the process with the output cut short."""
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no such signal here; not the main thread
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _add_plugin_commands(commands) -> bool:
    """Adds every command the installed plugins offer; whether any plugin is installed. A plugin
    that fails to load is a bug, reported as one with its traceback."""
    from importlib.metadata import entry_points

    plugins = entry_points(group=COMMANDS_GROUP)
    for plugin in plugins:
        plugin.load()(commands)
    return bool(plugins)


def _refuse_unknown_without_lab(argv: list[str], commands) -> None:
    """Without the lab, a command this pita does not have is one line and exit 2, whatever follows it."""
    if argv and not argv[0].startswith("-") and argv[0] not in commands.choices:
        raise UsageError(LAB_MISSING.format(command=argv[0], known=", ".join(commands.choices)))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _file_size_limit_as_error()
    try:
        if sys.stdout is None:
            raise UsageError(STDOUT_CLOSED)
        parser, commands, lab = _parser_and_commands(plugins=not (argv and argv[0] in CORE_COMMANDS))
        if not lab:
            _refuse_unknown_without_lab(argv, commands)
        args = parser.parse_args(argv)
        code = args.handler(args)
        write_stdout([])  # what a command printed reached stdout, or this says why not
        return code
    except UsageError as error:
        print(f"error: {printable(error.cli_message)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader closed the pipe (`| head`): nothing to say to anyone
        _discard_stdout()
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:  # not the user's mistake: say so, with everything needed to report it
        import traceback

        traceback.print_exc()
        print("pita: internal error, this is a bug in pita; please report it with the traceback above", file=sys.stderr)
        return EXIT_BUG
