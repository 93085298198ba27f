"""Issue 13 audit: tests for behaviour that was delivered but not yet pinned by a test.

- bad probe specs are refused before anything touches a host: deploy (CLI and API),
  a base file, a sweep's ``fixed`` and ``extra``;
- probes from a base, a sweep's ``fixed`` and ``extra`` reach the cells' variants,
  and a probed config is another variant (hash and name);
- a probe on a module that does not exist, deployed on the stand-in server: it
  starts and serves as usual, and its log holds one DDLAB_PROBE ``missing`` line
  naming the closest target;
- plots mark a wrong_output cell (red ring, "WRONG output" in the heatmap);
- a probe whose *top-level* module does not exist logs one ``missing`` line (a gap
  the audit found: it used to wait for an import that never comes, silently).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ddlab
import sweepkit
from ddlab.config.bases import Config
from ddlab.core.errors import ConfigError
from ddlab.hosts.profiles import load_host
from ddlab.lab.deploy import deployed
from ddlab.sweeps.results import load_cells
from ddlab.sweeps.plan import plan_sweep
from ddlab.lab.watch import watch
from ddlab.probes import install_files, probe_env, probe_records
from ddlab.report import plots
from labkit import DDLAB, REPO, clean, site_fixture  # noqa: F401 (clean: a fixture)

site = site_fixture("process-local")

FILL_FROM = "ddlab.target.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner.fill_from"
BAD = ["mod.fn;reboot", "mod.fn rm", "mod.$(reboot)", "mod.fn|cat", "mod.`id`.fn"]
COMMAND = {"python": None, "module": "sglang.launch_server"}


# --- bad specs: refused before any host ---------------------------------------------


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_probe_is_refused_by_plan_deploy_before_the_host_is_read(bad, monkeypatch):
    """With ``read_baseline`` the plan would read the baseline's unit over the host's
    transport; a bad probe is a ConfigError before that (the transport is never opened)."""
    import ddlab.lab.plans as plans

    def touched(*_a, **_k):
        raise AssertionError("the host was touched")

    monkeypatch.setattr(plans, "connect", touched)
    profile = load_host("local", baseline_service="ddlab-audit-baseline.service")
    with pytest.raises(ConfigError, match=r"probe .*(space|not allowed)") as err:
        ddlab.plan_deploy(profile, probes=[bad], read_baseline=True)
    assert "DOTTED.PATH[:MODE]" in err.value.fix


@pytest.mark.parametrize("bad", ["mod.fn;reboot", "mod.fn rm"])
def test_ddlab_deploy_with_a_bad_probe_says_so_and_fails_without_a_lock(bad, tmp_path):
    """The real command, not a dry run, on the local host: exit 1, the message names the
    value and the fix, and the host's state folder never got a lock."""
    state = tmp_path / "state"
    profile = tmp_path / "audit.yaml"
    profile.write_text(f"state_dir: {state}\nservice_manager: process\n")
    done = subprocess.run([DDLAB, "deploy", "--host", str(profile), "--probe-fn", bad],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "DDLAB_OUTPUTS": str(tmp_path / "outputs")})
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert f"probe {bad!r}" in done.stderr and "DOTTED.PATH[:MODE]" in done.stderr, done.stderr
    assert not (state / "lock.json").exists(), "nothing touched the host's state"


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_probe_in_a_base_is_refused(bad):
    with pytest.raises(ConfigError, match=r"probe "):
        Config.from_dict({"command": COMMAND, "flags": {}, "probes": [bad]})


@pytest.mark.parametrize("where", ["fixed", "extra"])
def test_a_bad_probe_in_a_sweep_is_refused_when_it_is_planned(where):
    kwargs = {"fixed": {"probes": BAD[0]}} if where == "fixed" else \
        {"extra": [{"probes": [BAD[0]]}]}
    with pytest.raises(ConfigError, match="not allowed in the path"):
        plan_sweep("local", {"cuda_graph": [True]}, **kwargs)


