"""The ``ddlab`` command: each verb is one call of a :mod:`ddlab.api` function.

A verb is a pair of functions here: ``_args_<verb>(parser)`` declares its
arguments, ``_run_<verb>(args)`` calls the API and shows the result, and an
entry in ``VERBS`` gives its help and one or two examples (its ``--help``
epilog; a test parses each with this very parser). The run
functions hold no logic of their own (no branches, no loops: a test checks),
so the CLI and the notebooks can never disagree. One word, one meaning across
verbs: ``--probe`` drives the verify path (``watch``), ``--probe-fn`` wraps a
server function (``deploy``); ``--set`` takes a key in snake or kebab case; an
error's fix repeats the user's spelling (``--set topk-cap=4``, ``--budget 32``:
:mod:`ddlab.core.caller`). Results know how to show
themselves (``render()``, ``to_dict()``) and which exit code they mean
(``exit_code``). Errors from the library (:class:`ddlab.core.errors.DdlabError`)
are printed as one message and exit 1; usage errors exit 2 (argparse's
convention, and click's); an interrupt exits 130, after the verdict it had.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import ddlab as api  # the API's names, each imported at first use (inside main)
from ddlab.core.caller import PARAMETER_OF, set_caller, set_notebook_parameters
from ddlab.core.errors import ConfigError, DdlabError, Interrupted, UsageError
from ddlab.core.interrupts import STARTING, from_interrupt, starting
from ddlab.core.paths import NoProject
from ddlab.core.version import __version__

__all__ = ["main", "build_parser", "VERBS", "EXIT_CODES"]


# --- plumbing shared by the verbs ------------------------------------------------------


def _show(result, *, json_line: bool = False, json_only: bool = False,
          exit_code: bool = True) -> int:
    """Print a result (then its JSON, with ``json_line``; only its JSON, with
    ``json_only``); return its exit code (0 without ``exit_code``). A reader that left
    (``ddlab watch | head``) does not change the exit code."""
    try:
        if not json_only:
            print(result.render() if hasattr(result, "render") else result)
        if json_line or json_only:
            print(json.dumps(result.to_dict(), default=str), flush=True)
    except BrokenPipeError:
        _drop_stdout()
    return getattr(result, "exit_code", 0) if exit_code else 0


def _host_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="local",
                   help="host profile: params/hosts/NAME.yaml, or 'local' (built in, the default)")
    p.add_argument("--force", action="store_true",
                   help="take the host's lock from another ddlab run: meant for one that is "
                        "gone (the error says when); a live one stops, 'preempted'")
    _wait_arg(p)


def _wait_arg(p: argparse.ArgumentParser) -> None:
    from ddlab.hosts.lock import WAIT_DEFAULT_S

    p.add_argument("--wait", dest="wait_s", type=float, nargs="?", const=WAIT_DEFAULT_S,
                   default=None, metavar="S",
                   help="when another ddlab run holds the host, queue behind it up to S "
                        f"seconds (--wait alone: {WAIT_DEFAULT_S:.0f}), a heartbeat naming it; "
                        "Ctrl-C stops waiting")


def _override_args(p: argparse.ArgumentParser, base_default: str | None) -> None:
    default = f" (default: {base_default})" if base_default else \
        " (default: the host's, 'local' for the local host)"
    p.add_argument("--base", default=base_default, metavar="NAME_OR_FILE",
                   help=f"base config: a name in params/base/ or a YAML file{default}")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V",
                   help="override, e.g. --set speculative_ddtree_budget=32 (repeatable)")


def _values(text: str):
    """A -p / list value read as YAML (32, [4, 16], true), the way ddlab run reads them."""
    return api.notebook_parameters([("v", text)])["v"]


# --- verbs -----------------------------------------------------------------------------
# Keep each verb's two functions together; register it in VERBS below.


def _args_demo(p: argparse.ArgumentParser) -> None:
    """No arguments: DDLAB_OUTPUTS moves where it writes."""


DEMO_HELP = (
    "Run the main job on the embedded default (ddlab's own small server on this machine, "
    "no GPU): the sweep notebook over DDTree budget {4, 16, 32} x top-k cap {1, 4} x CUDA "
    "graphs {on, off}, a no-speculation baseline per graph setting and one variant carrying "
    "the field's replay fault (15 cells, each a server start), then the plot notebook over "
    "it; both through `ddlab run`.\n\n"
    "Takes DEMO_TIME.\n\n"
    "The result lands in outputs/<UTC time>-sweep-demo/report.html (the verdict, the cells, "
    "the figures; the plot's report beside it, outputs/<UTC time>-plot-demo/report.html), and "
    "outputs/index.html lists every run; the last line printed is the plot report's path. "
    "ddlab runs lists them afterwards.")
# `make demo` on two fresh clones, 2026-12-02 (README): the sweep 2m11s and 2m51s, the plot 4-5 s.
DEMO_TIME = ("about 2-3 min on 2 CPU cores (measured: 131 and 171 s, median 151 s, for the sweep "
             "once installed, the plot 4-5 s more; a 2-core VM at load average 2-4)")


def _run_demo(args) -> int:
    return _show(api.demo())


def _args_unit(p: argparse.ArgumentParser) -> None:
    _override_args(p, "local")
    p.add_argument("--host", default="local",
                   help="the host profile whose python runs it (default: local)")


def _run_unit(args) -> int:
    print(api.render_unit(args.base, args.overrides, host=args.host), end="")
    return 0


def _args_diagnose(p: argparse.ArgumentParser) -> None:
    p.add_argument("logfile", metavar="LOGFILE", type=Path,
                   help="a saved server log or journal (journalctl -u UNIT > FILE); - reads stdin")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument("--pattern", dest="patterns", action="append", default=[], metavar="REGEX",
                   help="also quote lines matching REGEX as evidence (repeatable)")
    p.add_argument("--sglang-version", metavar="X.Y.Z", default=None,
                   help="write the advice for this SGLang release (default: what the log says)")
    p.add_argument("--algorithm", metavar="NAME", default=None,
                   help="the speculative algorithm (DDTREE, DFLASH, EAGLE...; default: the log's)")
    p.add_argument("--family", choices=("sglang", "vllm"), default=None,
                   help="the server that wrote the log (default: told from the text)")
    p.add_argument("--vllm-version", metavar="X.Y.Z", default=None,
                   help="write a vLLM log's advice for this vLLM release (default: what the log says)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 whenever the log was read, crash or not (default: 3 on a "
                        "crash, as ddlab watch)")
    p.add_argument("--exit-code", action="store_true",  # the old opt-in, now the default
                   help=argparse.SUPPRESS)


def _run_diagnose(args) -> int:
    return _show(api.diagnose(args.logfile, patterns=args.patterns,
                              sglang_version=args.sglang_version, algorithm=args.algorithm,
                              family=args.family, vllm_version=args.vllm_version),
                 json_only=args.json, exit_code=not args.exit_zero)


def _args_target(p: argparse.ArgumentParser) -> None:
    # Every argument, --help included, goes to the target's own SGLang-named parser:
    # with no '-' prefix here, argparse treats them all as the one REMAINDER positional.
    p.prefix_chars = "+"
    p.add_argument("target_args", nargs=argparse.REMAINDER, metavar="SGLANG_FLAGS",
                   help="flags of python -m ddlab.target (see ddlab target --help)")


def _run_target(args) -> int:
    return api.serve_target(args.target_args, prog="ddlab target")


def _args_deploy(p: argparse.ArgumentParser) -> None:
    _host_args(p)
    _override_args(p, None)
    p.add_argument("--dry-run", action="store_true",
                   help="validate and print the unit; touch no host")
    p.add_argument("--probe-fn", dest="probes", action="append", default=[],
                   metavar="DOTTED.PATH[:MODE]",
                   help="wrap a server function in this variant only (repeatable); MODE: error "
                        "(default: its arguments when it raises), first=N, time")
    p.add_argument("--probe", dest="probes", action=_Renamed, new="--probe-fn",
                   help=argparse.SUPPRESS)


class _Renamed(argparse._AppendAction):
    """An option's old name: still taken, with a line on stderr naming the new one."""

    def __init__(self, *args, new: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: {option_string} is now {self.new} (a server function to wrap; "
              f"ddlab watch --probe drives the verify path); {option_string} still works for "
              "now", file=sys.stderr)
        super().__call__(parser, namespace, values, option_string)


def _run_deploy(args) -> int:
    plan = api.plan_deploy(args.host, args.base, args.overrides, probes=args.probes)
    print(plan.headline, flush=True)  # what is about to happen, before it happens
    return _show(api.deploy(plan, force=args.force, dry_run=args.dry_run, wait_s=args.wait_s))


def _args_watch(p: argparse.ArgumentParser) -> None:
    _host_args(p)
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="give up after S seconds (default 600)")
    p.add_argument("--probe", action="store_true",
                   help="once ready, send requests that drive the speculative verify path")
    p.add_argument("--grace", type=float, default=5.0, metavar="S",
                   help="after the probes, keep watching S seconds (default 5)")
    p.add_argument("--restore", choices=api.RESTORE_CHOICES, default="auto",
                   help="put the baseline back afterwards: auto (unless ready and every probe "
                        "passed), always, never")
    p.add_argument("--pattern", dest="patterns", action="append", default=[], metavar="REGEX",
                   help="also quote log lines matching REGEX as evidence (repeatable)")
    p.add_argument("--no-lossless", dest="lossless", action="store_false",
                   help="with --probe, skip the check of greedy tokens against the model's own")
    _lossless_args(p)


