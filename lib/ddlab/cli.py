"""The ``ddlab`` command: a thin layer over the library.

Each verb is a pair of functions here: ``_args_<verb>(parser)`` declares its
arguments, ``_run_<verb>(args)`` calls into the library and prints. Errors
from the library (:class:`ddlab.errors.DdlabError`) are printed as one message
and exit 1; usage errors exit 2 (argparse's convention, and click's).
"""

from __future__ import annotations

import argparse
import sys

from ddlab.errors import DdlabError, UsageError

__all__ = ["main", "build_parser"]


# --- verbs -------------------------------------------------------------------
# Keep each verb's two functions together; register it in VERBS below.


def _args_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outputs", help="where to write the demo's run (default: outputs/)")


def _run_demo(args) -> int:
    from ddlab import demo

    return demo.main(outputs=args.outputs)


VERBS = {
    # verb: (help, add_arguments, run)
    "demo": ("run the main job on the embedded default and print the report's path",
             _args_demo, _run_demo),
}


# --- plumbing ----------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse that says what to do next after a usage error."""

    def error(self, message):  # noqa: D401 - argparse API
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ddlab", description=__doc__.splitlines()[0])
    from ddlab import __version__

    parser.add_argument("--version", action="version", version=f"ddlab {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for verb, (help_text, add_arguments, _) in VERBS.items():
        add_arguments(sub.add_parser(verb, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _, _, run = VERBS[args.verb]
    try:
        return run(args) or 0
    except UsageError as err:
        print(f"ddlab {args.verb}: error: {err}", file=sys.stderr)
        return err.exit_code
    except DdlabError as err:
        print(f"ddlab {args.verb}: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print(f"ddlab {args.verb}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
