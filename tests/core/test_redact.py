from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddlab.core.redact import MASK, looks_secret, redact, redact_argv, redact_text, remember_secret
from ddlab.core import redact as redact_module


@pytest.fixture(autouse=True)
def _a_fresh_process(monkeypatch):
    """Each test starts knowing what a fresh process knows: no name or value given yet. The
    worker may have run an in-process sweep given ``env.DB_PASSWORD`` before (tests/reliability/
    test_secrets.py), which left that name remembered (a fresh clone's run, 2026-12-05)."""
    monkeypatch.setattr(redact_module, "_values", set())
    monkeypatch.setattr(redact_module, "_names", set())


@pytest.mark.parametrize("name", ["HF_TOKEN", "api-key", "--api-key", "OPENAI_API_KEY",
                                  "db_password", "dbPassword", "AWS_SECRET_ACCESS_KEY",
                                  "GITHUB_TOKEN", "client_secret", "ssh_keys"])
def test_secret_names(name):
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["max_new_tokens", "--max-total-tokens", "tokenizer-path",
                                  "speculative-ddtree-topk-cap", "PATH", "port",
                                  "kv_cache_dtype", "SGLANG_DDTREE_MAX_TOPK"])
def test_innocent_names(name):
    assert not looks_secret(name)


def test_redact_mapping_masks_secret_values_and_keeps_the_rest():
    data = {"env": {"HF_TOKEN": "hf_planted", "CUDA_VISIBLE_DEVICES": "0"},
            "flags": {"api-key": "sk-planted", "cuda-graph-bs": [1, 2, 4], "port": 30000}}
    out = redact(data)
    assert "planted" not in json.dumps(out)
    assert out["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert out["flags"]["cuda-graph-bs"] == [1, 2, 4]
    assert out["flags"]["port"] == 30000
    assert data["env"]["HF_TOKEN"] == "hf_planted", "redact must not change its input"


def test_redact_argv_masks_the_value_after_a_secret_flag():
    argv = ["/usr/bin/python", "-m", "sglang.launch_server", "--api-key", "sk-planted",
            "--port", "30000", "--admin-token=tok-planted"]
    assert redact_argv(argv) == ["/usr/bin/python", "-m", "sglang.launch_server",
                                 "--api-key", MASK, "--port", "30000", f"--admin-token={MASK}"]


@pytest.mark.parametrize("text", [
    'Environment="HF_TOKEN=hf_planted"',
    "ExecStart=/x/python -m sglang.launch_server --api-key planted --port 1",
    '{"api_key": "planted", "max_new_tokens": 3}',
    "server_args={'model_path': 'x', 'api_key': 'planted', 'port': 30000}",
    "export GITHUB_TOKEN=planted",
], ids=["env-line", "exec-flag", "json", "server-args-dict", "shell"])
def test_well_known_secret_names_are_masked_in_any_text(text):
    out = redact_text(text)
    assert "planted" not in out
    assert MASK in out


@pytest.mark.parametrize("name, text", [
    ("DB_PASSWORD", 'Environment="DB_PASSWORD=given with spaces"'),
    ("password", "password: given-yaml"),
    ("MY_CLOUD_KEY", "connecting with given-elsewhere-key to the bucket"),
], ids=["env-quoted-spaces", "yaml", "the-bare-value-anywhere"])
def test_a_secret_ddlab_was_given_is_masked_by_value_and_name(name, text):
    value = {"DB_PASSWORD": "given with spaces", "password": "given-yaml",
             "MY_CLOUD_KEY": "given-elsewhere-key"}[name]
    assert value in redact_text(text), "not known yet: nothing to mask by"
    remember_secret(name, value)
    out = redact_text(text)
    assert value not in out and MASK in out


@pytest.mark.parametrize("line", [
    "ddlab-local-drop-num-token-non-padded-f4ee.service: Main process exited, code=killed, "
    "status=9/KILL",
    "KeyError: 'model.layers.0.self_attn.token_key_norm.weight'",
    "Decode batch, #running-req: 2, #full token: 512, full token usage: 0.01, "
    "#mamba num: 2, accept len: 3.10",
    "--speculative-ddtree-budget 32 --max-total-tokens 64k",
], ids=["unit-named-token", "keyerror-weight-name", "mamba-full-token", "flags"])
def test_evidence_whose_words_look_secret_stays_whole(line):
    """Issue 12, finding 4: words are not secrets; only values ddlab was given are."""
    assert redact_text(line) == line


def test_redact_text_keeps_innocent_pairs():
    text = "--port 30000 max_new_tokens=128 --speculative-ddtree-budget 32"
    assert redact_text(text) == text


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters='"\n'),
               min_size=1, max_size=40).filter(lambda v: v.strip() == v and v))
def test_any_secret_value_in_an_env_line_is_masked(value):
    out = redact_text(f'Environment="HF_TOKEN={value}"')
    assert out == f'Environment="HF_TOKEN={MASK}"'


def test_sglang_counters_are_not_secrets():
    """'#new-token: 4' looks like a secret-named pair but is SGLang's counter."""
    line = ("Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0")
    assert redact_text(line) == line
    decode = "Decode batch, #running-req: 1, #token: 812, token usage: 0.00, accept len: 6.41"
    assert redact_text(decode) == decode


def test_a_figure_named_after_tokens_is_no_secret_and_numbers_are_never_remembered():
    """Seen on the H200 run (docs/gpu-run): ``token_usage_max: 0.01`` counted as a secret,
    and every "0.01" after it (token usage, free memory) became ***."""
    from ddlab.core.redact import looks_secret, redact, redact_text

    assert not looks_secret("token_usage_max") and not looks_secret("num_token_non_padded")
    assert looks_secret("x-admin-token") and looks_secret("AWS_SECRET_ACCESS_KEY")
    assert redact({"token_usage_max": 0.0123})["token_usage_max"] == 0.0123
    redact({"db_password": 4242.5})  # a numeric value under a secret name: masked there only
    assert redact_text("avail mem=4242.5 GB, token usage: 0.0123") == \
        "avail mem=4242.5 GB, token usage: 0.0123"
