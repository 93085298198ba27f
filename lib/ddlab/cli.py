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
    """No arguments: DDLAB_OUTPUTS moves where it writes."""


def _run_demo(args) -> int:
    from ddlab import demo

    return demo.main()


def _args_unit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", default="local", metavar="NAME_OR_FILE",
                   help="base config: a name in params/base/ or a YAML file (default: local)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V",
                   help="override, e.g. --set speculative_ddtree_budget=32 (repeatable)")


def _run_unit(args) -> int:
    import sys

    from ddlab import params, units

    from ddlab.redact import redact_text

    variant = params.make_variant(params.load_base(args.base), args.overrides)
    # python: null in a base means the host's interpreter; here, the local host's (ours).
    text = units.render_unit(variant, python=sys.executable)
    shown = redact_text(text)  # printed output never holds a secret
    if shown != text:
        print("# Secret values are masked (***): ddlab deploy installs the real ones.")
    print(shown, end="")
    return 0


def _args_diagnose(p: argparse.ArgumentParser) -> None:
    p.add_argument("logfile", metavar="LOGFILE",
                   help="a saved server log or journal (journalctl -u UNIT > FILE); - reads stdin")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument("--pattern", dest="patterns", action="append", default=[], metavar="REGEX",
                   help="also quote lines matching REGEX as evidence (repeatable)")


def _run_diagnose(args) -> int:
    import json

    from ddlab import diagnose
    from ddlab.errors import ConfigError

    try:  # a missing file or a bad --pattern is a usage error: exit 2
        result = diagnose.diagnose(diagnose.read_log(args.logfile), patterns=args.patterns)
    except ConfigError as err:
        raise UsageError(err.message, fix=err.fix) from err
    print(json.dumps(result.to_dict()) if args.json else result.render())
    return 0


def _args_target(p: argparse.ArgumentParser) -> None:
    # Every argument, --help included, goes to the target's own SGLang-named parser:
    # with no '-' prefix here, argparse treats them all as the one REMAINDER positional.
    p.prefix_chars = "+"
    p.add_argument("target_args", nargs=argparse.REMAINDER, metavar="SGLANG_FLAGS",
                   help="flags of python -m ddlab.target (see ddlab target --help)")


def _run_target(args) -> int:
    import signal

    from ddlab import target

    # A server, not a verb with a baseline to restore: SIGTERM stops it as it stops
    # `python -m ddlab.target` (and SGLang), not as an interrupt (exit 130).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return target.main(args.target_args, prog="ddlab target")


def _host_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="local",
                   help="host profile: params/hosts/NAME.yaml, or 'local' (built in, the default)")
    p.add_argument("--force", action="store_true",
                   help="take the host's lock even if another ddlab run holds it")


def _args_deploy(p: argparse.ArgumentParser) -> None:
    _host_args(p)
    p.add_argument("--base", default=None, metavar="NAME_OR_FILE",
                   help="base config (default: the host's, 'local' for the local host)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V",
                   help="override, e.g. --set speculative_ddtree_budget=32 (repeatable)")
    p.add_argument("--dry-run", action="store_true",
                   help="validate and print the unit; touch no host")


def _run_deploy(args) -> int:
    from ddlab import actions

    plan = actions.plan_deploy(args.host, args.base, args.overrides)
    print(plan.render() if args.dry_run else plan.headline)
    if args.dry_run:
        return 0
    deployed = actions.deploy_variant(plan, force=args.force)
    print(f"deployed {deployed.name} as {deployed.service} (invocation {deployed.invocation or '-'})"
          f"; evidence in {deployed.run_dir}")
    print(f"next: ddlab watch --host {args.host} --probe   (ddlab restore --host {args.host} "
          "puts the baseline back)")
    return 0


def _args_watch(p: argparse.ArgumentParser) -> None:
    _host_args(p)
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="give up after S seconds (default 600)")
    p.add_argument("--probe", action="store_true",
                   help="once ready, send requests that drive the speculative verify path")
    p.add_argument("--grace", type=float, default=5.0, metavar="S",
                   help="after the probes, keep watching S seconds (default 5)")
    p.add_argument("--restore", choices=("auto", "always", "never"), default="auto",
                   help="put the baseline back afterwards: auto (unless ready and every probe passed), "
                        "always, never")
    p.add_argument("--pattern", dest="patterns", action="append", default=[], metavar="REGEX",
                   help="also quote log lines matching REGEX as evidence (repeatable)")


# Exit codes of `ddlab watch` by verdict: scripts can branch on them.
WATCH_EXIT = {"ready": 0, "crashed": 3, "timeout": 4}
PROBE_FAILED_EXIT = 5  # ready, but a probe request failed: "ready" is not "works"


