"""The jobs shared by the CLI and the notebooks, and the two notebooks run headless.

The notebooks run under real papermill (a real kernel) against ``-p host
local``. So that ``local`` does not mean the user's real ``~/.cache/ddlab``,
the tests point ``DDLAB_ROOT`` at a temp project (``project``, tests/conftest.py) whose
``params/hosts/local.yaml`` (which replaces the built-in profile) keeps the
lock and the process files in a temp folder; the bases are the repo's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ddlab
from ddlab.core.errors import ConfigError
from labkit import REPO, free_port, open_site, outputs_in


def _papermill(notebook: str, out: Path, *args: str) -> dict:
    done = subprocess.run([str(Path(sys.executable).with_name("papermill")), f"notebooks/{notebook}",
                           str(out), "--no-progress-bar", *args],
                          capture_output=True, text=True, timeout=300, cwd=REPO, env=os.environ)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def _outputs(nb: dict) -> list[dict]:
    """Every output of the executed notebook, in order."""
    return [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]


def _text(output: dict) -> str:
    data = output.get("data", {}).get("text/plain", output.get("text", ""))
    return "".join(data) if isinstance(data, list) else data


@pytest.mark.slow
def test_deploy_then_poll_notebooks_headless_the_verdict_first(project, tmp_path):
    port = free_port()
    deployed = _papermill("deploy.ipynb", tmp_path / "deploy.ipynb", "-p", "host", "local",
                          "-y", f"overrides: {{port: {port}, mem_fraction_static: 0.001}}")
    first = _outputs(deployed)[0]
    assert _text(first).startswith("PLAN: deploy local-mem0p001 "), _text(first)
    assert "DEPLOYED: local-mem0p001" in _text(_outputs(deployed)[-1])

    polled = _papermill("poll.ipynb", tmp_path / "poll.ipynb", "-p", "host", "local",
                        "-p", "timeout_s", "90")
    first = _outputs(polled)[0]
    assert first["output_type"] == "display_data"
    assert _text(first).startswith("CRASHED: local-mem0p001 on local: kv_pool_oom"), first
    assert "CRASHED" in "".join(first["data"]["text/html"])
    shown = "\n".join(_text(o) for o in _outputs(polled))
    assert "Not enough memory" in shown and "--- last " in shown
    assert not (tmp_path / "state" / "lock.json").exists(), "crashed: restored, lock released"
    assert not (tmp_path / "state" / "services" / "ddlab-local-mem0p001").exists()


@pytest.fixture(scope="module")
def ssh_site(testhost, tmp_path_factory):
    folder = tmp_path_factory.mktemp("actions-systemd")
    with outputs_in(folder / "outputs"), open_site("systemd-ssh", folder, testhost) as site:
        yield site


def test_plan_shows_the_unit_and_its_diffs_to_base_and_baseline(ssh_site):
    site = ssh_site
    plan = ddlab.plan_deploy(site.profile, str(site.base), ["port=31001"], read_baseline=True)
    assert plan.headline.startswith(f"PLAN: deploy test-port31001 (ddlab-test-port31001.service) "
                                    f"on {site.name}; baseline {site.baseline} stopped meanwhile")
    assert "-    --port 30000\n+    --port 31001" in plan.diff_to_base()
    assert f"--- {site.baseline}" in plan.diff_to_baseline()
    assert "time.sleep(3600)" in plan.diff_to_baseline(), "the baseline's unit, read from the host"
    assert site.lock() is None and site.baseline_active(), "planning touches nothing"


@pytest.mark.parametrize("overrides", [
    {"port": 31002, "budget": 8}, "port=31002", ("port=31002",), None,
], ids=["mapping", "one-string", "tuple", "none"])
def test_plan_takes_overrides_in_every_form_papermill_passes(overrides, project):
    plan = ddlab.plan_deploy("local", None, overrides)
    assert plan.variant.name.startswith("local") and plan.host.name == "local"
    if overrides is not None:
        assert plan.variant.config.flags["port"] == 31002


@pytest.mark.parametrize("kwargs, words", [
    ({"restore": "sometimes"}, "restore='sometimes': must be one of auto, always, never"),
    ({"timeout_s": 0}, "timeout_s=0: must be a finite number of seconds > 0; try timeout_s=600"),
    ({"grace_s": "5"}, "grace_s='5': must be a finite number of seconds > 0"),
], ids=["restore", "timeout", "grace-type"])
def test_watch_parameters_are_checked_before_the_host(kwargs, words, project):
    with pytest.raises(ConfigError) as info:
        ddlab.watch("local", **kwargs)
    assert words in str(info.value)
    assert not project.state.exists(), "nothing touched the host"


def test_restore_host_with_nothing_deployed_says_so(project):
    assert ddlab.restore("local") == "local: no variant was deployed; lock released"