def _lossless_args(p: argparse.ArgumentParser) -> None:
    from ddlab.lab.lossless import TOLERANCE

    p.add_argument("--lossless-tolerance", type=float, default=TOLERANCE, metavar="RATE",
                   help=f"token match rate that still passes (default {TOLERANCE}: every "
                        "token equal)")
    p.add_argument("--lossless-prompt", dest="lossless_prompts", action="append", default=[],
                   metavar="TEXT", help="a prompt for the lossless check (repeatable; default: "
                                        "the shipped prompts)")


def _run_watch(args) -> int:
    verdict = api.watch(args.host, timeout_s=args.timeout, probe=args.probe, grace_s=args.grace,
                        restore=args.restore, patterns=args.patterns, force=args.force,
                        wait_s=args.wait_s,
                        lossless=args.lossless, lossless_tolerance=args.lossless_tolerance,
                        lossless_prompts=args.lossless_prompts)
    return _show(verdict, json_line=True)


def _args_restore(p: argparse.ArgumentParser) -> None:
    _host_args(p)


def _run_restore(args) -> int:
    return _show(api.restore(args.host, force=args.force, wait_s=args.wait_s))


def _args_sweep(p: argparse.ArgumentParser) -> None:
    from ddlab.sweeps.plan import DEFAULT_GRID, DEFAULT_OPTIONS as D, MAX_CELLS  # defined once

    p.add_argument("--host", default="", help="host profile (default: local; a resumed "
                   "sweep: its own); a pool: gpu1,gpu2 or a profile holding pool: [...]")
    _wait_arg(p)
    p.add_argument("--base", default="", metavar="NAME_OR_FILE",
                   help="base config (default: the host's)")
    for name, what in (("budget", "DDTree budget(s)"), ("topk-cap", "DDTree top-k cap(s)"),
                       ("cuda-graph", "CUDA graphs on/off")):
        default = json.dumps(list(DEFAULT_GRID[name.replace("-", "_")]))
        p.add_argument(f"--{name}", type=_values, default=default, metavar="VALUES",
                       help=f"{what}: a value or a YAML list (default {default}); null drops it")
    p.add_argument("--grid", type=_values, default=None, metavar="YAML",
                   help="more dimensions, e.g. '{mem_fraction_static: [0.8, 0.9]}'")
    p.add_argument("--set", dest="fixed", action="append", default=[], metavar="K=V",
                   help="an override for every cell (repeatable)")
    p.add_argument("--extra", type=_values, default=(), metavar="YAML",
                   help="extra cells: a list of override mappings")
    p.add_argument("--concurrency", type=_values, default=D.concurrency, metavar="LEVELS",
                   help="requests in flight at once; several, '[1, 4, 16]': a workload sweep, "
                        f"each cell measured at every level on one start (default {D.concurrency})")
    p.add_argument("--prompts", type=_values, default=list(D.prompts), metavar="SETS",
                   help="prompt sets: chat, code, math (shipped) or JSONL files, a YAML list "
                        "(default: the built-in prompts; a workload sweep: every shipped set)")
    for name, kind, what in (("requests", int, "measured requests per round (warmup excluded)"),
                             ("max-new-tokens", int, "tokens per request"),
                             ("warmup", int, "requests per cell before measuring (excluded)"),
                             ("repeats", int, "measured rounds per cell at least (3 with "
                                              "--ci-target)")):
        default = getattr(D, name.replace("-", "_"))
        p.add_argument(f"--{name}", type=kind, default=default, metavar="N",
                       help=f"{what} (default {default})")
    p.add_argument("--timeout", dest="timeout_s", type=float, default=D.timeout_s, metavar="S",
                   help=f"per cell: seconds until ready (default {D.timeout_s:g})")
    p.add_argument("--ci-target", type=float, default=D.ci_target, metavar="FRACTION",
                   help="measure until the tok/s 95%% interval is within +-this of the median "
                        f"(default {D.ci_target:g}; 0: exactly --repeats rounds)")
    p.add_argument("--min-time", dest="min_time_s", type=float, default=D.min_time_s,
                   metavar="S", help=f"measure each cell at least S seconds (default "
                                     f"{D.min_time_s:g})")
    p.add_argument("--max-time", dest="max_time_s", type=float, default=D.max_time_s,
                   metavar="S", help="... and at most S seconds, interval reached or not "
                                     f"(default {D.max_time_s:g})")
    p.add_argument("--max-rounds", type=int, default=D.max_rounds, metavar="N",
                   help=f"... and at most N measurement rounds (default {D.max_rounds})")
    p.add_argument("--no-bracket", dest="bracket", action="store_false", default=D.bracket,
                   help="do not measure the baselines again after the grid")
    p.add_argument("--no-probe", dest="probe", action="store_false", default=D.probe,
                   help="ready is enough: no requests through the verify path, no lossless check")
    _lossless_args(p)
    p.add_argument("--resume", default="", metavar="SWEEP",
                   help="finish a stopped sweep: its id, its run folder's name (ddlab runs "
                        "lists both), or 'latest'")
    p.add_argument("--dry-run", action="store_true", help="print the plan only")
    p.add_argument("--max-cells", type=int, default=MAX_CELLS, metavar="N",
                   help=f"refuse a larger grid (default {MAX_CELLS}): each cell is a server start")


