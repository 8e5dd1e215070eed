"""The `pita` command line. Data goes to stdout, progress and errors to stderr.

Exit codes: 0 everything held, 1 a mismatch or a failed claim, 2 unusable input or arguments,
3 a bug in pita (with its traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback

from pita.errors import EXIT_BUG, EXIT_USAGE, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, as for any other unusable input
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pita", description="Checks PyTorch-to-burn ports: paired experiments, parity, handbook.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    compare = commands.add_parser("compare", help="compare two dumps (reference first)")
    compare.add_argument("reference")
    compare.add_argument("candidate")
    compare.add_argument("--atol", type=float, help="absolute tolerance (default 1e-6 for float32/float64; torch.testing's for float16/bfloat16)")
    compare.add_argument("--rtol", type=float, help="relative tolerance, times |reference| (default 0 for float32/float64; torch.testing's for float16/bfloat16)")
    compare.add_argument("--ulp", type=int, metavar="N", help="an element also passes when at most N ULPs apart")
    compare.add_argument("--equal-nan", action="store_true", help="let NaN match NaN")
    compare.add_argument("--allow-input-mismatch", action="store_true", help="compare dumps whose input hashes differ")
    compare.add_argument("--rules", metavar="FILE", help="TOML rules: renames, transposes, per-tensor tolerances")
    compare.add_argument("--reference64", metavar="FILE", help="a float64 run of the reference: judge each side's error against it")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    compare.set_defaults(handler=_compare)

    run = commands.add_parser("run", help="build, run and check experiments' claims")
    run.add_argument("experiments", nargs="*", metavar="ID", help="experiment ids, e.g. p12")
    run.add_argument("--all", action="store_true", help="every experiment in the catalog")
    run.add_argument("--out", help="folder for dumps and the run record (default runs/<id>; with several experiments, one folder each inside it)")
    run.set_defaults(handler=_run)

    listing = commands.add_parser("list", help="the catalog: id, title, main-line stage, class, last run")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.set_defaults(handler=_list)

    book = commands.add_parser("book", help="render or check the handbook from run records",
                               description="build: render book/ from book/records/; check: exit 1 if a committed page differs "
                               "from what its record renders; drift: set the run records in --from against the committed ones "
                               "(exit 1 on a change beyond platform noise); update: copy the run records in --from into "
                               "book/records/ and render their chapters.")
    book.add_argument("action", choices=("build", "check", "drift", "update"))
    book.add_argument("experiments", nargs="*", metavar="ID", help="only these chapters (default: all, and the catalog page)")
    book.add_argument("--from", dest="runs", default="runs", metavar="DIR",
                      help="drift/update: the folder `pita run` wrote, one folder per experiment (default runs/)")
    book.set_defaults(handler=_book)
    return parser


def _compare(args) -> int:
    from pita.align import checked_tolerance, load_rules
    from pita.compare import Tolerance, compare_dumps
    from pita.dump import read_dump
    from pita.report import render_json, render_text

    for key in ("atol", "rtol", "ulp"):  # argparse's float() accepts nan, inf and negatives
        if getattr(args, key) is not None:
            try:
                checked_tolerance(key, getattr(args, key))
            except ValueError as error:
                raise UsageError(f"--{error}") from None
    tolerance = Tolerance.from_options(atol=args.atol, rtol=args.rtol, ulp=args.ulp, equal_nan=args.equal_nan)
    rules = load_rules(args.rules) if args.rules else None
    reference, candidate = read_dump(args.reference), read_dump(args.candidate)
    reference64 = read_dump(args.reference64) if args.reference64 else None
    result = compare_dumps(reference, candidate, tolerance, allow_input_mismatch=args.allow_input_mismatch,
                           rules=rules, reference64=reference64)
    sys.stdout.write(render_json(result) if args.format == "json" else render_text(result))
    return 0 if result.ok else 1


def _run(args) -> int:
    from pita import catalog
    from pita.run import run_experiments

    if args.all == bool(args.experiments):
        raise UsageError("pita run: name experiment ids or pass --all (not both)")
    ids = catalog.ids() if args.all else args.experiments
    return run_experiments(ids, out=args.out)


def _list(args) -> int:
    from pita.listing import catalog_rows, render_rows

    rows = catalog_rows()
    sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n" if args.format == "json" else render_rows(rows))
    return 0


def _book(args) -> int:
    from pita import book

    if args.action in ("build", "check"):
        return getattr(book, args.action)(args.experiments)
    return getattr(book, args.action)(args.experiments, args.runs)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:  # not the user's mistake: say so, with everything needed to report it
        traceback.print_exc()
        print("pita: internal error, this is a bug in pita; please report it with the traceback above", file=sys.stderr)
        return EXIT_BUG
