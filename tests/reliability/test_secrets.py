"""Security defaults (issue 6, item 6): host keys, planted secrets, file modes.

- An unknown host key is refused and a changed one refused loudly, through the
  command line, before anything runs on the host.
- Secrets planted the ways they reach a real deployment — ``HF_TOKEN`` and a
  ``*_PASSWORD`` in the environment, ``--api-key`` on the command line (which
  SGLang logs back in its ``server_args=`` line: ``shims/sglang_like``) —
  reach the server (and so does a one-line private key in ``*_PRIVATE_KEY``),
  and never appear in what ddlab writes or prints: executed
  notebooks, HTML reports, run.json, cells.csv, journal.log, heartbeat.log,
  verdict.json, config.json, unit.service, the store (with its WAL), stdout
  and stderr. Every value holds ``PLANTED``; the check is a byte search for it.
- Files ddlab writes on the host are private: the lock (0600) in its state
  folder (0700); a systemd unit holds no secret (it is world-readable, and
  ``systemctl show`` would print its ``Environment=`` to any user): secret
  values go to an ``EnvironmentFile`` of mode 0600; the process manager's
  folder is 0700 with spec.json and the logs 0600.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import faultkit as fk
import paramiko
import pytest
import yaml

import sweepkit
from ddlab.sweeps.store import DONE_STATES, Store
from labkit import last_json, wait_for

pytestmark = [pytest.mark.timeout(600)]

NEEDLE = b"PLANTED"
HF_TOKEN = "hf_PLANTEDtokenA1b2"
DB_PASSWORD = "PLANTED pass $x %n 'q'"
API_KEY = "sk-PLANTEDkeyC3d4"
EXTRA = "tok-PLANTED-extra"


def _leaks(*roots: Path, texts: tuple = ()) -> list[str]:
    """Every file under ``roots`` (and every text) that holds a planted secret."""
    found = [f"printed: ...{t[max(0, t.find('PLANTED') - 80):t.find('PLANTED') + 40]!r}"
             for t in texts if "PLANTED" in t]
    for root in roots:
        for path in Path(root).rglob("*"):
            if path.is_file() and NEEDLE in path.read_bytes():
                data = path.read_bytes()
                at = data.find(NEEDLE)
                found.append(f"{path}: ...{data[max(0, at - 80):at + 40]!r}")
    return found


def _mode(path: str, bench: fk.Bench) -> str:
    return bench.transport.run(["stat", "-c", "%a", "--", path]).stdout.strip()


def _secret_base(bench: fk.Bench) -> str:
    """The target behind shims/sglang_like (which takes --api-key and logs it)."""
    data = yaml.safe_load((bench.root / "params" / "base" / f"{bench.base}.yaml").read_text())
    return fk.shim_base(bench, "sglang_like", name=f"{bench.base}-secret", flags=data["flags"],
                        env={"SHIM_DELAY_S": "2"})


PRIVATE_KEY = "PLANTED-b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"  # one line of a key file
SECRET_SETS = ["--set", f"env.HF_TOKEN={HF_TOKEN}", "--set", f"env.DB_PASSWORD={DB_PASSWORD}",
               "--set", f"env.DEPLOY_PRIVATE_KEY={PRIVATE_KEY}", "--set", f"flags.api-key={API_KEY}"]


def test_secrets_in_a_deploy_and_watch_on_systemd_never_leak(th, tmp_path):
    bench = th
    bench.project.outputs = tmp_path / "outputs"
    base = _secret_base(bench)
    printed = []
    deploy = fk.ddlab_in(bench, "deploy", "--host", "th", "--base", base, *SECRET_SETS)
    printed += [deploy.stdout, deploy.stderr]
    assert deploy.returncode == 0, deploy.stderr
    service = bench.current_service()
    unit_path = f"{bench.profile.unit_dir}/{service}"
    try:
        # The server gets them, in clear: ddlab hides secrets from people, not from it.
        pid = wait_for(lambda: bench.main_pid(service), timeout_s=30, what="the server's pid")
        environ = bench.testhost.run(["cat", f"/proc/{pid}/environ"]).stdout.split("\0")
        assert f"HF_TOKEN={HF_TOKEN}" in environ and f"DB_PASSWORD={DB_PASSWORD}" in environ
        argv = bench.testhost.run(["cat", f"/proc/{pid}/cmdline"]).stdout.split("\0")
        assert argv[argv.index("--api-key") + 1] == API_KEY
        # The unit (world-readable, and systemctl show prints Environment= to anyone) has none.
        unit = bench.transport.read_file(unit_path).decode()
        assert "PLANTED" not in unit.replace(API_KEY, ""), unit
        assert _mode(unit_path, bench) == "644"
        shown = bench.transport.run(["systemctl", "show", "-p", "Environment", "--", service]).stdout
        assert "PLANTED" not in shown, shown
        env_file = next(line.split("=", 1)[1].lstrip("-") for line in unit.splitlines()
                        if line.startswith("EnvironmentFile="))
        assert _mode(env_file, bench) == "600" and _mode(str(Path(env_file).parent), bench) == "700"
        assert _mode(bench.lock_path, bench) == "600" and _mode(bench.state_dir, bench) == "700"

        watch = fk.ddlab_in(bench, "watch", "--host", "th", "--probe", "--grace", "1",
                            "--timeout", "90")
        printed += [watch.stdout, watch.stderr]
        assert watch.returncode == 0, watch.stderr[-3000:]
        assert last_json(watch.stdout)["state"] == "ready"
        heartbeat = (Path(last_json(watch.stdout)["run_dir"]) / "heartbeat.log").read_text()
        assert "server_args=ServerArgs(api_key='***'" in heartbeat, \
            "the server's own log line about the key was seen, and masked"
    finally:
        restore = fk.ddlab_in(bench, "restore", "--host", "th")
        printed += [restore.stdout, restore.stderr]
    assert restore.returncode == 0, restore.stderr
    gone = bench.transport.run(["ls", "--", unit_path, env_file], check=False)
    assert gone.exit_code == 2 and not gone.stdout, "removed with the unit"
    assert _leaks(bench.outputs, texts=tuple(printed)) == []
    bench.assert_put_back()


def test_a_secret_in_a_crash_message_never_leaks(th, tmp_path):
    """The secret given as --api-key is also in a path the server cannot load, so the
    crash line names it under a name that is no secret's: masked by value, printed,
    saved and stored."""
    bench = th
    bench.project.outputs = tmp_path / "outputs"
    deploy = fk.ddlab_in(bench, "deploy", "--host", "th", "--set", f"flags.api-key={API_KEY}",
                         "--set", f"flags.model-path=/models/{API_KEY}")
    assert deploy.returncode == 0, deploy.stderr
    watch = fk.ddlab_in(bench, "watch", "--host", "th", "--timeout", "60")
    assert watch.returncode == 3, watch.stderr[-3000:]
    verdict = last_json(watch.stdout)
    assert verdict["kind"] == "model_not_found" and "/models/***" in verdict["cause"], verdict
    assert _leaks(bench.outputs, texts=(deploy.stdout, deploy.stderr, watch.stdout,
                                        watch.stderr)) == []
    bench.assert_put_back()


@pytest.mark.slow
def test_secrets_in_a_sweep_run_never_leak(local, tmp_path):
    """``ddlab run sweep`` with secrets in ``fixed`` (every cell) and in an extra cell."""
    bench = local
    bench.project.outputs = tmp_path / "outputs"
    base = _secret_base(bench)
    fixed = json.dumps({"env.HF_TOKEN": HF_TOKEN, "env.DB_PASSWORD": DB_PASSWORD,
                        "flags.api-key": API_KEY, "env.SHIM_DELAY_S": "0"})
    extra = json.dumps([{"env.EXTRA_SECRET": EXTRA}])
    run = fk.ddlab_in(bench, "run", "sweep", "-p", "base", base, "-p", "budget", "4",
                      "-p", "topk_cap", "4", "-p", "cuda_graph", "false", "-p", "fixed", fixed,
                      "-p", "extra", extra, "-p", "requests", "1", "-p", "max_new_tokens", "8",
                      "-p", "max_rounds", "3", "-p", "ci_target", "0",  # one round a cell
                      timeout_s=300)  # bracketed and probed: their evidence too
    assert run.returncode == 0, run.stderr[-3000:]
    assert re.match(r"(OK|WARNINGS): SWEEP DONE: 3 cells, 3 measured", run.stdout), run.stdout
    run_dir = bench.project.runs()[-1]
    assert {"sweep.ipynb", "report.html", "run.json", "cells.csv", "verdict.json"} <= {
        p.name for p in run_dir.iterdir()}
    folders = list((bench.outputs / "sweeps").glob("*/*/"))  # the cells', and a bracket's
    cells = [c for c in folders if "-bracket-" not in c.name]
    assert len(cells) == 3 and all((c / "journal.log").is_file() for c in folders)
    assert len(folders) == 4, "the baseline measured again after the grid: its evidence too"
    store = [p for p in bench.outputs.glob("ddlab.sqlite*")]
    assert store, "the store (and its WAL) is searched too"
    assert _leaks(bench.outputs, texts=(run.stdout, run.stderr)) == []
    bench.assert_put_back()


def _runs(bench: fk.Bench, sweep_id: str) -> int:
    return sum(sum(states.values()) for states in
               sweepkit.run_counts(bench.store_path, sweep_id).values())


def test_a_sweep_with_secrets_resumes_once_they_are_given_again(local, tmp_path):
    """The store keeps no secrets, so a resume asks for them (one line, before the
    host) and, given them again, runs the unfinished cells with the real values."""
    bench = local
    bench.project.outputs = tmp_path / "outputs"
    base = _secret_base(bench)  # 2 s before each server starts: the interrupt lands in a cell
    record = tmp_path / "server.json"  # outside outputs: it holds the secrets in clear
    secrets = {"env.HF_TOKEN": HF_TOKEN, "flags.api-key": API_KEY}
    fixed = json.dumps({**secrets, "env.SHIM_RECORD": str(record)})
    # the secrets' way through an interrupt and a resume is under test, not the probe (the
    # probed run's evidence is test_secrets_in_a_sweep_run_never_leak's): one round a cell
    small = ["-p", "requests", "1", "-p", "max_new_tokens", "8", "-p", "max_rounds", "3",
             "-p", "ci_target", "0", "-p", "bracket", "False", "-p", "probe", "False",
             "-p", "warmup", "0"]
    # 2 cells (the baseline and budget 4): the interrupt lands in the second
    proc = fk.popen_ddlab(bench, "run", "sweep", "-p", "base", base, "-p", "budget", "[4]",
                          "-p", "topk_cap", "4", "-p", "cuda_graph", "false", "-p", "fixed", fixed,
                          *small)
    wait_for(lambda: fk.cells_done(bench) >= 1 or proc.poll() is not None, timeout_s=120,
             what="a first finished cell")
    fk.interrupt(proc.pid)
    out, err = fk.finish(proc)
    printed = [out, err]
    assert proc.returncode == 130, (out, err[-3000:])
    next_step = next(line for line in out.splitlines() if line.startswith("next: "))
    assert "-p resume" in next_step and "-p fixed" in next_step and "env.HF_TOKEN" in next_step, \
        "the resume line asks for the secrets"
    with Store(bench.store_path) as store:
        sweep_id = store.latest_sweep_id()
        runs_before = _runs(bench, sweep_id)
        assert 1 <= sum(s in DONE_STATES for s in store.cell_status(sweep_id).values()) < 2
    record.unlink(missing_ok=True)

    bare = fk.ddlab_in(bench, "run", "sweep", "-p", "resume", "latest", timeout_s=300)
    printed += [bare.stdout, bare.stderr]
    assert bare.returncode == 1, bare.stdout
    headline = bare.stdout.splitlines()[0]
    assert headline.startswith("FAILED: ConfigError: resume=") and "keeps no secrets" in headline
    assert "env.HF_TOKEN" in headline and "api-key" in headline and "pass their real values again" in headline
    assert not record.exists(), "no server was started without its secrets"
    assert _runs(bench, sweep_id) == runs_before
    assert bench.baseline_active() and bench.lock() is None, "the host was not touched"
    pasted = fk.ddlab_in(bench, "run", "sweep", "-p", "resume", "latest", "-p", "fixed",
                         json.dumps({key: "***" for key in secrets}), timeout_s=300)
    assert pasted.returncode == 1 and "keeps no secrets" in pasted.stdout, "the mask is no secret"
    assert not record.exists()

    again = fk.ddlab_in(bench, "run", "sweep", "-p", "resume", "latest", "-p", "fixed",
                        json.dumps(secrets), timeout_s=300)
    printed += [again.stdout, again.stderr]
    assert again.returncode == 0, again.stderr[-3000:]
    assert re.match(r"(OK|WARNINGS): SWEEP DONE: 2 cells, 2 measured", again.stdout), again.stdout
    server = json.loads(record.read_text())  # the last cell the resume ran
    assert server["env"]["HF_TOKEN"] == HF_TOKEN
    assert server["argv"][server["argv"].index("--api-key") + 1] == API_KEY
    assert _leaks(bench.outputs, texts=tuple(printed)) == []
    bench.assert_put_back()


def test_process_manager_files_on_the_host_are_private(local, tmp_path):
    bench = local
    bench.project.outputs = tmp_path / "outputs"
    deploy = fk.ddlab_in(bench, "deploy", "--host", "local", *SECRET_SETS[:6])
    assert deploy.returncode == 0, deploy.stderr
    try:
        service = bench.current_service()
        folder = Path(bench.state_dir) / "services" / service.removesuffix(".service")
        wait_for(lambda: (folder / "log").is_file(), what="the server's log")
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(Path(bench.state_dir).stat().st_mode) == 0o700
        assert modes["spec.json"] == 0o600 and modes["log"] == 0o600, modes
        assert stat.S_IMODE(Path(bench.lock_path).stat().st_mode) == 0o600
        assert _leaks(bench.outputs, texts=(deploy.stdout, deploy.stderr)) == []
    finally:
        assert fk.ddlab_in(bench, "restore", "--host", "local").returncode == 0
    bench.assert_put_back()


def test_ddlab_unit_prints_no_secret(local):
    done = fk.ddlab_in(local, "unit", *SECRET_SETS)
    assert done.returncode == 0, done.stderr
    assert "PLANTED" not in done.stdout + done.stderr
    assert 'Environment="HF_TOKEN=***"' in done.stdout and "--api-key ***" in done.stdout


# --- host keys --------------------------------------------------------------------------


@pytest.mark.parametrize("known", ["unknown", "changed"])
def test_host_keys_are_checked_before_anything_runs(th, tmp_path, known):
    bench = th
    bench.project.outputs = tmp_path / "outputs"
    known_hosts = tmp_path / "known_hosts"
    if known == "unknown":
        known_hosts.write_text("")
    else:
        other = paramiko.Ed25519Key.from_private_key_file(str(bench.testhost.client_key))
        known_hosts.write_text(f"[127.0.0.1]:{bench.testhost.ssh_port} ssh-ed25519 "
                               f"{other.get_base64()}\n")
    before = known_hosts.read_text()
    profile = {**bench.profile.to_dict(), "known_hosts": str(known_hosts),
               "trust_on_first_use": known == "changed"}  # not even TOFU accepts a changed key
    profile.pop("name")
    fk.write_yaml(bench.root / "params" / "hosts" / "stranger.yaml", profile)
    logins = fk.sshd_logins(bench.testhost)
    for verb in ("deploy", "watch", "restore"):
        done = fk.ddlab_in(bench, verb, "--host", "stranger")
        assert done.returncode == 1, done.stderr
        line = fk.one_line(done.stderr)
        if known == "unknown":
            assert "is not in" in line and "unknown hosts are refused" in line, line
            assert f"ssh-keyscan -p {bench.testhost.ssh_port}" in line
        else:
            assert "HAS CHANGED" in line and "refused" in line and "ssh-keygen -R" in line, line
    if known == "unknown":  # a changed key is the same HostKeyError to a sweep: once is enough
        ran = fk.ddlab_in(bench, "run", "sweep", "-p", "host", "stranger", "-p", "budget", "4",
                          "-p", "topk_cap", "4", "-p", "cuda_graph", "false")
        assert ran.returncode == 1 and "stopped by HostKeyError" in ran.stdout, ran.stdout
    assert known_hosts.read_text() == before, "known_hosts untouched"
    assert fk.sshd_logins(bench.testhost) == logins, "no login happened"
    assert bench.lock() is None and bench.baseline_active()



@pytest.mark.slow
def test_secrets_through_the_deploy_and_poll_notebooks_never_leak(local, tmp_path):
    """``ddlab run deploy`` with secrets in ``overrides`` (the notebook prints the unit
    and its diffs), then ``ddlab run poll``: executed notebooks, reports, run.json."""
    bench = local
    bench.project.outputs = tmp_path / "outputs"
    overrides = json.dumps({"env.HF_TOKEN": HF_TOKEN, "env.DB_PASSWORD": DB_PASSWORD,
                            "flags.admin-api-key": API_KEY, "mem_fraction_static": 0.001})
    deploy = fk.ddlab_in(bench, "run", "deploy", "-p", "host", "local", "-p", "overrides",
                         overrides, timeout_s=240)
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    poll = fk.ddlab_in(bench, "run", "poll", "-p", "host", "local", "-p", "timeout_s", "60",
                       timeout_s=240)
    assert poll.returncode == 3, poll.stderr[-3000:]  # ddlab's code for a crash
    assert poll.stdout.startswith("CRASHED: "), poll.stdout  # the KV pool does not fit: never "OK"
    notebooks = sorted(bench.outputs.glob("*/*.ipynb"))
    assert [p.name for p in notebooks] == ["deploy.ipynb", "poll.ipynb"]
    assert "HF_TOKEN=***" in notebooks[0].read_text(), "the unit was printed, masked"
    assert _leaks(bench.outputs, texts=(deploy.stdout, deploy.stderr, poll.stdout,
                                        poll.stderr)) == []
    bench.assert_put_back()