def _run_sweep(args) -> int:
    report = api.sweep(host=args.host, base=args.base, budget=args.budget,
                       topk_cap=args.topk_cap, cuda_graph=args.cuda_graph, grid=args.grid,
                       fixed=args.fixed, extra=args.extra, requests=args.requests,
                       concurrency=args.concurrency, max_new_tokens=args.max_new_tokens,
                       warmup=args.warmup, repeats=args.repeats, ci_target=args.ci_target,
                       min_time_s=args.min_time_s, max_time_s=args.max_time_s,
                       max_rounds=args.max_rounds, bracket=args.bracket,
                       timeout_s=args.timeout_s, probe=args.probe,
                       lossless_tolerance=args.lossless_tolerance,
                       lossless_prompts=args.lossless_prompts, prompts=args.prompts,
                       resume=args.resume,
                       dry_run=args.dry_run, max_cells=args.max_cells, wait_s=args.wait_s)
    return _show(report.verdict)


def _args_plot(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweeps", nargs="*", default=["latest"], metavar="SWEEP",
                   help="a sweep id, a run folder's name (ddlab runs lists both), or 'latest' "
                        "(the default); several: the first one's figures and a comparison of "
                        "the same configs across them")
    p.add_argument("--metric", default="output_tok_s",
                   help="the heatmap's figure (default output_tok_s)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="where the PNG files go (default: a new folder under outputs/)")


def _run_plot(args) -> int:
    print(*api.plot(args.sweeps, metric=args.metric, out_dir=args.out), sep="\n")
    return 0


def _args_runs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", default="", help="only runs of this kind: sweep, deploy, plot, "
                   "poll, bisect, envelope, ... (default: all; another word is refused, "
                   "naming the kinds)")
    p.add_argument("--last", type=int, default=20, metavar="N",
                   help="the newest N runs (default 20; 0: all)")