def _run_watch(args) -> int:
    import json

    from ddlab import actions

    try:
        verdict = actions.watch_deployed(args.host, timeout_s=args.timeout, probe=args.probe,
                                         grace_s=args.grace, restore=args.restore,
                                         patterns=args.patterns, force=args.force)
    except KeyboardInterrupt as interrupt:  # the interrupted verdict is still the last line
        if getattr(interrupt, "verdict", None) is not None:
            print(interrupt.verdict.render())
            print(json.dumps(interrupt.verdict.to_dict(), default=str), flush=True)
        raise
    code = PROBE_FAILED_EXIT if verdict.probe_failed else WATCH_EXIT.get(verdict.state, 1)
    try:
        print(verdict.render())
        print(json.dumps(verdict.to_dict(), default=str), flush=True)
    except BrokenPipeError:  # `ddlab watch | head`: the reader left, the verdict stands
        _drop_stdout()
    return code


def _args_restore(p: argparse.ArgumentParser) -> None:
    _host_args(p)


def _run_restore(args) -> int:
    from ddlab import actions

    print(actions.restore_host(args.host, force=args.force))
    return 0


def _args_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("notebook", metavar="NOTEBOOK",
                   help="a notebook in notebooks/ (sweep, plot, deploy, poll) or a path")
    p.add_argument("-p", "--parameter", dest="pairs", nargs=2, action="append", default=[],
                   metavar=("NAME", "VALUE"), help="a parameter; VALUE is read as YAML (32, "
                   "[4, 16], true) (repeatable)")
    p.add_argument("-f", "--parameters-file", dest="files", action="append", default=[],
                   metavar="FILE.yaml", help="parameters from a YAML file (repeatable; -p wins)")
    p.add_argument("--name", help="words for the run folder's name (default: from the parameters)")


RUN_EXIT = {"ok": 0, "failed": 1, "interrupted": 130}


def _run_run(args) -> int:
    from ddlab import runner
    from ddlab.errors import ConfigError

    try:  # an unknown notebook, parameter or run name, a bad -f file: usage errors, exit 2
        params = runner.parse_parameters(args.pairs, args.files)
        result = runner.run_notebook(args.notebook, params, name=args.name)
    except ConfigError as err:
        raise UsageError(err.message, fix=err.fix) from err
    print(f"{result.status.upper()}: {result.headline or result.notebook.name}")
    if result.next_step:
        print(f"next: {result.next_step}")
    if result.status == "interrupted":
        print("interrupted: finished cells are kept; the next step above says how to go on")
    elif result.error.startswith("DeadKernelError"):
        print("the kernel died: finished cells are kept; a sweep resumes with "
              "`ddlab run sweep -p resume latest`, which takes over the lock it left")
    print(result.report)
    return RUN_EXIT.get(result.status, 1)


VERBS = {
    # verb: (help, add_arguments, run)
    "demo": ("run the main job on the embedded default and print the report's path",
             _args_demo, _run_demo),
    "unit": ("print the systemd unit of a config variant", _args_unit, _run_unit),
    "diagnose": ("read a server log: crashed or not, why, what to try next",
                 _args_diagnose, _run_diagnose),
    "deploy": ("deploy a config variant on a host (the baseline is stopped meanwhile)",
               _args_deploy, _run_deploy),
    "watch": ("watch the deployed variant until ready, crashed or timeout; last line is JSON; "
              "exit 0 ready, 3 crashed, 4 timeout, 5 ready but a probe failed, 130 interrupted", _args_watch, _run_watch),
    "restore": ("remove the variant and put the host's baseline back", _args_restore,
                _run_restore),
    "run": ("execute a notebook headless into outputs/<time>-<notebook>-<name>/ with an HTML "
            "report; the last line is the report's path", _args_run, _run_run),
    "target": ("run ddlab's own tree-speculative SGLang-like server (SGLang's flags)",
               _args_target, _run_target),
}


# --- plumbing ----------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse that says what to do next after a usage error."""

    def error(self, message):  # noqa: D401 - argparse API
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ddlab", description="ddlab: deploy, watch, sweep and report on speculative-decoding servers.")
    from ddlab import __version__

    parser.add_argument("--version", action="version", version=f"ddlab {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for verb, (help_text, add_arguments, _) in VERBS.items():
        add_arguments(sub.add_parser(verb, help=help_text, description=help_text))
    return parser


def _terminate(signum, frame):
    """SIGTERM (systemd, timeout, kill) ends a verb the way Ctrl-C does, so every
    clean-up (putting the baseline back) runs."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    parser = build_parser()
    args = parser.parse_args(argv)
    _, _, run = VERBS[args.verb]
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
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
    except BrokenPipeError:  # `ddlab ... | head`: the reader left; not an error of ours
        _drop_stdout()
        return 0


def _drop_stdout() -> None:
    """Point stdout at /dev/null: its reader is gone, and the final flush must not fail."""
    import os

    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


if __name__ == "__main__":
    sys.exit(main())
