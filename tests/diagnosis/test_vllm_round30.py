"""The rules that held-out round 30 of the vLLM corpus (w3001-w3013, measured once at 2459fb4 with its logs
50e0dec) showed missing: V0's KV-transfer connector raising while it sends a step's KV caches (w3003, a PD
prefill instance over Mooncake whose SimpleConnector reshape does not fit DeepSeek's MLA cache) and the
FlashAttention version check of V1's backend in vLLM 0.7.1-0.7.2, a bare AssertionError on a GPU under
compute capability 8.0 (w3008, a T4).

Each rule is general and cited from the source that prints its text (vLLM 0.7.2's and 0.7.3's wheels): the
log that showed it is one case, a text written from the source in another form is the other, and a text
beside it that the rule must not take is a third. The source checks skip where the wheels are not unpacked
(CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

SOURCES = [
    # V0's model runner handing a step's KV caches to the KV-transfer agent, and the agent to its connector
    ("0.7.3", "vllm/worker/model_runner.py",
     "get_kv_transfer_group().send_kv_caches_and_hidden_states(\n                # model_executable"),
    ("0.7.3", "vllm/distributed/kv_transfer/kv_transfer_agent.py",
     "        self.connector.send_kv_caches_and_hidden_states(\n            model_executable, model_input,"),
    ("0.7.3", "vllm/distributed/kv_transfer/kv_transfer_agent.py",
     "        return self.connector.recv_kv_caches_and_hidden_states("),
    # SimpleConnector's reshape to (-1, KV heads / TP, hidden size / heads): an MLA cache has another layout
    ("0.7.3", "vllm/distributed/kv_transfer/kv_connector/simple_connector.py",
     "key_cache = kv_cache[0].reshape(-1, num_heads, head_size)"),
    # V1's FlashAttention backend asserting its FA version runs on this GPU (0.7.2), the reason logged above
    ("0.7.2", "vllm/v1/attention/backends/flash_attn.py",
     "        if not is_fa_version_supported(self.fa_version):\n"
     "            logger.error(\"Cannot use FA version %d is not supported due to %s\","),
    ("0.7.2", "vllm/v1/attention/backends/flash_attn.py",
     "        assert is_fa_version_supported(self.fa_version)"),
    ("0.7.2", "vllm/vllm_flash_attn/flash_attn_interface.py",
     "    if torch.cuda.get_device_capability(device)[0] < 8:\n        return False, \\\n"
     "            \"FA2 is only supported on devices with compute capability < 8\""),
    ("0.7.2", "vllm/vllm_flash_attn/flash_attn_interface.py",
     "return False, f\"FA2 is unavaible due to: {FA2_UNAVAILABLE_REASON}\""),
    # from 0.7.3 the check is get_flash_attn_version's, which catches the AssertionError
    ("0.7.3", "vllm/attention/backends/utils.py",
     "        assert is_fa_version_supported(fa_version)\n        return fa_version\n"
     "    except (ImportError, AssertionError):"),
]

test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)

_WORKER = "(VllmWorkerProcess pid=301) ERROR 04-16 20:47:15 [multiproc_worker_utils.py:238] "
_RUNNER = ("vllm/worker/model_runner_base.py", 116, "_wrapper", "return func(*args, **kwargs)")
_EXECUTE = ("vllm/worker/model_runner.py", 1743, "execute_model",
            "get_kv_transfer_group().send_kv_caches_and_hidden_states(")
_AGENT = ("vllm/distributed/kv_transfer/kv_transfer_agent.py", 61, "send_kv_caches_and_hidden_states",
          "self.connector.send_kv_caches_and_hidden_states(")
_CONNECTOR = ("vllm/distributed/kv_transfer/kv_connector/simple_connector.py", 184,
              "send_kv_caches_and_hidden_states", "key_cache = kv_cache[0].reshape(-1, num_heads, head_size)")
_RESHAPE = "RuntimeError: shape '[-1, 16, 56]' is invalid for input of size 36864"


# --- w3003: V0's KV connector raising while it sends a step's KV caches ------------------------------------

def test_an_exception_in_the_kv_connectors_send_is_pd_transfer():
    """w3003: two V0 workers' tracebacks interleaved, one's frames running execute_model into the KV-transfer
    agent's send_kv_caches_and_hidden_states, the other's RuntimeError of an invalid reshape; read unknown
    before. The whole traceback, down to SimpleConnector's reshape, reads the same."""
    assert reads(read_log("w3003.log")) == (True, "pd_transfer", "serving")
    assert vllm_signature(read_log("w3003.log")) == "vllm_kv_transfer_v0"
    whole = vllm_traceback(_RUNNER, _EXECUTE, _AGENT, _CONNECTOR, exc=_RESHAPE, head=_WORKER)
    assert vllm_signature(whole) == "vllm_kv_transfer_v0"
    assert reads(whole)[:2] == (True, "pd_transfer")


