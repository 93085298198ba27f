"""vLLM's loop in the lab, the parts that need no server: where a vLLM base runs on ``local``
(the embedded target in vLLM's dialect), the target's own switches through vLLM's check,
and the family's words for requests, speculation and graphs (ddlab.lab.family_api).
The whole loop on a real target: tests/sweeps/test_vllm_sweep.py."""

from __future__ import annotations

import pytest

from ddlab.config.families import FAMILIES, family_named
from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError
from ddlab.hosts.profiles import HostProfile, load_host
from ddlab.lab.commands import check_command
from ddlab.lab.family_api import (SpecCounters, completion_body, completion_text,
                                  graphs_on_flags, speculative_flags, uses_generate)
from ddlab.lab.plans import as_host_runs, make_plan

VLLM, SGLANG = FAMILIES["vllm"], FAMILIES["sglang"]


@pytest.mark.parametrize("base", ["vllm-eagle3", "vllm-ngram"])
def test_a_vllm_base_on_local_runs_the_embedded_target_in_vllms_dialect(base):
    plan = make_plan(load_host("local"), base)
    config = plan.variant.config
    assert config.module == "ddlab.target" and config.python is None
    assert "-m ddlab.target \\\n    --dialect vllm ddlab-tiny \\\n" in plan.unit
    assert "/opt/vllm" not in plan.unit  # neither its interpreter nor its working directory
    assert "max_model_len" not in config.flags  # Qwen3-8B's 32768 is not the tiny model's
    assert plan.variant.name == make_variant(base).name  # named by what it changes, as before
    assert any("checked against vLLM" in note for note in plan.notes), plan.notes


def test_the_drafter_becomes_the_targets_own():
    config = as_host_runs(make_variant("vllm-eagle3"), load_host("local")).config
    assert config.flags["speculative_config"]["model"] == "ddlab-tiny-drafter"
    assert config.flags["speculative_config"]["method"] == "eagle3"


def test_a_length_the_variant_sets_is_kept_on_the_target():
    config = as_host_runs(make_variant("vllm-eagle3", ["max_model_len=256"]),
                          load_host("local")).config
    assert config.flags["max_model_len"] == 256


@pytest.mark.parametrize("base, host", [
    ("vllm-eagle3", HostProfile(name="gpu", transport="ssh", hostname="gpu1")),  # a real vLLM
    ("local", load_host("local")),                                               # SGLang's target
    ("ddtree", load_host("local")),                                              # SGLang unchanged
], ids=["vllm-on-ssh", "sglang-local", "sglang-ddtree-on-local"])
def test_other_hosts_and_families_run_the_base_as_it_is(base, host):
    variant = make_variant(base)
    assert as_host_runs(variant, host) is variant


def test_the_targets_fault_switch_passes_on_the_target_and_is_refused_for_a_real_vllm():
    variant = make_variant("vllm-eagle3", ["flags.debug_drop_verify_field=positions"])
    real = check_command(variant.config)
    assert [f.option for f in real.errors] == ["--debug-drop-verify-field"], real.findings
    embedded = as_host_runs(variant, load_host("local")).config
    assert embedded.flags["debug_drop_verify_field"] == "positions"
    assert check_command(embedded).errors == []


def test_a_switch_vllm_does_not_have_is_still_refused_when_the_variant_is_made():
    with pytest.raises(ConfigError, match="budget"):
        make_variant("vllm-eagle3", ["flags.budget=8"])


@pytest.mark.parametrize("family, flags, spec, graphs", [
    (VLLM, {"model": "m", "speculative_config": {"method": "eagle3"}}, True, True),
    (VLLM, {"model": "m", "enforce_eager": True}, False, False),
    (VLLM, {"model": "m", "enforce_eager": False, "speculative_config": {"method": "ngram"}},
     True, True),
    (SGLANG, {"speculative-algorithm": "DDTREE", "disable-cuda-graph": True}, True, False),
    (SGLANG, {"speculative-algorithm": "NONE"}, False, True),
], ids=["vllm-eagle3", "vllm-eager-nospec", "vllm-ngram", "sglang-ddtree-eager", "sglang-none"])
def test_speculation_and_graphs_are_read_by_the_family(family, flags, spec, graphs):
    assert speculative_flags(flags, family) is spec
    assert graphs_on_flags(flags, family) is graphs


def test_vllm_is_asked_by_completions_greedily_with_the_usage_at_the_end():
    assert uses_generate(SGLANG) and not uses_generate(VLLM)
    body = completion_body("def f():", 8, model="ddlab-tiny", stream=True)
    assert body == {"prompt": "def f():", "max_tokens": 8, "temperature": 0, "model": "ddlab-tiny",
                    "stream": True, "stream_options": {"include_usage": True}}
    answer = {"choices": [{"text": " return 1"}], "usage": {"completion_tokens": 3}}
    assert completion_text(answer) == (" return 1", 3)
    with pytest.raises(ValueError, match="not a /v1/completions answer"):
        completion_text({"text": "an SGLang /generate answer"})


@pytest.mark.parametrize("before, after, want", [
    ((10, 5), (40, 15), 4.0),   # 30 accepted over 10 drafts: 1 + 3, the bonus token included
    ((10, 5), (10, 5), None),   # no draft in between: no figure
], ids=["drafts", "none"])
def test_mean_acceptance_length_is_vllms_own_formula(before, after, want):
    counters = family_named("vllm").counters  # the family's own counters and formula
    accepted, drafts = (SpecCounters(*after).accepted - SpecCounters(*before).accepted,
                        SpecCounters(*after).drafts - SpecCounters(*before).drafts)
    assert counters.acceptance(accepted, drafts) == want
    assert family_named("sglang").counters.acceptance(30, 10) == 3.0  # tokens hold the bonus
