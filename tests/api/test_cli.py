"""``ddlab deploy | watch | restore`` as a person runs them: real processes, real sites.

The verbs find each other through the host's lock file: ``ddlab deploy``
leaves a persistent lock that ``ddlab watch`` and ``ddlab restore`` continue.
``ddlab watch`` ends with one JSON line (the verdict) and exits 0 ready,
3 crashed, 4 timeout, 1 for a ddlab error, 2 for a usage error, 130 on Ctrl-C.
"""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

import sweepkit
from ddlab.diagnosis.diagnosis import Diagnosis
from ddlab.lab import http_client
from ddlab.sweeps.store import Store
from ddlab.report.html import STATUS_COLOURS
from labkit import DDLAB, KV_OOM, REPO, clean, ddlab, kinds, last_json, site_fixture, wait_for  # noqa: F401

site = site_fixture("systemd-ssh", "process-local")


DIAGNOSIS_KEYS = {f.name for f in dataclasses.fields(Diagnosis)}


def _deploy(site, *overrides: str) -> dict:
    variant = site.variant(*overrides)
    done = ddlab("deploy", "--host", str(site.yaml), *site.set_args(variant))
    assert done.returncode == 0, done.stderr
    assert f"deployed {variant.name} as {variant.unit_name}" in done.stdout
    return site.lock()["variant"]


@pytest.mark.slow
@pytest.mark.parametrize("site", kinds("systemd-ssh"), indirect=True, ids=str)
def test_deploy_watch_restore_continue_one_persistent_lock(clean):
    site = clean
    deployed = _deploy(site)
    lock = site.lock()
    assert lock["holder"]["pid"] is None and lock["baseline"]["was_active"] is True
    assert not site.baseline_active() and site.installed(deployed["service"])

    watched = ddlab("watch", "--host", str(site.yaml), "--probe", "--grace", "1", "--timeout", "90")
    assert watched.returncode == 0, watched.stderr
    verdict = last_json(watched.stdout)
    assert (verdict["state"], verdict["variant"]) == ("ready", deployed["name"])
    assert all(p["ok"] for p in verdict["probes"]) and len(verdict["probes"]) == 3
    lock = site.lock()
    assert (lock["holder"]["what"], lock["holder"]["pid"]) == ("watch", None), \
        "ready: the variant stays, under a lock that `ddlab restore` continues"
    assert site.installed(deployed["service"]) and not site.baseline_active()

    restored = ddlab("restore", "--host", str(site.yaml))
    assert restored.returncode == 0, restored.stderr
    assert restored.stdout.strip() == (f"{site.name}: removed {deployed['service']}; baseline "
                                       f"{site.baseline} active again; lock released")
    assert site.baseline_active() and not site.installed(deployed["service"]) and site.lock() is None


@pytest.mark.slow
def test_watch_prints_the_crash_verdict_last_exits_3_and_restores(clean):
    site = clean
    deployed = _deploy(site, KV_OOM)
    watched = ddlab("watch", "--host", str(site.yaml), "--probe", "--timeout", "90")
    assert watched.returncode == 3, watched.stderr
    verdict = last_json(watched.stdout)
    assert {"state", "variant", "elapsed_s"} | DIAGNOSIS_KEYS <= set(verdict)
    assert (verdict["state"], verdict["variant"], verdict["kind"], verdict["phase"]) == (
        "crashed", deployed["name"], "kv_pool_oom", "memory_pool")
    assert 0 < verdict["elapsed_s"] < 90 and verdict["crashed"] is True
    assert watched.stdout.startswith(f"CRASHED: {deployed['name']} on {site.name}: kv_pool_oom")
    assert "[watch " in watched.stderr, "the heartbeat went to stderr"
    assert site.baseline_active() and not site.installed(deployed["service"]) and site.lock() is None


@pytest.mark.slow
@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_ready_with_a_failed_probe_exits_5_and_restores(clean):
    # "ready" is not "works": this server answers /health, but every probe request
    # is longer than its 16-token context and gets a 400 (its warmup is skipped)
    site = clean
    deployed = _deploy(site, "context_length=16", "skip_server_warmup=true")
    watched = ddlab("watch", "--host", str(site.yaml), "--probe", "--grace", "0.5",
                    "--timeout", "90")
    assert watched.returncode == 5, (watched.stdout, watched.stderr[-2000:])
    verdict = last_json(watched.stdout)
    assert verdict["state"] == "ready" and verdict["probes"], verdict
    assert all(not p["ok"] and p["status"] == 400 for p in verdict["probes"]), verdict["probes"]
    assert watched.stdout.startswith(f"READY but a probe failed: {deployed['name']}")
    assert site.baseline_active() and not site.installed(deployed["service"]) and site.lock() is None