# --- good specs: where they reach ---------------------------------------------------


def test_probes_in_a_base_are_kept_canonical_and_make_another_variant():
    plain = Config.from_dict({"command": COMMAND, "flags": {}})
    probed = Config.from_dict({"command": COMMAND, "flags": {},
                               "probes": [FILL_FROM, f"{FILL_FROM}:first=2"]})
    assert probed.probes == (f"{FILL_FROM}:error", f"{FILL_FROM}:first=2")
    assert probed.hash != plain.hash, "a probed server is another variant"
    assert Config.from_dict(probed.to_dict()).probes == probed.probes, "round trip"


def test_probes_in_a_sweeps_fixed_and_extra_reach_their_cells():
    replay = "ddlab.target.cuda_graph_runner.CudaGraphRunner.replay:first=3"
    plan = plan_sweep("local", {"cuda_graph": [True]}, baseline=False,
                      fixed={"probes": [FILL_FROM]}, extra=[{"probes": replay}])
    by_role = {cell.role: cell.variant for cell in plan.cells}
    assert by_role["grid"].config.probes == (f"{FILL_FROM}:error",)
    assert by_role["extra"].config.probes == (replay,), "an extra cell's own probes win"
    # a cell is named by what it changes against the base with the fixed overrides applied:
    # the fixed probe is every cell's (its hash differs), the extra's own probe is its change
    assert "probe" not in by_role["grid"].name and "probe" in by_role["extra"].name
    assert by_role["grid"].hash != plan_sweep("local", {"cuda_graph": [True]},
                                              baseline=False).cells[0].hash


# --- a probe on nothing: the server starts as usual, one line says so ---------------


@pytest.mark.slow
def test_a_probe_on_a_module_that_does_not_exist_is_one_line_and_the_server_serves(clean):
    site = clean
    typo = FILL_FROM.replace("decode_cuda_graph_runner", "decode_cuda_graph_runnr")
    variant = site.variant(f"probes={typo}")
    with deployed(site.profile, variant) as (lab, _dep):
        verdict = watch(lab, timeout_s=120, probe=True, grace_s=0.5, lossless=False)
    assert verdict.state == "ready" and all(p.ok for p in verdict.probes), verdict.render()
    records = probe_records((Path(verdict.run_dir) / "journal.log").read_text())
    missing = [r for r in records if r["event"] == "missing"]
    assert len(missing) == len({r["pid"] for r in missing}) >= 1, "once per process"
    assert all(r["target"] == typo and r["closest"] == FILL_FROM for r in missing), missing
    assert not [r for r in records if r["event"] in ("armed", "raised", "failed")], records
    # issue 23 item 8: the verdict itself says the probe saw nothing, and names the closest
    said = [n for n in verdict.notes if "is not armed" in n]
    assert said and typo in said[0] and f"--probe-fn {FILL_FROM}" in said[0], verdict.notes
    assert f"note:       probe {typo} is not armed" in verdict.render()
    site.assert_put_back(variant.unit_name)


# --- plots mark a wrong cell --------------------------------------------------------


