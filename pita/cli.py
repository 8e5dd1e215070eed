"""The `pita` command line. Data goes to stdout, progress and errors to stderr.

Exit codes: 0 everything held, 1 a mismatch or a failed claim, 2 unusable input or arguments,
3 a bug in pita (with its traceback).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from importlib.metadata import entry_points

from pita.errors import EXIT_BUG, EXIT_USAGE, UsageError

# Other packages add commands through this entry-point group: each entry is a function taking
# argparse's subparsers (pita's lab registers its own there, from a source checkout).
COMMANDS_GROUP = "pita.commands"
LAB_EPILOG = "More commands come with pita's lab, which needs a source checkout."
LAB_MISSING = ("pita {command} is not a command of this pita ({known}); it may be one of pita's lab, which runs from a source "
               "checkout and is not installed here: clone the repository and run scripts/setup")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, as for any other unusable input
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    return _parser_and_commands()[0]


def _parser_and_commands():
    """The parser; its subcommands; whether any plugin (pita's lab) added commands."""
    parser = _Parser(prog="pita", description="Checks PyTorch-to-burn ports: dumps, parity, diagnosis; in a checkout, the lab's experiments and handbook.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    compare = commands.add_parser("compare", help="compare two dumps (reference first)")
    _comparison_options(compare, reference64=True)
    compare.add_argument("--histogram", action="store_true",
                         help="add to each float tensor of the JSON result its ULP histogram (ulp_histogram: edges, counts, "
                              "unbounded; log2 bins 0, 1, 2-3, 4-7, ...) and to each failing tensor its error map (error_map: "
                              "shape, view, cells, grid of the largest |diff| per block, at most 64x64)")
    compare.add_argument("--html", metavar="FILE",
                         help="also write the comparison as one self-contained HTML page: the table, the ULP histograms, "
                              "and where each failing tensor's errors sit (implies --histogram)")
    compare.set_defaults(handler=_compare)

    trace = commands.add_parser("trace", help="walk two recordings of a training run to the first divergence (reference first)")
    _comparison_options(trace, reference64=False)
    trace.set_defaults(handler=_trace)

    lab = _add_plugin_commands(commands)
    if not lab:
        parser.epilog = LAB_EPILOG
    return parser, commands, lab


def _comparison_options(command, *, reference64: bool) -> None:
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
    if reference64:
        command.add_argument("--reference64", metavar="FILE", help="a float64 run of the reference: judge each side's error against it")
    command.add_argument("--format", choices=("text", "json"), default="text")
    command.add_argument("--json", metavar="FILE",
                         help="also write the result as JSON to FILE (what --format json prints), so one run gives the printed "
                              "report and the JSON")


def _tolerance_and_rules(args):
    """The `Tolerance` and the `Rules` (or None) the shared options ask for, checked."""
    from pita.rules import load_rules
    from pita.tolerance import Tolerance

    tolerance = Tolerance.from_options(atol=args.atol, rtol=args.rtol, ulp=args.ulp, equal_nan=args.equal_nan)
    return tolerance, load_rules(args.rules) if args.rules else None


def _compare(args) -> int:
    from pita.compare import compare_dumps
    from pita.dump import read_dump, write_atomically
    from pita.report import render_json, render_text

    tolerance, rules = _tolerance_and_rules(args)
    reference, candidate = read_dump(args.reference), read_dump(args.candidate)
    reference64 = read_dump(args.reference64) if args.reference64 else None
    html_path = _checked_output("--html", args.html) if args.html else None
    json_path = _checked_output("--json", args.json) if args.json else None
    result = compare_dumps(reference, candidate, tolerance, allow_input_mismatch=args.allow_input_mismatch,
                           rules=rules, reference64=reference64, distributions=args.histogram or bool(args.html))
    if html_path:
        from pita.report_html import render_html

        write_atomically(html_path, render_html(result).encode())
    return _report(result, render_json(result), render_text(result), args.format, json_path)


def _report(result, json_text: str, text: str, output_format: str, json_path) -> int:
    """Writes the JSON file if asked, prints the result in the format asked; the exit code."""
    if json_path:
        from pita.dump import write_atomically

        write_atomically(json_path, json_text.encode())
    sys.stdout.write(json_text if output_format == "json" else text)
    return 0 if result.ok else 1


def _checked_output(option: str, path: str):
    """An output path that can be written, checked before the comparison runs (a long one would
    otherwise end in the error): a file in an existing folder, not a folder itself."""
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {path}: is a folder, not a file")
    if not target.parent.is_dir():
        raise UsageError(f"{option} {path}: folder {target.parent} does not exist")
    return target


def _trace(args) -> int:
    from pita.dump import read_dump
    from pita.trace import render_trace_json, render_trace_text, trace_dumps

    tolerance, rules = _tolerance_and_rules(args)
    reference, candidate = read_dump(args.reference), read_dump(args.candidate)
    json_path = _checked_output("--json", args.json) if args.json else None
    result = trace_dumps(reference, candidate, tolerance, rules, allow_input_mismatch=args.allow_input_mismatch)
    return _report(result, render_trace_json(result), render_trace_text(result), args.format, json_path)


def _add_plugin_commands(commands) -> bool:
    """Adds every command the installed plugins offer; whether any plugin is installed. A plugin
    that fails to load is a bug, reported as one with its traceback."""
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
    try:
        parser, commands, lab = _parser_and_commands()
        if not lab:
            _refuse_unknown_without_lab(argv, commands)
        args = parser.parse_args(argv)
        return args.handler(args)
    except UsageError as error:
        print(f"error: {error.cli_message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:  # not the user's mistake: say so, with everything needed to report it
        traceback.print_exc()
        print("pita: internal error, this is a bug in pita; please report it with the traceback above", file=sys.stderr)
        return EXIT_BUG
