"""The field's crash, end to end, and what a probe adds: no edit of the installed server.

Graphs on and a verify field dropped (``num_token_non_padded``): the replay crash
says nothing of which field was None, so the verdict's suggestion names a probe;
deployed again with it, the verdict's first line names the field. The server's
own files are byte-identical before and after (checksums), the baseline never
carries probes, and removing the variant removes the hook's folder.
"""

from __future__ import annotations

import hashlib
import re
import sysconfig
from pathlib import Path

import pytest

import ddlab.target
from ddlab.lab.deploy import deployed
from ddlab.sweeps.plan import BASELINE_OVERRIDES
from ddlab.lab.watch import watch
from labkit import FIELD_CRASH, clean, kinds, site_fixture  # noqa: F401 (clean: a fixture)

site = site_fixture("process-local", "systemd-ssh")
PROBE = re.compile(r"`ddlab deploy --probe-fn (\S+) ...`")


def _checksums() -> dict:
    """sha256 of every file of the server's package, and the interpreter's site-packages
    listing (a sitecustomize written there would show)."""
    root = Path(ddlab.target.__file__).parent
    sums = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.py"))}
    sums["site-packages"] = sorted(p.name for p in Path(sysconfig.get_paths()["purelib"]).iterdir())
    return sums


@pytest.mark.slow
def test_the_replay_crash_suggests_a_probe_which_then_names_the_none_field(clean):
    site = clean
    before = _checksums()
    with deployed(site.profile, site.variant(*FIELD_CRASH)) as (lab, _dep):
        first = watch(lab, timeout_s=120, probe=True, grace_s=1)
    assert first.state == "crashed" and first.diagnosis.kind == "cuda_graph_replay", first.render()
    assert "num_token_non_padded" not in first.headline, "the traceback alone does not say"
    probe = PROBE.search(first.next_step)
    assert probe, first.next_step
    target = probe.group(1)
    assert target.endswith("DecodeCudaGraphRunner.fill_from"), target

    variant = site.variant(*FIELD_CRASH, f"probes={target}")
    with deployed(site.profile, variant) as (lab, dep):
        unit = lab.manager.definition(dep.service)
        folder = lab._probe_folder(dep.service)
        assert "DDLAB_PROBES" in unit and folder in unit
        assert "DDLAB_PROBES" not in (lab.manager.definition(site.baseline) or ""), \
            "the baseline never carries probes"
        second = watch(lab, timeout_s=120, probe=True, grace_s=1)
    first_line = second.render().splitlines()[0]
    assert second.state == "crashed" and second.diagnosis.kind == "cuda_graph_replay"
    assert "num_token_non_padded is None (DDLAB_PROBE)" in first_line, first_line
    assert second.diagnosis.facts["none_fields"] == ["num_token_non_padded"]
    journal = (Path(second.run_dir) / "journal.log").read_text()
    assert "DDLAB_PROBE" in journal and '"event":"raised"' in journal
    assert site.transport.run(["test", "-e", folder], check=False).exit_code != 0, \
        "removing the variant removed the hook's folder"
    site.assert_put_back(variant.unit_name)
    assert _checksums() == before, "the installed server's files are untouched"


SKIP_FAULT = (FIELD_CRASH[0], "debug_drop_verify_mode=skip")  # 0.5.23's own, said outright


# systemd-ssh only: the skip mode's probe path and its records are the same code on every
# host kind; a probe installed and read on process-local is the replay crash's test above
@pytest.mark.slow
@pytest.mark.parametrize("site", kinds("systemd-ssh"), indirect=True, ids=str)
def test_the_skip_modes_wrong_output_suggests_a_probe_that_sees_the_none_field(clean):
    """Issue 23 item 7: in 0.5.23's skip mode the copy skips the dropped field and the
    graph replays a stale buffer: WRONG OUTPUT, no crash. Before, the next step named
    '--probe-fn ...CudaGraphRunner.replay:first=3' (no such path: it never fired) and an
    error-mode probe's records never came (nothing raises there); a first=N probe's
    records were ignored. Now the next step names the copy's real path, and with that
    probe deployed the verdict's cause names the None field."""
    site = clean
    reference = site.variant(*(f"{k}=null" for k in BASELINE_OVERRIDES))  # no speculation
    with deployed(site.profile, reference) as (lab, _dep):  # records the lossless reference
        assert watch(lab, timeout_s=120, probe=True, grace_s=0).state == "ready"
    with deployed(site.profile, site.variant(*SKIP_FAULT)) as (lab, _dep):
        first = watch(lab, timeout_s=120, probe=True, grace_s=1)
    assert first.state == "wrong_output", first.render()
    assert "num_token_non_padded" not in first.headline, "the tokens alone do not say"
    probe = PROBE.search(first.next_step)
    assert probe, first.next_step
    target = probe.group(1)
    assert target == ("ddlab.target.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner"
                      ".fill_from:first=3"), target

    variant = site.variant(*SKIP_FAULT, f"probes={target}")
    with deployed(site.profile, variant) as (lab, _dep):
        second = watch(lab, timeout_s=120, probe=True, grace_s=1)
    assert second.state == "wrong_output", second.render()
    assert "num_token_non_padded is None (DDLAB_PROBE)" in second.headline, second.headline
    assert second.diagnosis.facts["none_fields"] == ["num_token_non_padded"]
    assert "num_token_non_padded is None in the verify batch" in second.next_step
    site.assert_put_back(variant.unit_name)