def test_the_same_error_outside_the_kv_transfer_is_not_it():
    """The same reshape error raised in the model's forward (no KV-transfer frame) is no transfer's, and an
    out-of-memory in the connector's frames stays cuda_oom."""
    forward = vllm_traceback(_RUNNER, ("vllm/worker/model_runner.py", 1719, "execute_model",
                                       "hidden_or_intermediate_states = model_executable("),
                             ("vllm/model_executor/models/deepseek_v2.py", 500, "forward",
                              "q = q.view(-1, self.num_local_heads, self.qk_head_dim)"),
                             exc=_RESHAPE, head=_WORKER)
    assert vllm_signature(forward) != "vllm_kv_transfer_v0"
    assert reads(forward)[1] != "pd_transfer"
    oom = vllm_traceback(_RUNNER, _EXECUTE, _AGENT, head=_WORKER,
                         exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert vllm_signature(oom) != "vllm_kv_transfer_v0"
    assert reads(oom)[1] == "cuda_oom"


# --- w3008: V1's FlashAttention backend refusing a GPU under compute capability 8.0 ------------------------

_CORE = "ERROR 02-11 20:39:41 core.py:208] "
_LAYER = ("vllm/attention/layer.py", 114, "__init__", "self.impl = impl_cls(num_heads, head_size, scale, "
                                                       "num_kv_heads,")
_FA = ("vllm/v1/attention/backends/flash_attn.py", 156, "__init__",
       "assert is_fa_version_supported(self.fa_version)")
_REASON = ("ERROR 02-11 20:39:40 flash_attn.py:152] Cannot use FA version 2 is not supported due to {why}\n")


def test_the_fa_version_assert_is_unsupported_gpu():
    """w3008: an early V1 EngineCore traceback through qwen2's attention layer into the FlashAttention
    backend's `assert is_fa_version_supported(self.fa_version)`, a bare AssertionError; read unknown at launch
    before. With the ERROR line naming the compute capability above it, it reads the same."""
    assert reads(read_log("w3008.log")) == (True, "unsupported_gpu", "load_weights")
    assert vllm_signature(read_log("w3008.log")) == "vllm_fa_version_gpu"
    gpu = (_REASON.format(why="FA2 is only supported on devices with compute capability < 8")
           + vllm_traceback(_LAYER, _FA, exc="AssertionError", head=_CORE))
    assert vllm_signature(gpu) == "vllm_fa_version_gpu"
    assert reads(gpu)[:2] == (True, "unsupported_gpu")


def test_another_assert_in_the_backend_is_not_the_gpu():
    """The backend's other assert (VLLM_FLASH_ATTN_VERSION not 2 or 3, a setting) is no GPU's, nor a bare
    AssertionError in another attention backend's __init__."""
    setting = vllm_traceback(_LAYER, ("vllm/v1/attention/backends/flash_attn.py", 148, "__init__",
                                      "assert VLLM_FLASH_ATTN_VERSION in [2, 3]"),
                             exc="AssertionError", head=_CORE)
    assert vllm_signature(setting) != "vllm_fa_version_gpu"
    assert reads(setting)[1] != "unsupported_gpu"
    other = vllm_traceback(_LAYER, ("vllm/v1/attention/backends/flashinfer.py", 120, "__init__",
                                    "assert self.num_heads % self.num_kv_heads == 0"), exc="AssertionError",
                           head=_CORE)
    assert vllm_signature(other) != "vllm_fa_version_gpu"