def _run_runs(args) -> int:
    return _show(api.runs(kind=args.kind, last=args.last))


def _search_args(p: argparse.ArgumentParser) -> None:
    """What a bisect and an envelope share: the host, the base, the budget, a trial's watch."""
    p.add_argument("--host", default="", help="host profile (default: local)")
    _wait_arg(p)
    p.add_argument("--base", default="", metavar="NAME_OR_FILE",
                   help="base config (default: the host's)")
    p.add_argument("--max-trials", type=int, default=12, metavar="N",
                   help="at most N trials, each a server start (default 12)")
    p.add_argument("--max-time", type=float, default=7200.0, metavar="S",
                   help="stop starting trials after S seconds (default 7200; 0: no limit)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="per trial: seconds until ready (default 600)")
    p.add_argument("--no-probe", dest="probe", action="store_false",
                   help="ready is enough: no requests through the verify path, no lossless check")
    p.add_argument("--dry-run", action="store_true", help="print the plan only")


def _args_bisect(p: argparse.ArgumentParser) -> None:
    _search_args(p)
    p.add_argument("--good", action="append", default=[], metavar="K=V",
                   help="an override of the config that serves (repeatable; none: the base)")
    p.add_argument("--bad", action="append", default=[], metavar="K=V",
                   help="an override of the config that fails (repeatable)")


def _run_bisect(args) -> int:
    return _show(api.bisect(host=args.host, base=args.base, good=args.good, bad=args.bad,
                            max_trials=args.max_trials, max_time_s=args.max_time,
                            timeout_s=args.timeout, probe=args.probe, dry_run=args.dry_run,
                            wait_s=args.wait_s),
                 json_line=True)


def _args_envelope(p: argparse.ArgumentParser) -> None:
    _search_args(p)
    p.add_argument("--set", dest="fixed", action="append", default=[], metavar="K=V",
                   help="an override of the config as asked (repeatable)")
    p.add_argument("--search", action="append", default=[], metavar="K=LO..HI",
                   help="a key to search, in order (repeatable), e.g. context_length=4096..131072")
    p.add_argument("--fallback", action="append", default=[], metavar="K=V[,K=V]",
                   help="when even the lowest value fails, try this and search again "
                        "(repeatable, applied in order), e.g. cuda_graph=false")


def _run_envelope(args) -> int:
    return _show(api.envelope(host=args.host, base=args.base, fixed=args.fixed,
                              search=args.search, fallback=args.fallback,
                              max_trials=args.max_trials, max_time_s=args.max_time,
                              timeout_s=args.timeout, probe=args.probe, dry_run=args.dry_run,
                            wait_s=args.wait_s),
                 json_line=True)


def _args_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("notebook", metavar="NOTEBOOK",
                   help="a notebook in notebooks/ (sweep, plot, deploy, poll) or a path")
    p.add_argument("-p", "--parameter", dest="pairs", nargs=2, action="append", default=[],
                   metavar=("NAME", "VALUE"), help="a parameter; VALUE is read as YAML (32, "
                   "[4, 16], true) (repeatable)")
    p.add_argument("-f", "--parameters-file", dest="files", action="append", default=[],
                   metavar="FILE.yaml", help="parameters from a YAML file (repeatable; -p wins)")
    p.add_argument("--name", help="words for the run folder's name (default: from the parameters)")


def _run_run(args) -> int:
    parameters = api.notebook_parameters(args.pairs, args.files)
    return _show(api.run_notebook(args.notebook, parameters, name=args.name))


@dataclass(frozen=True)
class Verb:
    help: str
    add_arguments: Callable
    run: Callable
    examples: tuple = ()  # its --help epilog: one or two command lines (# a comment after)
    usage_errors: bool = False      # a ConfigError here is about the command line: exit 2
    sigterm_interrupts: bool = True  # SIGTERM runs the clean-up, as Ctrl-C does
    speaks: str = "cli"  # the words of its error fixes (ddlab.core.caller): --set K=V
    parameters: tuple = ()  # its options that set an override key: a fix says --budget 32
    description: str = ""  # its --help text, when more than the one line of help


VERBS = {
    "demo": Verb("run the main job on the embedded default and print the report's path",
                 _args_demo, _run_demo, description=DEMO_HELP.replace("DEMO_TIME", DEMO_TIME),
                 examples=("ddlab demo",)),
    "unit": Verb("print the systemd unit of a config variant", _args_unit, _run_unit,
                 examples=("ddlab unit --base ddtree --set budget=32 --set cuda-graph=false",
                           "ddlab unit --set topk-cap=8 --host gpu1   # gpu1's python")),
    "diagnose": Verb("read a server log: crashed or not, why, what to try next; exit 0 no "
                     "crash, 3 crashed (as ddlab watch), 1 unreadable (--exit-zero: 0 whenever "
                     "read)", _args_diagnose, _run_diagnose, usage_errors=True,
                     examples=("ddlab diagnose crash.log   # journalctl -u UNIT > crash.log",
                               "ddlab diagnose crash.log --json --exit-zero")),
    "deploy": Verb("deploy a config variant on a host (the baseline is stopped meanwhile)",
                   _args_deploy, _run_deploy,
                   examples=("ddlab deploy --host gpu1 --set budget=32 --set cuda-graph=false",
                             "ddlab deploy --set budget=32 --probe-fn "
                             "ddlab.target.cuda_graph_runner.CudaGraphRunner.replay:first=3")),
    "watch": Verb("watch the deployed variant until ready, crashed or timeout; last line is JSON; "
                  "exit 0 ready, 3 crashed, 4 timeout, 5 ready but a probe failed, "
                  "6 connection lost, 7 wrong output (not lossless), 8 the scheduler (Slurm) "
                  "ended the job, 9 preempted (another ddlab run took the host), 130 interrupted",
                  _args_watch, _run_watch,
                  examples=("ddlab watch --host gpu1 --probe   # then the verify path is driven",
                            "ddlab watch --timeout 120 --restore always")),
    "restore": Verb("remove the variant and put the host's baseline back", _args_restore,
                    _run_restore, examples=("ddlab restore --host gpu1",)),
    "sweep": Verb("sweep DDTree budget x top-k cap x CUDA graphs on a host; print the verdict; "
                  "exit 9 when another ddlab run took the host (preempted: --resume finishes it), 1 when "
                  "a pool member's production could not be put back (the verdict names it and "
                  "the ddlab restore to run) or the sweep failed (its verdict, then its JSON line)",
                  _args_sweep, _run_sweep, parameters=("budget", "topk_cap", "cuda_graph"),
                  examples=("ddlab sweep --budget '[16, 32]' --topk-cap 4 --cuda-graph true",
                            "ddlab sweep --resume latest --wait 600   # finish a stopped one, "
                            "after the run that took the host")),
    "plot": Verb("save a stored sweep's figures as PNG files (several sweeps: and their "
                 "comparison); print their paths", _args_plot, _run_plot,
                 examples=("ddlab plot   # the latest sweep",
                           "ddlab plot 20261201T024425Z-sweep-demo latest   # two, compared")),
    "bisect": Verb("find the change that breaks a config: from --good (serves) to --bad (fails), "
                   "each trial a server start; last line is JSON; exit 0 found, 10 nothing to "
                   "bisect, 4 out of budget, 130 interrupted", _args_bisect, _run_bisect,
                   examples=("ddlab bisect --bad debug_drop_verify_field=positions "
                             "--bad budget=32 --dry-run",)),
    "envelope": Verb("find the largest values that serve: --search KEY=LO..HI in order, "
                     "--fallback when even the lowest fails; last line is JSON; exit 0 found, "
                     "10 nothing serves, 4 out of budget, 130 interrupted",
                     _args_envelope, _run_envelope,
                     examples=("ddlab envelope --search context_length=4096..131072 "
                               "--fallback cuda-graph=false --dry-run",)),
    "runs": Verb("list the runs in outputs/, newest first: sweeps, deploys, notebook runs, "
                 "plots, with what they varied, their verdict, best cell and report", _args_runs,
                 _run_runs, usage_errors=True,
                 examples=("ddlab runs --last 5", "ddlab runs --kind sweep")),
    "run": Verb("execute a notebook headless into outputs/<time>-<notebook>-<name>/ with an "
                "HTML report; the last line is the report's path", _args_run, _run_run,
                usage_errors=True, speaks="papermill",
                examples=("ddlab run sweep -p budget '[16, 32]' -p topk_cap 4",
                          "ddlab run plot -p sweep latest")),
    "target": Verb("run ddlab's own tree-speculative SGLang-like server (SGLang's flags)",
                   _args_target, _run_target, sigterm_interrupts=False,
                   examples=("ddlab target --port 30000 --speculative-algorithm DDTREE "
                             "--speculative-ddtree-budget 16",)),
}


def epilog(verb: Verb) -> str:
    """A verb's examples, as its --help ends."""
    return "examples:\n" + "\n".join(f"  {line}" for line in verb.examples)


def _wrapped(text: str) -> str:
    """Help text wrapped to the terminal, paragraph by paragraph (the examples are not)."""
    width = min(shutil.get_terminal_size().columns, 100) - 2
    return "\n\n".join(textwrap.fill(part, width, break_on_hyphens=False)
                       for part in text.split("\n\n"))


class _Parser(argparse.ArgumentParser):
    """argparse that says what to do next after a usage error."""

    def error(self, message):  # noqa: D401 - argparse API
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


# One meaning per exit code, whichever verb ends with it (each verb's help says which it
# uses; tests/api/test_cli.py holds every result's and error's code to this table).
EXIT_CODES = {
    0: "done: ready, found, no crash",
    1: "failed: an error stopped it, or production could not be put back",
    2: "usage: the command line is wrong",
    3: "crashed: the server crashed (watch, diagnose, run poll)",
    4: "ran out: the timeout (watch) or the budget (bisect, envelope) before an answer",
    5: "ready, but a probe request through the verify path failed",
    6: "connection lost: the host stopped answering",
    7: "wrong output: the tokens are not the model's own (not lossless)",
    8: "the scheduler (Slurm) ended the job: never a crash",
    9: "preempted: another ddlab run took the host",
    10: "nothing found: nothing to bisect (bisect), nothing serves (envelope)",
    130: "interrupted (Ctrl-C, SIGTERM)",
}


def build_parser() -> argparse.ArgumentParser:
    codes = "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES.items())
    parser = _Parser(prog="ddlab", description="ddlab: deploy, watch, sweep and report on "
                     "speculative-decoding servers.", epilog=f"exit codes, for every verb:\n{codes}",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ddlab {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for name, verb in VERBS.items():
        verb.add_arguments(sub.add_parser(
            name, help=verb.help, description=_wrapped(verb.description or verb.help),
            epilog=epilog(verb), formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def _terminate(signum, frame):
    """SIGTERM (systemd, timeout, kill) ends a verb the way Ctrl-C does, so every
    clean-up (putting the baseline back) runs."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    try:  # the heavy imports happen here (the parser's choices, then the verb's API call)
        with starting():
            args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while ddlab starts: nothing began, one line
        print(STARTING, file=sys.stderr)
        return 130
    verb = VERBS[args.verb]
    previous = set_caller(verb.speaks)
    said_before = set_notebook_parameters(set(verb.parameters) - _set_by_hand(args))
    if verb.sigterm_interrupts and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return verb.run(args) or 0
    except ConfigError as err:
        if not verb.usage_errors or isinstance(err, NoProject):  # where it runs, not what it says
            return _failed(args.verb, err, err.exit_code)
        return _failed(args.verb, err, UsageError.exit_code, usage=True)
    except UsageError as err:
        return _failed(args.verb, err, err.exit_code, usage=True)
    except DdlabError as err:
        return _failed(args.verb, err, err.exit_code)
    except KeyboardInterrupt as err:
        return _interrupted(args.verb, err)
    except BrokenPipeError:  # `ddlab ... | head`: the reader left; not an error of ours
        _drop_stdout()
        return 0
    except Exception as err:  # a Ctrl-C that Python's threading turned into another error on its way up
        if not from_interrupt(err):
            raise
        return _interrupted(args.verb, err)
    finally:
        set_caller(previous)  # main() called in-process (tests, scripts) leaves no trace
        set_notebook_parameters(said_before)


def _set_by_hand(args) -> set:
    """The parameters a ``--set K=V`` of the command line sets (its fix keeps --set)."""
    typed = [*getattr(args, "overrides", ()), *getattr(args, "fixed", ())]
    keys = [str(item).partition("=")[0].strip().replace("-", "_") for item in typed]
    return {PARAMETER_OF[key] for key in keys if key in PARAMETER_OF}


def _interrupted(verb: str, err: BaseException) -> int:
    """A Ctrl-C ended the verb: its interrupted verdict, if it had one, still as the last line
    on stdout; one line on stderr; exit 130."""
    if isinstance(err, Interrupted) and err.verdict is not None:
        _show(err.verdict, json_line=True)
    print(f"ddlab {verb}: interrupted", file=sys.stderr)
    return 130


def _failed(verb: str, err: DdlabError, code: int, *, usage: bool = False) -> int:
    """The error in one line on stderr; what the job had when it failed (``err.result``,
    a search's report, a sweep's verdict) on stdout, then its JSON as the last line, as a
    job that ends prints."""
    print(f"ddlab {verb}: {'error: ' if usage else ''}{err}", file=sys.stderr)
    if err.result is not None:
        _show(err.result, json_line=True)
    return code


def _drop_stdout() -> None:
    """Point stdout at /dev/null: its reader is gone, and the final flush must not fail."""
    import os

    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


if __name__ == "__main__":
    sys.exit(main())