def test_plots_mark_a_wrong_output_cell_and_the_heatmap_says_so(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    grid = {"budget": [4, 16], "topk_cap": [4], "cuda_graph": [True]}
    outcomes = [("measured", {"output_tok_s": 100.0, "accept_length": 1.0}),
                ("measured", {"output_tok_s": 150.0, "accept_length": 2.0}),
                ("measured", {"output_tok_s": 400.0, "accept_length": 3.0})]
    sweepkit.synthetic_sweep(path, outcomes, grid=grid)
    frame = load_cells(store=path)
    wrong = frame.index[(frame["role"] == "grid") & (frame["budget"] == 16)]
    frame.loc[wrong, "status"] = "wrong_output"  # the fastest cell serves wrong tokens
    ax = plots.throughput_vs_budget(frame).axes[0]
    rings = [c for c in ax.collections if c.get_label() == "WRONG OUTPUT (not lossless)"]
    assert len(rings) == 1 and list(rings[0].get_offsets()[:, 1]) == [400.0]
    assert "wrong (k=4)" in [t.get_text() for t in ax.texts]
    line = next(c.lines[0] for c in ax.containers if c.get_label() == "top-k cap 4")
    assert list(line.get_ydata()) == [150.0], "the wrong cell is not on the cap's line"
    texts = [t.get_text() for t in plots.heatmap(frame, "output_tok_s").axes[0].texts]
    assert "WRONG\noutput" in texts and "400" not in texts


# --- a gap: a top-level module that does not exist ----------------------------------


def test_a_probe_on_a_top_level_module_that_does_not_exist_logs_one_line(tmp_path):
    install_files(tmp_path / "probe")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DDLAB_PROBES")}
    env.update(probe_env(["no_such_module_ddlab_audit.fn"], tmp_path / "probe"))
    done = subprocess.run([sys.executable, "-c", "import json; print(json.dumps(1))"],
                          env=env, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "1", "the program runs as usual"
    records = probe_records(done.stderr)
    assert [r["event"] for r in records] == ["missing"], json.dumps(records)
    assert "no_such_module_ddlab_audit" in records[0]["error"]["message"]


def test_the_planned_unit_shows_the_probes_environment_deploy_adds(tmp_path):
    """The dry run's unit is the one deploy installs: with probes, the two lines that arm
    them (the hook's folder under the profile's state_dir, the unit's own name). A base
    without probes (the baseline) has neither."""
    profile = load_host("local")
    plan = ddlab.plan_deploy(profile, probes=[FILL_FROM])
    folder = f"{profile.state_dir.rstrip('/')}/probes/{plan.variant.unit_name}"
    armed = next(line for line in plan.unit.splitlines() if "DDLAB_PROBES=" in line)
    assert FILL_FROM in armed, plan.unit
    assert f"PYTHONPATH={folder}" in plan.unit, plan.unit
    assert "DDLAB_PROBES" not in plan.base_unit and "probes/" not in plan.base_unit


@pytest.mark.parametrize("title, rank", [
    ("sglang::scheduler", 0), ("sglang::scheduler_TP3", 3), ("sglang::scheduler_DP1_TP2", 2),
    ("sglang::scheduler_DP0_ATTN_CP1_MOE_DP0_TP5_EP5", 5), ("sglang::scheduler_DP1", "DP1"),
    ("sglang::detokenizer", None), ("/usr/bin/python3", None), ("", None),
])
def test_a_schedulers_process_title_tells_its_rank(title, rank):
    """SGLang sets no RANK variable in its schedulers (audit of issue 13); it titles them
    with its log prefix (0.5.23 scheduler.py:6279-6294), so records get a rank from that."""
    from ddlab.probes import hook

    assert hook.title_rank(title) == rank


def test_a_probed_process_titled_like_a_scheduler_reports_that_rank(tmp_path):
    """The rank read off the real process title: /proc/self/cmdline of a process whose
    argv[0] is what setproctitle would leave (exec -a sets it the same way)."""
    install_files(tmp_path / "probe")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DDLAB_PROBES", "RANK", "LOCAL_RANK", "SGLANG_TP_RANK")}
    env.update(probe_env(["json.dumps:first=1"], tmp_path / "probe"))
    done = subprocess.run(["bash", "-c", f'exec -a sglang::scheduler_TP2 {sys.executable} -c '
                           '"import json; json.dumps(1)"'],
                          env=env, capture_output=True, text=True, timeout=60, check=True)
    records = [r for r in probe_records(done.stderr) if r["event"] != "armed"]
    assert records and all(r["rank"] == 2 for r in records), json.dumps(records)
