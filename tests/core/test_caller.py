"""Error fixes in the caller's words: ``-p budget 32`` to a papermill user,
``--set budget=32`` / ``--budget 32`` on the CLI, ``budget=32`` in Python."""

from __future__ import annotations

import pytest

from ddlab.config.overrides import ALIASES
from ddlab.config.variants import make_variant
from ddlab.core import caller
from ddlab.core.errors import ConfigError


@pytest.fixture
def speaking():
    """Set the caller (and the running notebook's parameters) for one test."""
    def speak_as(name, parameters=()):
        caller.set_caller(name)
        caller.set_notebook_parameters(parameters)

    yield speak_as
    caller.set_caller("")
    caller.set_notebook_parameters(())


SWEEP = ("host", "budget", "topk_cap", "cuda_graph", "requests", "max_cells", "timeout_s")


@pytest.mark.parametrize("fix, who, said", [
    ("e.g. -p budget 16, or a list", "papermill", "e.g. -p budget 16, or a list"),
    ("e.g. -p budget 16, or a list", "cli", "e.g. --budget 16, or a list"),
    ("e.g. -p budget 16, or a list", "python", "e.g. budget=16, or a list"),
    ("e.g. -p timeout_s 600", "cli", "e.g. --timeout 600"),
    ("confirm it with -p max_cells 8002 ", "cli", "confirm it with --max-cells 8002 "),
    ("-p budget '[]' -p topk_cap '[]'", "python", "budget=[] topk_cap=[]"),
    ("try --set speculative_ddtree_budget=32", "cli", "try --budget 32"),
    ("try --set mem_fraction_static=0.8", "cli", "try --set mem_fraction_static=0.8"),
    ("try --set speculative_ddtree_budget=32", "papermill", "try -p budget 32"),
    ("try --set speculative_ddtree_budget=32", "python", "try speculative_ddtree_budget=32"),
    ("try --set mem_fraction_static=0.8", "papermill", "try mem_fraction_static=0.8"),
    ("try --set flags.x-y=VALUE to pass --x-y verbatim", "python",
     "try flags.x-y=VALUE to pass --x-y verbatim"),
    ("ssh-keyscan -p 2222 host >> known_hosts", "python", "ssh-keyscan -p 2222 host >> known_hosts"),
], ids=["param-papermill", "param-cli", "param-python", "timeout-cli", "max-cells-cli",
        "quoted-python", "override-cli-a-verb-option", "override-cli", "override-papermill-alias",
        "override-python",
        "override-papermill-no-parameter", "flags-python", "not-a-parameter"])
def test_a_fix_is_said_in_the_callers_words(speaking, fix, who, said):
    speaking(who, SWEEP)
    assert caller.speak(fix) == said


def test_the_same_error_reads_differently_per_caller(speaking):
    with pytest.raises(ConfigError) as info:
        make_variant("local", {"budget": 0})
    err = info.value
    assert err.message.startswith("budget=0: "), "the key as given, not the flag's own name"
    speaking("papermill", SWEEP)
    assert str(err).endswith("; try -p budget 32")
    speaking("cli")
    assert str(err).endswith("; try --set budget=32")
    speaking("cli", ("budget",))  # ddlab sweep --budget 0
    assert str(err).endswith("; try --budget 32")
    speaking("")
    assert caller.caller() == "python", "a script (and a test) outside any kernel"
    assert str(err).endswith("; try budget=32")


@pytest.mark.parametrize("key, said", [
    ("topk-cap", "topk-cap=0: must be an integer >= 1; try --set topk-cap=8"),
    ("topk_cap", "topk_cap=0: must be an integer >= 1; try --set topk_cap=8"),
    ("speculative-ddtree-topk-cap", "speculative-ddtree-topk-cap=0: must be an integer >= 1; "
                                    "try --set speculative-ddtree-topk-cap=8"),
    ("speculative_ddtree_topk_cap", "speculative_ddtree_topk_cap=0: must be an integer >= 1; "
                                    "try --set speculative_ddtree_topk_cap=8"),
], ids=["alias-kebab", "alias-snake", "flag-kebab", "flag-snake"])
def test_a_refused_value_is_said_in_the_spelling_given(speaking, key, said):
    speaking("cli")
    with pytest.raises(ConfigError) as info:
        make_variant("local", {key: 0})
    assert str(info.value) == said
    assert info.value.key == "speculative-ddtree-topk-cap", "the facts keep the flag's name"


def test_the_parameters_a_fix_may_name_follow_the_override_aliases():
    snake = {alias: flag.replace("-", "_") for alias, flag in ALIASES.items()}
    for key, parameter in caller.PARAMETER_OF.items():
        assert key == parameter or snake.get(parameter) == key, key
    assert {"budget", "topk_cap", "cuda_graph"} <= set(caller.PARAMETER_OF.values()) <= set(ALIASES)


def test_an_unknown_caller_is_refused():
    with pytest.raises(ValueError, match="must be one of python, cli, papermill"):
        caller.set_caller("bash")


@pytest.mark.parametrize("who", ["cli", "python", "papermill"])
def test_a_whole_ddlab_run_command_is_kept_as_written(who):
    """Issue 23 item 5: the pool's fix 'then resume: ddlab run sweep -p resume ID' was
    spoken to the CLI as `ddlab run sweep --resume ID`, a usage error (and to Python as
    `ddlab run sweep resume=ID`); a whole command parses as written, for every caller."""
    fix = ("fix those hosts, then resume: ddlab run sweep -p resume 20261202T0601Z-duo-b4 "
           "-p fixed '{\"env.HF_TOKEN\": \"***\"}'; or try -p budget 32")
    said = caller.speak(fix, who)
    assert "ddlab run sweep -p resume 20261202T0601Z-duo-b4 -p fixed '{\"env.HF_TOKEN\": " \
           "\"***\"}'" in said
    assert said.endswith({"cli": "try --budget 32", "python": "try budget=32",
                          "papermill": "try -p budget 32"}[who])
