"""The lab's commands on the one `pita` command line: `run`, `matrix`, `list` and `book`, registered
in the entry-point group `pita.commands` (lab/pyproject.toml)."""

from __future__ import annotations

import json
import sys

from pita.errors import UsageError
from pita_lab.errors import reported


def add_commands(commands) -> None:
    run = commands.add_parser("run", help="build, run and check experiments' claims")
    run.add_argument("experiments", nargs="*", metavar="ID", help="experiment ids, e.g. p12")
    run.add_argument("--all", action="store_true", help="every experiment in the catalog, the tutorials and the guides")
    run.add_argument("--out", help="folder for dumps and the run record (default runs/<id>; with several experiments, one folder each inside it)")
    run.set_defaults(handler=reported(_run))

    matrix = commands.add_parser("matrix", help="the catalog's pitfalls on other burn versions: present, fixed, changed or n/a",
                                 description="Runs every pitfall (or IDs) on each burn version of lab/matrix/versions.toml, each "
                                 "built in its own mirror workspace under build/matrix/<version>/; the pin's column comes from the "
                                 "committed records. Writes the matrix and every run's record under --out only; "
                                 "`pita book update matrix --from DIR` commits it.")
    matrix.add_argument("experiments", nargs="*", metavar="ID", help="experiment ids (default: every pitfall)")
    matrix.add_argument("--versions", nargs="+", metavar="V", help="only these burn versions, e.g. 0.23.0-pre.1 (default: all)")
    matrix.add_argument("--out", help="folder for the matrix (matrix.json), each version's lockfile and runs (default runs/matrix)")
    matrix.set_defaults(handler=reported(_matrix))

    listing = commands.add_parser("list", help="the catalog: id, title, main-line stage, class, last run")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.set_defaults(handler=reported(_list))

    book = commands.add_parser("book", help="render or check the handbook from run records",
                               description="build: render book/ from book/records/; check: exit 1 if a committed page differs "
                               "from what its record renders; drift: set the run records in --from against the committed ones "
                               "(exit 1 on a change beyond platform noise); update: copy the run records in --from into "
                               "book/records/ and render their chapters; site: build the handbook as a static site in --out (MkDocs, strict: a "
                               "broken link fails).")
    book.add_argument("action", choices=("build", "check", "drift", "update", "site"))
    book.add_argument("experiments", nargs="*", metavar="ID", help="only these chapters (default: all, and the catalog page); "
                      "update: `matrix` commits the version matrix in --from (`pita matrix`'s folder)")
    book.add_argument("--from", dest="runs", default="runs", metavar="DIR",
                      help="drift/update: the folder `pita run` wrote, one folder per experiment (default runs/)")
    book.add_argument("--out", metavar="DIR", help="site: the folder to write the site into (default build/site in the checkout)")
    book.set_defaults(handler=reported(_book))


def _run(args) -> int:
    from pita_lab import catalog
    from pita_lab.commands import run_experiments

    if args.all == bool(args.experiments):
        raise UsageError("pita run: name experiment ids or pass --all (not both)")
    ids = catalog.chapter_ids() if args.all else args.experiments
    return run_experiments(ids, out=args.out)


def _matrix(args) -> int:
    from pita_lab.commands import run_matrix

    return run_matrix(args.experiments, args.versions, args.out)


def _list(args) -> int:
    from pita_lab.listing import catalog_rows, render_rows

    rows = catalog_rows()
    sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n" if args.format == "json" else render_rows(rows))
    return 0


def _book(args) -> int:
    from pita_lab import book

    if args.action == "site":
        from pita_lab.site import build_site

        if args.experiments:
            raise UsageError("pita book site builds the whole book; it takes no experiment ids")
        return build_site(args.out)
    if args.out:
        raise UsageError(f"pita book {args.action}: --out is for `pita book site`")
    if args.action in ("build", "check"):
        return getattr(book, args.action)(args.experiments)
    return getattr(book, args.action)(args.experiments, args.runs)