@pytest.mark.slow
@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_a_reader_that_left_does_not_change_the_exit_status(clean):
    # `ddlab watch | head` under `set -o pipefail`: the crash must still exit 3
    site = clean
    _deploy(site, KV_OOM)
    with subprocess.Popen([DDLAB, "watch", "--host", str(site.yaml), "--timeout", "90"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        proc.stdout.close()  # the reader is gone before the verdict is printed
        err = proc.stderr.read()
        proc.wait(timeout=120)
    assert proc.returncode == 3, err[-2000:]
    assert "Traceback" not in err and "BrokenPipe" not in err, err[-2000:]
    assert site.baseline_active() and site.lock() is None


@pytest.mark.slow
@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_watch_timeout_exits_4_and_restores(clean):
    site = clean
    deployed = _deploy(site, "debug_load_delay_s=60")  # never ready before the timeout
    watched = ddlab("watch", "--host", str(site.yaml), "--timeout", "0.3")
    assert watched.returncode == 4, watched.stderr
    assert last_json(watched.stdout)["state"] == "timeout"
    assert site.baseline_active() and not site.installed(deployed["service"]) and site.lock() is None


@pytest.mark.slow
def test_sigint_to_ddlab_watch_restores_the_baseline(clean):
    site = clean
    deployed = _deploy(site)
    watch = subprocess.Popen([DDLAB, "watch", "--host", str(site.yaml), "--probe", "--grace", "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        health = f"http://127.0.0.1:{deployed['port']}/health"
        wait_for(lambda: _answers(health), timeout_s=60, what="the variant to answer")
        # a running watch holds the lock itself (the CLI may still be starting up under load)
        wait_for(lambda: site.lock()["holder"]["pid"] == watch.pid, timeout_s=30,
                 what="the watch to hold the lock")
        time.sleep(0.5)  # the watch is probing or in its grace period now
        second = ddlab("deploy", "--host", str(site.yaml), *site.set_args(site.variant()))
        assert second.returncode == 1, second.stderr
        assert f"(pid {watch.pid}: `ddlab watch --host" in second.stderr, second.stderr
        assert watch.poll() is None
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=60)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.communicate()
    assert watch.returncode == 130, err
    assert last_json(out)["state"] == "interrupted"
    assert "watch interrupted; the record is in" in err and "baseline back" in err
    assert site.baseline_active() and not site.installed(deployed["service"]) and site.lock() is None


@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_watch_with_nothing_deployed_exits_1_saying_what_to_do(clean):
    site = clean
    watched = ddlab("watch", "--host", str(site.yaml), "--timeout", "5")
    assert watched.returncode == 1 and watched.stdout == ""
    assert f"no ddlab variant is deployed there; deploy one first: ddlab deploy --host {site.name}" \
        in watched.stderr
    assert site.lock() is None


@pytest.mark.slow
@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_ddlab_run_poll_on_a_crash_exits_3_and_never_says_ok(clean):
    # the notebook ran fine (its status is ok); what it found is a crash: the first line,
    # the banner, its colour, run.json and the index say so, and the exit code is watch's
    site = clean
    deployed = _deploy(site, KV_OOM)
    polled = ddlab("run", "poll", "-p", "host", str(site.yaml), "-p", "timeout_s", "90",
                   timeout_s=300)
    assert polled.returncode == 3, polled.stderr[-2000:]
    first = polled.stdout.splitlines()[0]
    assert first.startswith(f"CRASHED: {deployed['name']} on {site.name}: kv_pool_oom"), first
    report = Path(polled.stdout.splitlines()[-1])
    colour, title = re.search(r"<h2 style='margin:0;color:(#\w+)'>([^<]*)</h2>",
                              report.read_text()).groups()
    assert title.startswith("CRASHED: ") and colour == STATUS_COLOURS["crashed"] != \
        STATUS_COLOURS["ok"], (colour, title)
    run = json.loads((report.parent / "run.json").read_text())
    assert (run["status"], run["outcome"], run["exit_code"]) == ("ok", "crashed", 3)
    row = re.search(r"poll.ipynb</td><td style='color:(#\w+)[^>]*>(\w+)<",
                    (report.parent.parent / "index.html").read_text())
    assert row.groups() == (STATUS_COLOURS["crashed"], "crashed"), row
    assert site.baseline_active() and site.lock() is None


@pytest.mark.parametrize("log, flag, code", [
    ("capture_failed_oom.cat.log", [], 3),
    ("capture_failed_oom.cat.log", ["--exit-zero"], 0),
    ("capture_failed_oom.cat.log", ["--exit-code"], 3),
    ("healthy.journal.log", [], 0),
], ids=["crash", "crash-exit-zero", "crash-old-exit-code-flag", "healthy"])
def test_diagnose_exits_3_on_a_crash_as_watch_does(log, flag, code):
    # one grammar: `ddlab diagnose LOG && deploy` must not go on after a crash;
    # --exit-zero opts out, and the old opt-in --exit-code is still taken
    done = ddlab("diagnose", str(REPO / "tests" / "fixtures" / "logs" / log), *flag)
    assert done.returncode == code, done.stderr
    assert done.stdout.startswith("CRASHED: " if "crash" in log or "failed" in log
                                  else "NOT CRASHED: "), done.stdout[:200]


def test_a_near_miss_of_an_alias_fails_before_any_host(tmp_path):
    done = ddlab("sweep", "--set", "topk=8", "--dry-run",
                 env={"DDLAB_OUTPUTS": str(tmp_path)})
    assert done.returncode == 1 and "did you mean topk_cap?" in done.stderr, done.stderr
    assert not any(tmp_path.iterdir()), "nothing written, no host touched"


@pytest.mark.slow
def test_a_failed_sweep_says_why_in_its_plot_and_one_that_never_started_is_not_kept(tmp_path):
    project = sweepkit.make_project(tmp_path)
    small = ["--topk-cap", "1", "--cuda-graph", "false", "--requests", "2",
             "--max-new-tokens", "16"]
    with socket.socket() as taken:  # every cell's port answers before its server starts
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        failed = subprocess.run([DDLAB, "sweep", "--budget", "[4, 8]", "--set", f"port={port}",
                                 *small], capture_output=True, text=True, cwd=REPO,
                                env=project.env(), timeout=240)
    assert failed.returncode == 1 and f"port {port} on local is taken" in failed.stderr, \
        failed.stderr[-2000:]
    with Store(project.store_path) as store:
        (sweep_id,) = store.sweep_ids()
        assert store.sweep(sweep_id)["error"].startswith(f"PortTaken: port {port} on local")
    plotted = subprocess.run([DDLAB, "run", "plot", "-p", "sweep", sweep_id], capture_output=True,
                             text=True, cwd=REPO, env=project.env(), timeout=240)
    assert plotted.returncode == 1, plotted.stderr[-2000:]
    first = plotted.stdout.splitlines()[0]
    assert first.startswith("FAILED: SWEEP FAILED: 3 cells, 0 measured, 0 crashed; stopped by "
                            f"PortTaken: port {port} on local"), first
    report = Path(plotted.stdout.splitlines()[-1]).read_text()
    assert f"color:{STATUS_COLOURS['failed']}'>FAILED: SWEEP FAILED" in report

    # a host whose baseline_service does not exist: refused before the first cell
    (project.root / "params" / "hosts" / "typo.yaml").write_text(
        f"state_dir: {project.state}\nbaseline_service: no-such-baseline\n")
    unstarted = subprocess.run([DDLAB, "sweep", "--host", "typo", "--budget", "4", *small],
                               capture_output=True, text=True, cwd=REPO, env=project.env(),
                               timeout=240)
    assert unstarted.returncode == 1 and "no-such-baseline" in unstarted.stderr
    assert "failed before its first cell; not kept in the store" in unstarted.stderr
    with Store(project.store_path) as store:
        assert store.sweep_ids() == [sweep_id], "the sweep that never started is not stored"
    sweepkit.assert_host_put_back(project)


@pytest.mark.parametrize("argv, words", [
    (["watch", "--restore", "sometimes"], "invalid choice: 'sometimes'"),
    (["watch", "--timeout", "soon"], "invalid float value: 'soon'"),
    (["deploy", "--sett", "port=1"], "unrecognized arguments: --sett"),
], ids=["restore-choice", "timeout-type", "unknown-option"])
def test_usage_errors_exit_2(argv, words):
    done = ddlab(*argv)
    assert done.returncode == 2 and words in done.stderr


@pytest.mark.parametrize("site", kinds("systemd-ssh"), indirect=True, ids=str)
def test_deploy_validates_before_touching_the_host(clean):
    site = clean
    bad = ddlab("deploy", "--host", str(site.yaml), "--base", str(site.base),
                "--set", "speculative_ddtree_budgt=8")
    assert bad.returncode == 1 and "did you mean" in bad.stderr
    dry = ddlab("deploy", "--host", str(site.yaml), "--base", str(site.base), "--set", "port=1",
                "--dry-run")
    assert dry.returncode == 0 and "ExecStart=" in dry.stdout and "--port 1" in dry.stdout
    assert site.lock() is None and site.baseline_active()
    assert not site.installed("ddlab-test-port1.service")


def _answers(url: str) -> bool:
    try:
        return http_client.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


# --- one grammar: examples in every --help, the same words across verbs ------------------


def _examples(verb) -> list[list[str]]:
    """A verb's examples as argv lists, its ``# comment`` dropped."""
    import shlex

    return [shlex.split(line, comments=True) for line in verb.examples]


def test_every_verbs_help_ends_with_examples_that_parse_with_the_real_parser():
    from ddlab import cli

    parser = cli.build_parser()
    helps = {name: action.choices[name].format_help() for action in parser._actions
             if isinstance(action, __import__("argparse")._SubParsersAction) for name in cli.VERBS}
    for name, verb in cli.VERBS.items():
        assert 1 <= len(verb.examples) <= 2, name
        assert helps[name].rstrip().endswith(cli.epilog(verb).rstrip()), name
        for argv in _examples(verb):
            assert argv[:2] == ["ddlab", name], argv
            args = parser.parse_args(argv[1:])  # a usage error would exit 2 here
            assert args.verb == name
    from ddlab.target.args import EXAMPLES, build_parser

    target = build_parser("ddlab target")  # `ddlab target --help` is the target's own
    for line in EXAMPLES.format(prog="ddlab target").splitlines()[1:]:
        target.parse_args(line.split()[2:])


def test_the_real_commands_help_shows_its_examples_and_demo_says_what_how_long_where():
    swept = ddlab("sweep", "--help")
    assert swept.returncode == 0 and "\nexamples:\n  ddlab sweep --budget '[16, 32]'" in swept.stdout
    demo = " ".join(ddlab("demo", "--help").stdout.split())
    assert "the sweep notebook over DDTree budget {4, 16, 32} x top-k cap {1, 4} x CUDA graphs" \
        in demo and "then the plot notebook" in demo, "what it runs"
    assert re.search(r"Takes about \d+-\d+ min on 2 CPU cores \(measured: [\d, and]+ s, median "
                     r"\d+ s", demo), "how long, measured"
    assert "outputs/<UTC time>-sweep-demo/report.html" in demo and "outputs/index.html" in demo


def test_set_takes_an_alias_in_either_spelling():
    kebab = ddlab("unit", "--set", "topk-cap=4", "--set", "cuda-graph=false")
    snake = ddlab("unit", "--set", "topk_cap=4", "--set", "cuda_graph=false")
    assert kebab.returncode == 0, kebab.stderr
    assert "--speculative-ddtree-topk-cap 4" in kebab.stdout and "--disable-cuda-graph" in kebab.stdout
    assert kebab.stdout == snake.stdout


@pytest.mark.parametrize("argv, said", [
    (["unit", "--set", "topk-cap=0"], "ddlab unit: topk-cap=0: must be an integer >= 1; "
                                      "try --set topk-cap=8"),
    (["unit", "--set", "budget=0"], "ddlab unit: budget=0: must be an integer >= 1; "
                                    "try --set budget=32"),
    (["sweep", "--budget", "0", "--dry-run"], "ddlab sweep: budget=0: must be an integer >= 1; "
                                              "try --budget 32"),
    (["sweep", "--set", "topk-cap=0", "--topk-cap", "null", "--dry-run"],
     "ddlab sweep: topk-cap=0: must be an integer >= 1; try --set topk-cap=8"),
    (["unit", "--set", "cuda-graph=1"], "ddlab unit: cuda-graph=1: must be true or false; "
                                        "try --set cuda-graph=false"),
    (["unit", "--set", "topk-cp=4"], "ddlab unit: topk-cp: not a known flag, but a near miss of "
                                     "topk-cap; did you mean topk-cap? try --set topk-cap=VALUE"),
], ids=["alias-kebab", "alias", "sweep-option", "sweep-set", "graphs-kebab", "near-miss-kebab"])
def test_a_hint_repeats_what_the_user_typed(tmp_path, argv, said):
    done = ddlab(*argv, env={"DDLAB_OUTPUTS": str(tmp_path)})
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1].startswith(said), \
        done.stderr
    assert not any(tmp_path.iterdir()), "refused before anything was written"


def test_deploy_wraps_a_server_function_with_probe_fn_and_still_takes_the_old_name(tmp_path):
    target = "ddlab.target.cuda_graph_runner.CudaGraphRunner.replay:first=3"
    env = {"DDLAB_OUTPUTS": str(tmp_path)}
    new = ddlab("deploy", "--dry-run", "--probe-fn", target, env=env)
    assert new.returncode == 0, new.stderr
    assert "Environment=\"DDLAB_PROBES=" in new.stdout and "--probe-fn is" not in new.stderr
    old = ddlab("deploy", "--dry-run", "--probe", target, env=env)
    assert old.returncode == 0 and old.stdout == new.stdout
    assert "ddlab deploy: --probe is now --probe-fn (a server function to wrap; ddlab watch " \
           "--probe drives the verify path)" in old.stderr
    assert "--probe-fn DOTTED.PATH[:MODE]" in ddlab("deploy", "--help").stdout
    assert "--probe " not in ddlab("deploy", "--help").stdout.replace("--probe-fn", "")


# --- exit codes: one meaning per code ---------------------------------------------------


def _codes_by_source() -> dict[str, dict[str, int]]:
    """Every exit code a result or an error can end a verb with, by where it comes from."""
    from ddlab.core import errors
    from ddlab.diagnosis.exits import CRASHED_EXIT
    from ddlab.lab import verdict
    from ddlab.report import notebooks, search_report

    return {
        "watch": {**verdict.EXIT_CODES, "probe_failed": verdict.PROBE_FAILED_EXIT},
        "diagnose": {"crashed": CRASHED_EXIT, "ready": 0},
        "bisect/envelope": {k: v for k, v in search_report.EXIT_CODES.items() if k != "dry-run"},
        "run": {**notebooks.EXIT_CODES, **notebooks.VERDICT_EXITS},
        "errors": {name: getattr(errors, name).exit_code for name in errors.__all__
                   if hasattr(getattr(errors, name), "exit_code")},
    }


# the word a code's meaning starts with, and the states (or errors) that may end with it
MEANINGS = {3: ("crashed", {"crashed"}), 4: ("ran out", {"timeout", "budget"}),
            10: ("nothing found", {"none"}), 9: ("preempted", {"preempted", "Preempted"}),
            2: ("usage", {"UsageError"}), 130: ("interrupted", {"interrupted"})}


def test_every_exit_code_is_in_the_table_with_one_meaning():
    from ddlab.cli import EXIT_CODES, build_parser

    found = {(source, state, code) for source, codes in _codes_by_source().items()
             for state, code in codes.items()}
    assert {code for _s, _st, code in found} <= set(EXIT_CODES), "a code the table lacks"
    for code, (word, states) in MEANINGS.items():
        assert EXIT_CODES[code].startswith(word)
        ending = {state for _s, state, c in found if c == code}
        assert ending <= states, f"exit {code} ({EXIT_CODES[code]}) also ends: {ending - states}"
    assert "exit codes, for every verb:" in build_parser().format_help()


def test_a_search_that_finds_nothing_is_no_crash():
    from ddlab.report.search_report import SearchReport

    report = SearchReport(kind="envelope", search_id="x", status="done", answer="nothing serves")
    assert report.exit_code == 10 and report.to_dict()["exit_code"] == 10
