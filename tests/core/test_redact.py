from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddlab.core.redact import MASK, looks_secret, redact, redact_argv, redact_text


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
    'Environment="DB_PASSWORD=planted with spaces"',
    "ExecStart=/x/python -m sglang.launch_server --api-key planted --port 1",
    '{"api_key": "planted", "max_new_tokens": 3}',
    "password: planted",
    "export GITHUB_TOKEN=planted",
], ids=["env-line", "env-quoted-spaces", "exec-flag", "json", "yaml", "shell"])
def test_redact_text_masks_planted_secret(text):
    out = redact_text(text)
    assert "planted" not in out
    assert MASK in out


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
