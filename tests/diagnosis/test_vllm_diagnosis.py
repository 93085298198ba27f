"""ddlab.diagnose on vLLM's logs (issue 28 item 3): the dialect, the signatures, the advice.

Fixtures: tests/fixtures/logs/vllm/ (written from vLLM 0.34.0's real texts and frames,
index.json says which) and the work split of the real corpus (tests/fixtures/logs/vllm-real/;
the held-out split is only counted, in test_vllm_corpus_floors). Library texts that both
servers meet (torch, NCCL, Hugging Face) are SGLang's fixtures read in vLLM's dialect.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from ddlab.core.errors import ConfigError
from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.signatures import SIGNATURES, VLLM_SIGNATURES
from ddlab.diagnosis.vllm_diagnosis import read_vllm
from ddlab.diagnosis.vllm_facts import vllm_facts
from ddlab.diagnosis.vllm_log import detect_family, family_marks, vllm_lines, vllm_phase_marker
from ddlab.diagnosis.vllm_metrics import parse_metrics_lines, summarize_metrics
from fieldkit import VLLM_RELEASES, vllm_advice_problems

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
VLLM = LOGS / "vllm"
REAL = LOGS / "vllm-real"
INDEX = json.loads((VLLM / "index.json").read_text())
FIXTURES = INDEX["fixtures"]
MANIFEST = {log["id"]: log for log in json.loads((REAL / "manifest.json").read_text())["logs"]}
WORK = [i for i, log in MANIFEST.items() if log["split"] == "work"]
RELEASES = VLLM_RELEASES
WHEELS = Path("/work/wheels/vllm")


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_diagnosis(name):
    want = FIXTURES[name]
    result = diagnose(_read(VLLM / name))
    assert result.family == "vllm"
    assert (result.crashed, result.kind, result.phase, result.signature) == (
        want["crashed"], want["kind"], want["phase"], want["signature"]), result.render()
    said = want["crashed"] or want["kind"] == "request_error"  # one request's error has its next step
    assert (result.suggestion is None) == (not said) and (result.cause is None) == (not said)


@pytest.mark.parametrize("log_id", sorted(INDEX["corpus"]))
def test_work_logs_show_their_signature(log_id):
    assert MANIFEST[log_id]["split"] == "work"
    assert diagnose(_read(REAL / f"{log_id}.log")).signature == INDEX["corpus"][log_id]


@cache  # two tests ask; each answer diagnoses about 60 fixtures
def _voiced_fixtures() -> dict[str, Path]:
    """For each SGLang signature vLLM's registry reuses, an SGLang fixture it explains."""
    parents = {s.name for s in SIGNATURES}
    wanted = {s.name[len("vllm_"):] for s in VLLM_SIGNATURES if s.name[len("vllm_"):] in parents}
    found = {}
    paths = sorted(LOGS.glob("*.log")) + sorted(LOGS.glob("sglang/*.log")) + sorted(LOGS.glob("pastes/*.log"))
    paths += [LOGS / "real" / f"{i}.log" for i in ("a025", "b031", "a004", "h65008")]
    paths += [REAL / "vd21.log"]  # a bare KeyError naming a tensor: no SGLang fixture has one alone
    for path in paths:
        said = diagnose(_read(path), family="sglang").signature
        if said in wanted and said not in found:
            found[said] = path
    return found


def test_every_vllm_signature_has_a_fixture():
    shown = {want["signature"] for want in FIXTURES.values()} | set(INDEX["corpus"].values())
    voiced = _voiced_fixtures()
    for parent, path in voiced.items():  # the library's text, read in vLLM's dialect
        result = diagnose(_read(path), family="vllm")
        assert result.signature == f"vllm_{parent}", (path.name, result.render())
        shown.add(result.signature)
    missing = [s.name for s in VLLM_SIGNATURES if s.name not in shown]
    assert not missing, f"vLLM signatures without a fixture: {missing}"


@pytest.mark.parametrize("signature", VLLM_SIGNATURES, ids=[s.name for s in VLLM_SIGNATURES])
def test_vllm_signature_is_well_formed_and_cites_the_wheel(signature):
    assert signature.name.startswith("vllm_") and (signature.patterns or signature.lines)
    assert signature.advice or signature.detail
    assert signature.sources
    for origin, where in signature.sources:
        if origin[:1].isdigit():  # a vLLM release: a path in its wheel, with its line
            assert origin in (*RELEASES, "0.6.4.post1", "0.7.3"), origin
            path, line = re.fullmatch(r"(vllm/\S+\.py):(\d+)", where).groups()
            if (WHEELS / origin).is_dir():
                text = (WHEELS / origin / path).read_text().splitlines()
                assert int(line) <= len(text), (origin, where)


# the decisive text of each vLLM-own signature at its first cited line (or the line below,
# where the string is split over two)
_CITED = {
    "vllm_kv_no_memory": "No available memory for the cache blocks",
    "vllm_kv_max_len": "max seq len",
    "vllm_kv_check_cut": "def _check_enough_kv_cache_memory(",
    "vllm_spec_token_budget": "max_num_scheduled_tokens is set to",
    "vllm_draft_vocab": "same vocabulary size",
    "vllm_spec_tp_draft": "Cannot handle cases where distributed draft",
    "vllm_engine_dead": "Engine core initialization failed",
    "vllm_shm_stall": "No available shared memory broadcast block found",
    "vllm_piecewise_range": "assert range_entry is not None",
    "vllm_replay_inputs": "static_tensor.copy_(runtime_tensor)",
    "vllm_gpu_blocks_zero": "# GPU blocks",
    "vllm_max_len_over_model": "than the derived max_model_len",
    "vllm_bf16_gpu": "Bfloat16 is only supported on GPUs",
    "vllm_flag_bound": "allows both underscore and dash in names",
    # round 4
    "vllm_no_such_param": "There is no module or parameter named",
    "vllm_weights_not_initialized": "Following weights were not initialized from",
    "vllm_eagle_fc_bias": "Found bias in the loaded weights",
    "vllm_lora_shape": "module.set_lora(",
    "vllm_config_check": "def _verify_args",
    "vllm_config_value_error": "return dataclass(cls, config=merged_config",
    "vllm_needs_v2_runner": "DFlash drafters with mixed sliding/full attention require",
    "vllm_capture_cut": "Capturing CUDA graphs",
    "vllm_gdn_spec_mixed": "assert not (num_decodes > 0 and num_spec_decodes > 0)",
    "vllm_spec_grammar": "def update_draft_token_ids_in_output",
    "vllm_draft_hidden_size": "self.hidden_states[:num_tokens] = target_hidden_states",
    # round 5
    "vllm_request_preprocess": "Error in preprocessing prompt inputs",
    # round 6
    "vllm_spec_method_unrouted": "Unknown speculative decoding method",
    "vllm_spec_v1_unsupported": "Speculative decoding is not yet supported on VLLM V1",
    "vllm_tp_heads": "Total number of attention heads",
    # round 8
    "vllm_graph_batch_missing": "model_executable = self.graph_runners[virtual_engine][",
    "vllm_worker_method_failed": "Error executing method",
    "vllm_no_architectures": "No model architectures are specified",
    # round 9
    "vllm_c_extension_link": "Failed to import from vllm._C with",
    "vllm_cli_refused": "should be provided as the first positional argument",
    "vllm_weights_iteration_cut": "for weight_name, weight_data in weights",
    "vllm_kv_negative": "Available KV cache memory",
    # round 18
    "vllm_weight_name_in_engine_message": "logger.exception(e)",
    "vllm_tool_parser_unknown": "invalid tool call parser",
    "vllm_no_config_file": "Could not detect config format for no config file found",
    # round 19
    "vllm_queue_timeout": "raise TimeoutError",
    "vllm_quant_scheme_gpu": "Quantization scheme is not supported for",
    "vllm_quant_scheme_check": "Quantization scheme is not supported for",
    "vllm_quant_dtype": "is not supported for quantization",
    # round 21
    "vllm_quant_method_gpu": "is not supported for the current GPU. Minimum",
    # round 22
    "vllm_loader_shape": "Tried to load weights of size",
    "vllm_iteration_timeout": "Engine iteration timed out. This should never happen!",
    # round 23
    "vllm_utility_call_failed": "Invocation of %s method failed",
    # round 24
    "vllm_moe_layers_missing": "layer found in model.layers.",
    "vllm_placement_bundle": "Placement group bundle cannot have more than 1",
    "vllm_patched_entry_mismatch": "def _placeholder_str(",
    "vllm_request_model_check": "model.name == model_name for model in self.base_model_paths",
    # round 26
    "vllm_no_platform": "raise NotImplementedError",
    # round 28
    "vllm_params_lookup": "param = params_dict[name]",
    "vllm_encoder_attention": "Encoder self-attention and",
    # round 32
    "vllm_eagle_head_params": "param = params_dict[name]",
    "vllm_draft_tp_mismatch": "Currently, 'draft_tensor_parallel_size' and 'tensor_parallel_size'",
    "vllm_chat_template_missing": "appears path-like, but doesn't exist!",
    # round 34
    "vllm_placement_devices": "The number of required {device_str}s exceeds the total",
    "vllm_harmony_vocab_missing": "load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)",
    # round 36
    "vllm_transformers_fallback_no_tp": "Trying to run tensor parallelization but the model does not",
    # round 38
    "vllm_hybrid_kv_unify": "Failed to promote local KV cache specs to one unified type.",
    # round 42
    "vllm_uva_unavailable": 'raise RuntimeError("UVA is not available")',
    # round 98
    "vllm_serve_flags_conflict": '"Error: --enable-auto-tool-choice and "',
}


@pytest.mark.parametrize("name", sorted(_CITED))
def test_the_cited_line_holds_the_text(name):
    signature = next(s for s in VLLM_SIGNATURES if s.name == name)
    origin, where = signature.sources[0]
    if not (WHEELS / origin).is_dir():
        pytest.skip(f"no unpacked wheel at {WHEELS / origin}")
    path, line = where.rsplit(":", 1)
    text = (WHEELS / origin / path).read_text().splitlines()
    assert _CITED[name] in " ".join(text[int(line) - 1:int(line) + 1]), where


@cache
def _corpus() -> dict[str, str]:
    """Every vLLM fixture and the SGLang fixtures vLLM's registry reuses (the work split's advice is judged as
    each work log is read: test_work_readings.py)."""
    return {**{name: _read(VLLM / name) for name in FIXTURES},
            **{path.name: _read(path) for path in _voiced_fixtures().values()}}


def test_the_advice_speaks_vllm_and_every_proposed_flag_is_taken_by_each_tabled_release():
    problems, proposed = [], dict.fromkeys(VLLM_RELEASES, 0)
    for name, text in _corpus().items():
        found, counts = vllm_advice_problems(name, text, own=name in FIXTURES)
        problems += found
        proposed = {release: proposed[release] + counts[release] for release in proposed}
    assert min(proposed.values()) > 100 and not problems, "\n".join(problems)  # each release judges 118


def test_a_text_read_again_for_another_release_is_not_read_again_and_its_answers_are_not_shared():
    text = _read(REAL / "vb17.log")
    read_vllm.cache_clear()
    first = diagnose(text)
    first.facts["changed_by_the_caller"] = True
    named = diagnose(text, version="0.30.0")
    again = diagnose(text)
    assert read_vllm.cache_info().hits == 2 and read_vllm.cache_info().misses == 1
    assert "changed_by_the_caller" not in again.facts and again.render() == diagnose(text + "\n").render()
    assert named.facts["vllm_version"] == "0.30.0" and again.facts.get("vllm_version") != "0.30.0"


def test_kv_advice_uses_the_logs_own_figures():
    text = _read(REAL / "vb17.log")  # "the estimated maximum model length is 127776"
    assert "`--max-model-len 127776`" in diagnose(text).suggestion
    head = _read(VLLM / "healthy__0.34.0__eagle3-metrics.log").splitlines()[:8]
    kv = "\n".join(head + ["(EngineCore_DP0 pid=4182) ERROR 12-03 09:01:05 [core.py:1757] ValueError: No "
                           "available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                           "when initializing the engine."])
    result = diagnose(kv)
    assert result.kind == "kv_pool_oom" and "`--gpu-memory-utilization 0.90`" in result.suggestion
    assert "draft model" in result.suggestion  # an eagle3 config: the draft's cache counts too


def test_the_speculative_budget_advice_halves_the_logs_draft_tokens():
    head = _read(VLLM / "healthy__0.34.0__eagle3-metrics.log").splitlines()[:6]
    text = "\n".join(head + ["(APIServer pid=4011) ValueError: max_num_scheduled_tokens is set to -1792 based "
                             "on the speculative decoding settings, which does not allow any tokens to be "
                             "scheduled. Increase max_num_batched_tokens to accommodate the additional draft "
                             "token slots, or decrease num_speculative_tokens."])
    result = diagnose(text)
    assert result.kind == "bad_argument" and "`num_speculative_tokens` 3 -> 1" in result.suggestion


# --- the dialect -----------------------------------------------------------------------

def _sglang_logs() -> list[Path]:
    return [p for p in sorted(LOGS.rglob("*.log")) if not p.parent.name.startswith("vllm")]


# SGLang logs that name neither server, only a vllm module in an import error: routed to vLLM's reading, which says
# the same (crashed, kind) as SGLang's (checked below). h83005 (round 83, on its commit e6e2978 already): "No module
# named 'vllm.model_executor.input_metadata" alone, SGLang importing a module vLLM 0.4.0 removed; h105003 (round 105,
# staged beside round 104): vLLM's bitsandbytes frames alone ending in its "Please install bitsandbytes>=0.44.0"
# ImportError, the quantization config SGLang 0.4.0 takes from vLLM (srt/layers/quantization/__init__.py:9, :41)
_NAMED_NEITHER = ["h105003.log", "h83005.log"]


def test_every_sglang_log_is_read_as_sglang():
    """No SGLang log (fixtures, pastes, the 238 real ones) is routed to vLLM's reading, so
    SGLang's diagnosis is unchanged; some carry a few of vLLM's lines (SGLang imports vLLM)."""
    wrong = [p.name for p in _sglang_logs() if detect_family(_read(p)) != "sglang"]
    assert wrong == _NAMED_NEITHER
    for path in (p for p in _sglang_logs() if p.name in _NAMED_NEITHER):
        both = [diagnose(_read(path), family=family) for family in ("sglang", "vllm")]
        assert len({(found.crashed, found.kind) for found in both}) == 1, path.name
    assert len(_sglang_logs()) > 300


def test_vllm_logs_are_read_as_vllm():
    """A work log read as SGLang's holds only texts both servers write (torch's OOM, the shared
    weight loader's and model registry's, the shell's signal line) and has the same kind either
    way; va20, a bare Hugging Face 401 traceback, was the one that did not (SGLang's reading took
    `requests.exceptions` for an echo) until lib28 put the hub's 401 / 403 in SGLang's signature."""
    assert all(detect_family(_read(VLLM / name)) == "vllm" for name in FIXTURES)
    unmarked = [i for i in WORK if detect_family(_read(REAL / f"{i}.log")) != "vllm"]
    # round 3 added four: a bare KeyError (vd21), a Triton error (vd32) and torch's ProcessGroupNCCL
    # watchdog (vd38, vd39); round 4 one: V0 stamps inside a terminal box's borders (ve02); round 5
    # one: three lines of Ascend CANN's graph engine, which SGLang's NPU backend runs too (vf20); round 6
    # one: torch's CUDA OOM line alone (vg13); round 7 two: uvicorn's lines alone (vh11) and the
    # kerutils host lines FlashMLA and SGLang's kernels both print (vh27); round 9 five: uvicorn's and
    # starlette's lines alone (vj11, vj12, vj13), UCX's native backtrace frames (vj16) and a bare
    # huggingface_hub GatedRepoError (vj26); round 10 one: a Ray worker's SIGSEGV dump, abseil's
    # frames and Ray's logging.cc echo of them (vk04); round 11 one: NCCL's shared-memory warnings
    # under a timestamp (vl19); round 12 two: Ray's raylet line (vm11) and uvicorn's access lines
    # with a 500 (vm16); round 14 four: the Ascend runtime's own fault records alone (vo04, vo08), the
    # model registry's refusal alone (vo19) and a segfault handler's native frames alone (vo25); round
    # 15 seven: huggingface_hub's offline headline (vp09), torch's "no kernel image" error and hints on
    # HIP and CUDA (vp11, vp22), torch's NCCL watchdog (vp12, vp13) and uvicorn's ASGI traceback with no
    # vLLM frame (vp18, vp19); round 16 one: the model registry's refusal alone again, under torch's rank
    # prefix (vq17); round 17's vr24 (vLLM's worker tags `(Worker_TP3_EP3 pid=N)` with no stamp) was one
    # until the worker tag's parallel ranks were read as a mark (below); round 18 two: a systemd journal of
    # uvicorn's access lines and V0's metrics lines under the unit's name alone (vs28); vs19, a bare KeyError
    # of the OpenAI server's --tool-call-parser check on one line, was another until its text was a mark;
    # round 22 two: ROCm's "Memory access fault by GPU node-N" lines and torch's TCPStore frames alone (vx10)
    # and the tail of api_server.py's argparse usage (vx17), each the same kind either way; round 23 one:
    # torch_npu's own task-queue error lines alone (vy27), the same kind either way; round 24 two:
    # transformers' GGUF refusal alone (vz06) and uvicorn's bind error alone (vz16), the same kind either way;
    # round 26 four: torch's NCCL watchdog alone (w2604), a Ray worker's SIGSEGV dump by abseil's handler
    # (w2605), uvicorn's access lines alone (w2611) and torch's illegal-access error under the sampler's
    # frames (w2616), each the same kind either way; round 28 two: the console script's argparse error line
    # alone (w2815) and Triton's device-assert lines from torch's inductor (w2816), the same kind either way;
    # round 52 one: weight_utils' page-cache prefetch lines alone under vllm-omni's stage tag (w5221, a healthy
    # excerpt), no crash either way; round 53 one: torch's device-side assert under an exception group's '    |'
    # frames of vllm_flash_attn's varlen forward alone (w5302), the same kind either way; round 54 one: ms-swift's
    # rollout start-up lines with DeepSpeed's bracketed stamp and one vLLM platform line (w5410, a healthy
    # excerpt), no crash either way; round 55 two: the engine's ready line quoted with "> " before the user's own
    # memory prints (w5510) and two bare lines, V0's "Loading model weights took" and a negative "Available KV cache
    # memory" (w5526), both healthy excerpts, no crash either way (read as vLLM's, w5526's negative figure is
    # vllm_kv_negative: docs/diagnosis.md, "Held-out round 55"); round 56 six, each the same kind either way: verl's
    # Ray WorkerDict lines with torch's illegal-access error and hints (w5602, w5605), a WorkerDict's "Fatal Python
    # error: Aborted" (w5603), a WorkerDict thread's traceback cut (w5610), uvicorn's ASGI traceback (w5613) and verl's
    # rollout prints over a driver's ray.get (w5621); round 57 three, each the same kind either way: uvicorn's ASGI
    # traceback (w5715), torch's NCCL watchdog lines under "> " (w5717) and core_client's DEBUG "Waiting for 1 core
    # engine proc(s)" lines under a container's ISO stamps (w5718, a healthy excerpt); round 58 two, each the same
    # kind either way: torch's illegal-access error and hint under a systemd journal's prefix (w5808) and the model
    # registry's "failed to be inspected" ValueError alone (w5821); round 60 six, each the same kind either way:
    # torch_npu's OOM line alone (w6008), torch's device-side assert line alone (w6009), an xoscar actor's traceback
    # cut (w6010), torch elastic's exit lines (w6012), Ray's glog lines with NCCL's what() (w6020) and uvicorn's ASGI
    # traceback for a chat request (w6026); round 61 six: Ray's core worker line (w6109), torch's CPU-CUDA copy refused
    # during capture (w6115), the multimodal placeholder ValueError (w6118) and a gated repo's error (w6126) alone, a
    # request's traceback (w6120) and NCCL's INFO lines (w6123), each the same kind either way (w6115 since vLLM's
    # vllm_capture_unsupported_op takes torch's copy refused during a capture, as SGLang's capture_failed did); round
    # 62 eight, each
    # the same kind either way: ms-swift's deploy traceback cut (w6202), a driver's ray.get with ActorDiedError (w6206),
    # vllm-omni's NPU worker lines under "> " (w6215, a healthy excerpt), an EAGLE draft's AttributeError alone (w6224),
    # Xinference's launch failure (w6225) and an xoscar traceback after NCCL's rendezvous timed out (w6226), the hub's
    # HFValidationError in a backtick (w6229) and CUDA's forked-subprocess RuntimeError alone (w6230); round 63 three,
    # each the same kind either way: NCCL's INFO lines under a Ray worker's tag (w6311, a healthy excerpt), vllm-omni's
    # diffusion worker lines under Buildkite's stamps (w6316, a healthy excerpt) and torch_npu's import traceback
    # alone (w6321); round 64 four, each the same kind either way: torch's OOM line under an ISO stamp (w6413), RBLN's
    # BackendCompilerFailed under a worker's bare name (w6419), torch's illegal-access line alone (w6420) and a weight
    # name's KeyError alone (w6425); round 66 one, the same kind either way: LLVM's fatal error from Triton alone
    # under verl's Ray WorkerDict tag (w6605); round 67 two, the same kind either way: torch's OOM line alone (w6706) and
    # lighteval's pipeline lines around vLLM's platform line (w6714, a healthy excerpt); round 68 four, each the same
    # kind either way: tt-metal's trace-region assert alone (w6812), KServe's failed start alone (w6816), torch's NCCL
    # watchdog with HIP's captured-event error (w6818, since vLLM's vllm_capture_unsupported_op reads that line too)
    # and unsloth's re-raise of a Triton compile message (w6823); round 69 two, each the same kind either way:
    # vllm-omni's "[Stage-0]" stage-worker lines (w6919, a healthy excerpt) and uvicorn's ASGI traceback for a chat
    # request (w6921, one request's error); round 70 one, the same kind either way: torch's rank-tagged ValueError of
    # the multimodal placeholders alone (w7009); round 71 two, each the same kind either way: torch's OutOfMemoryError
    # at a traceback's tail alone (w7106) and uvicorn's ASGI traceback of a request, cut (w7107); round 72 two: Triton's
    # driver build traceback alone (w7212) and torch's ROCm abort alone (w7216), each the same kind either way
    # (unified-cache-management's own log lines, w7213, whose stamp "[date time][UC][I]" counted as SGLang's, were the
    # one log whose kind differed until vLLM round 82 restamped that logger's records as vLLM's); round 73 five, each the same kind either way: vllm-omni's "StageEngineCoreProc died
    # during READY" RuntimeErrors alone (w7306), torch's TCPStore listen failure alone (w7313), Ray's memory monitor's
    # kill message alone (w7318), the raylet's OOM-kill summary over a driver's traceback (w7319) and Triton's
    # OutOfResources line alone (w7321); round 74 two, each the same kind either way: huggingface_hub's frames under
    # TorchServe's relay, cut (w7416), and transformers' gated-repo OSError alone (w7417); round 75 four, each the same
    # kind either way: inspect_ai's rich-logged bind error (w7505), the console script's argparse error line alone
    # (w7506) and transformers' unrecognised model type alone (w7521, w7522); round 76 one, the same kind either way:
    # torch's AcceleratorError of a stream capture alone (w7609); round 77 one, the same kind either way: torch's NCCL
    # watchdog lines under Ray's worker tag, a markdown code span's backtick before it (w7709); round 79 two, each the
    # same kind either way: CPython's extension-module list alone, its header cut (w7916), and RunPod's console line of
    # its worker's exit status (w7920); round 80 three: Xinference's worker lines alone (w8010, not crashed either way),
    # torch inductor's GPUTooOldForTriton alone (w8013) and "ModuleNotFoundError: No module named 'triton'" alone
    # (w8016), each the same kind either way; round 81 two, each the same kind either way: transformers' OSError of a
    # config.json that is not JSON alone (w8113) and vllm-omni's "[Stage-2]"-prefixed start-up lines (w8118, not crashed)
    # Round 84 five, each the same reading either way: lm-evaluation-harness's lines with a remote-code config's
    # "[date time] INFO" record over one vLLM line (w8405, not crashed), uvicorn's ASGI tracebacks, one under
    # docker compose's prefix (w8414, w8415), the shard bar alone (w8417, not crashed) and FastChat's handler's
    # NameError (w8422). Round 85 six, each the same reading either way: Ray Serve's controller tracebacks with no vLLM
    # frame (w8501, w8502, w8511), transformers' KeyError under Ray Data (w8505), SkyPilot's task lines with the
    # tokenizer bars (w8509, not crashed) and lighteval's lines (w8518, not crashed). Round 86 two, each the same reading
    # either way: the quantization method's dtype refusal alone (w8610) and the model registry's refusal alone, cut
    # (w8611), texts SGLang's registry and quantization configs write too. Round 87 two, each the same reading either
    # way: torch's NCCL watchdog lines under Ray's worker tag (w8713) and CANN's captured-stream refusal under
    # transformers' frames (w8725, cuda_graph_capture either way since the kinds table's capture row reads it). Round
    # 88 one, the same reading either way: ROCm's queue abort and SIGABRT under Ray's RayWorkerVllm tag alone (w8813).
    # Round 89 one, the same reading either way: uvicorn's ASGI traceback of a streamed completion under docker
    # compose's prefix (w8910, one request's error). Round 91 one, the same reading either way: a custom logging
    # format's "[time] [LEVEL] [MainThread] [vllm.<module>] >>> " records of a worker's torch assert (w9114). Round 92
    # one, the same reading either way (not crashed): an offline LLM(...)'s start stopped by the user's Ctrl-C, its
    # KeyboardInterrupt tracebacks through wait_for_startup and the atexit joins (w9221). Round 96 one, the same reading
    # either way: torch's "no kernel image is available" under rank prefixes alone, four lines (w9611, unsupported_gpu)
    # Round 99 two, each the same reading either way: uvicorn's lines alone, its bind error (w9902, port_in_use) and
    # its startup complete (w9915, not crashed). Round 103 one, the same reading either way (not crashed): Ray's abseil
    # dump of a SIGTERM and its compiled DAG's teardown lines alone (w10306). Round 104 one, the same kind either way
    # (cuda_illegal_access): torch's NCCL watchdog ending on "CUDA error: unknown error" under Ray's worker prefix alone
    # (w10408). Round 106 one, the same reading either way (unknown): Xinference's REST API record of a launch's "CUDA
    # error: invalid argument" and its cut traceback (w10609)
    assert len(unmarked) <= 149, unmarked
    differ = [i for i in unmarked if diagnose(_read(REAL / f"{i}.log")).kind
              != diagnose(_read(REAL / f"{i}.log"), family="vllm").kind]
    assert differ == []


def test_family_can_be_given_and_is_checked():
    text = _read(REAL / "va20.log")  # a bare huggingface_hub 401: no mark of either family
    assert diagnose(text).family == "sglang"
    assert diagnose(text, family="vllm").family == "vllm"
    with pytest.raises(ConfigError, match="not a server family"):
        diagnose(text, family="tgi")


@pytest.mark.parametrize("raw, msg", [
    ("(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708]   File \"x.py\", line 1, in f",
     '  File "x.py", line 1, in f'),
    ("(APIServer pid=6539) INFO 04-18 20:22:57 [utils.py:233] non-default args: {}", "non-default args: {}"),
    ("(VllmWorker rank=1 pid=77) WARNING 05-01 10:00:00 [custom_all_reduce.py:137] P2P off", "P2P off"),
    ("(VllmWorkerProcess pid=232) ERROR 08-23 08:25:25 multiproc_worker_utils.py:226] NCCL error", "NCCL error"),
    ("INFO 10-10 10:23:00 api_server.py:526] vLLM API server version 0.6.1", "vLLM API server version 0.6.1"),
    ("vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: x", "ValueError: x"),
    ("2026-06-09 14:01:52.982 [Error] (Process) (EngineCore pid=42521) ERROR 06-09 14:01:52 [core.py:1136] "
     "ValueError: y", "ValueError: y"),
])
def test_vllm_prefixes_are_peeled(raw, msg):
    assert vllm_lines(raw)[0].msg == msg


@pytest.mark.parametrize("msg, phase", [
    ("Starting to load model Qwen/Qwen3-8B...", "load_weights"),
    ("Loading weights took 0.42 seconds", "load_weights"),
    ("Model loading took 16.12 GiB memory and 18.553112 seconds", "memory_pool"),
    ("Loading model weights took 13.4966 GB", "memory_pool"),
    ("# GPU blocks: 22839, # CPU blocks: 2048", "memory_pool"),
    ("GPU KV cache size: 693,024 tokens, Maximum concurrency for 8,192 tokens per request: 84.60x", "memory_pool"),
    ("Graph capturing finished in 7 secs, took 0.62 GiB", "graph_capture"),
    ("Capturing cudagraphs for decoding. This may lead to unexpected consequences", "graph_capture"),
    ("init engine (profile, create kv cache, warmup model) took 36.87 s", "ready"),
    ("Starting vLLM server on http://0.0.0.0:8000", "ready"),
    ("Starting vLLM API server 0 on http://0.0.0.0:8000", "ready"),
    ("Application startup complete.", "ready"),
    ("Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 3.0 tokens/s, "
     "Running: 1 reqs, Waiting: 0 reqs", "serving"),
    ("Automatically detected platform cuda.", None),
])
def test_vllm_phase_lines(msg, phase):
    assert vllm_phase_marker(msg) == phase


def test_metrics_lines_v1_and_v0():
    text = "\n".join([
        "(APIServer pid=1) INFO 12-03 09:01:31 [loggers.py:283] Engine 000: Avg prompt throughput: 412.3 tokens/s, "
        "Avg generation throughput: 1830.5 tokens/s, Running: 16 reqs, Waiting: 3 reqs, GPU KV cache usage: 3.1%, "
        "Prefix cache hit rate: 12.5%",
        "(APIServer pid=1) INFO 12-03 09:01:31 [metrics.py:121] SpecDecoding metrics: Mean acceptance length: 2.84, "
        "Accepted throughput: 1186.20 tokens/s, Drafted throughput: 1934.40 tokens/s, Accepted: 11862 tokens, "
        "Drafted: 19344 tokens, Per-position acceptance rate: 0.781, 0.612, 0.447, Avg Draft acceptance rate: 61.3%",
        "INFO 07-24 03:59:01 metrics.py:449] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 40.1 "
        "tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 1 reqs, GPU KV cache usage: 0.2%, CPU KV cache usage: 0.0%.",
        "INFO 07-24 03:59:01 metrics.py:471] Speculative metrics: Draft acceptance rate: 0.512, System efficiency: "
        "0.601, Number of speculative tokens: 4, Number of accepted tokens: 2048, Number of draft tokens: 4000, "
        "Number of emitted tokens: 3100.",
    ])
    stats, spec, old_stats, old_spec = parse_metrics_lines(text)
    assert (stats.engine, stats.gen_tok_s, stats.running, stats.waiting, stats.kv_cache_usage_pct) == (
        "000", 1830.5, 16, 3, 3.1)
    assert spec.mean_acceptance_length == 2.84 and spec.per_position_acceptance == (0.781, 0.612, 0.447)
    assert (spec.accepted_tokens, spec.drafted_tokens, spec.draft_acceptance_rate) == (11862, 19344, 0.613)
    assert (old_stats.waiting, old_stats.gen_tok_s) == (1, 40.1)
    assert (old_spec.num_speculative_tokens, old_spec.accepted_tokens, old_spec.draft_acceptance_rate) == (4, 2048, 0.512)
    summary = summarize_metrics([stats, spec, old_stats, old_spec])
    assert summary["acceptance_rate"] == round((11862 + 2048) / (19344 + 4000), 4)
    assert summary["accept_len_mean"] == 2.84 and summary["waiting_max"] == 3


def test_a_healthy_log_reports_its_metrics_and_facts():
    result = diagnose(_read(VLLM / "healthy__0.34.0__eagle3-metrics.log"))
    assert not result.crashed and result.phase == "serving" and result.family == "vllm"
    assert result.decode["spec_count"] == 2 and result.decode["accept_len_last"] == 2.96
    assert result.decode["per_position_acceptance_mean"] == [0.7905, 0.626, 0.4835]
    facts = result.facts
    assert (facts["vllm_version"], facts["speculative_method"], facts["num_speculative_tokens"]) == ("0.34.0", "eagle3", 3)
    assert (facts["gpu_memory_utilization"], facts["kv_cache_tokens"], facts["weights_gib"]) == (0.85, 693024, 16.12)
    rendered = result.render()
    assert "mean acceptance length 2.9" in rendered and "metrics:" in rendered


def test_v0_namespace_args_are_facts():
    line = ("INFO 10-10 10:23:00 api_server.py:527] args: Namespace(model_tag='facebook/opt-125m', port=19000, "
            "gpu_memory_utilization=0.9, max_model_len=4096, speculative_model='facebook/opt-125m', "
            "num_speculative_tokens=5)")
    facts = vllm_facts(vllm_lines(line))
    assert (facts["port"], facts["gpu_memory_utilization"], facts["max_model_len"]) == (19000, 0.9, 4096)
    assert facts["speculative_method"] == "draft_model" and facts["num_speculative_tokens"] == 5


def test_a_v0_worker_header_carries_the_message_of_a_cut_traceback():
    result = diagnose(_read(REAL / "va18.log"))  # "... while processing method init_device: NCCL error: ..."
    assert (result.kind, result.signature) == ("nccl", "vllm_nccl")


def test_an_echo_never_wins_over_the_error_it_echoes():
    result = diagnose(_read(VLLM / "cuda_graph_capture__0.34.0__not-permitted-while-capturing.log"))
    assert result.signature == "vllm_capture_failed" and "stream is capturing" in result.cause


def test_sequence_parallel_advice_picks_a_draft_count_that_divides():
    result = diagnose(_read(VLLM / "bad_argument__0.30.0__spec-tokens-vs-sequence-parallel.log"))
    assert "`num_speculative_tokens` 3 fits (now 4)" in result.suggestion  # 3 + 1 divides TP 4


def test_max_model_len_advice_names_the_models_length():
    result = diagnose(_read(VLLM / "bad_argument__0.34.0__max-model-len-over-model.log"))
    assert "`--max-model-len 40960`" in result.suggestion


def test_a_crash_after_startup_complete_is_serving_and_before_it_ready():
    lines = _read(VLLM / "healthy__0.34.0__eagle3-metrics.log").splitlines()
    oom = ("(EngineCore_DP0 pid=4182) ERROR 12-03 09:01:40 [core.py:1759] torch.OutOfMemoryError: CUDA out of "
           "memory. Tried to allocate 2.00 GiB.")
    started = lines.index(next(ln for ln in lines if "Application startup complete" in ln))
    assert diagnose("\n".join(lines[:started + 1] + [oom])).phase == "serving"
    assert diagnose("\n".join(lines[:started] + [oom])).phase == "ready"
    routes = next(i for i, ln in enumerate(lines) if "init engine" in ln)
    assert diagnose("\n".join(lines[:routes] + [oom])).phase == "graph_capture"


def test_the_cli_reads_a_vllm_log(capsys):
    from ddlab import cli
    code = cli.main(["diagnose", str(REAL / "vb17.log"), "--json", "--family", "vllm", "--vllm-version", "0.30.0"])
    shown = json.loads(capsys.readouterr().out)
    assert code == 3 and shown["family"] == "vllm" and shown["kind"] == "kv_pool_oom"
    assert shown["facts"]["vllm_version"] == "0.30.0"


def test_pydantic_cause_names_the_value_error():
    result = diagnose(_read(VLLM / "bad_argument__0.34.0__speculative-config-tensor-parallel.log"))
    assert "'tensor_parallel_size' is not a valid argument" in result.cause


# --- a CUDA graph replay's inputs (the copy into the graph's static buffers) -----------------

_SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
_TAG = "(EngineCore_DP0 pid=4182) ERROR 12-03 09:01:32 [core.py:1759] "
# the frames above the copy: the engine's busy loop down to a piecewise step's model call
_STEP = [f'  File "{_SITE}/v1/engine/core.py", line 1860, in _process_engine_step',
         "    outputs, model_executed = self.step_fn()",
         f'  File "{_SITE}/v1/worker/gpu/model_runner.py", line 2159, in execute_model',
         "    model_output = self.cudagraph_manager.run_pw_graph("]


def _engine_death(frames: list[str], last: str) -> str:
    lines = _read(VLLM / "healthy__0.34.0__eagle3-metrics.log").splitlines()
    started = lines.index(next(ln for ln in lines if "Application startup complete" in ln))
    crash = ["EngineCore encountered a fatal error.", "Traceback (most recent call last):", *_STEP,
             *frames, last]
    return "\n".join(lines[:started + 1] + [_TAG + ln for ln in crash])


@pytest.mark.parametrize("frames, last", [
    ([f'  File "{_SITE}/compilation/backends.py", line 94, in copy_and_call',
      "    static_tensor.copy_(runtime_tensor)"],
     "RuntimeError: The size of tensor a (40) must match the size of tensor b (48) at non-singleton dimension 0"),
    ([f'  File "{_SITE}/compilation/cuda_graph.py", line 348, in __call__',
      "    assert new_input_addresses == entry.input_addresses, ("],
     "AssertionError: Input addresses for cudagraphs are different during replay. Expected [1, 2], got [1, 3]"),
    ([f'  File "{_SITE}/worker/model_runner.py", line 1851, in forward',
      '    self.input_buffers["positions"].copy_(positions, non_blocking=True)'],
     "TypeError: copy_(): argument 'src' (position 1) must be Tensor, not NoneType"),
], ids=["copy-and-call-size", "wrapper-debug-addresses", "v0-graph-runner-none"])
def test_a_replays_inputs_are_read_from_vllms_copy_frames(frames, last):
    result = diagnose(_engine_death(frames, last))
    assert (result.kind, result.signature, result.phase) == ("cuda_graph_replay", "vllm_replay_inputs",
                                                             "serving"), result.render()
    assert "`--enforce-eager`" in result.suggestion and "cudagraph_mode" in result.suggestion


def test_a_none_through_cudagraphwrapper_that_does_not_replay_is_no_replay_fault():
    """CUDAGraphWrapper hands a batch it does not replay to the model itself (its NONE-mode
    pass-through, vllm/compilation/cuda_graph.py:255 (0.34.0)): the error is the model's."""
    frames = [f'  File "{_SITE}/compilation/cuda_graph.py", line 255, in __call__',
              "    return self.runnable(*args, **kwargs)"]
    result = diagnose(_engine_death(frames, "AttributeError: 'NoneType' object has no attribute 'shape'"))
    assert result.crashed and result.kind != "cuda_graph_replay", result.render()


def test_the_replay_advice_names_the_compilers_copy_and_the_none():
    result = diagnose(_read(VLLM / "cuda_graph_replay__0.34.0__copy-and-call-none.log"))
    assert "FULL_DECODE_ONLY, which has none, is the mode to try first" in result.suggestion
    assert "An input was None" in result.suggestion and result.cause.startswith("AttributeError")


def test_a_log_that_names_no_server_says_it_was_read_as_sglangs_and_how_to_change_that():
    """vo04 (the Ascend runtime's own fault records, no line of either server) is read as
    SGLang's, the default: the verdict says so and how to read it as vLLM's, so a vLLM user is
    not left with SGLang's flags in the advice without a word. A log that names its server,
    or a family given, says nothing of it."""
    unnamed = diagnose(_read(REAL / "vo04.log"))
    assert unnamed.family == "sglang" and unnamed.family_assumed and unnamed.to_dict()["family_assumed"]
    assert "read as:    SGLang's log: no line names its server (--family vllm reads it as vLLM's)" \
        in unnamed.render().splitlines()
    assert not diagnose(_read(REAL / "vo04.log"), family="sglang").family_assumed
    given = diagnose(_read(REAL / "vo04.log"), family="vllm")
    assert given.family == "vllm" and not given.family_assumed and "read as:" not in given.render()
    named = diagnose(_read(VLLM / next(iter(FIXTURES))))
    assert named.family == "vllm" and not named.family_assumed and "read as:" not in named.render()


@pytest.mark.parametrize("tag", ["(Worker_TP3_EP3 pid=891)", "(Worker_DP1_TP0 pid=12)", "(Worker_PP1_TP2_EP2 pid=7)",
                                 "(Worker_TP1 pid=5)"])
def test_a_workers_process_tag_with_its_parallel_ranks_is_vllms(tag):
    """vLLM names a worker process "Worker" plus _DP, _PP, _PCP, _TP, _DCP and _EP ranks in that
    order (v1/executor/multiproc_executor.py:1080-1093 (0.30.0), :1248-1261 (0.34.0)) and puts the
    name in front of each of its lines; vr24 (round 17) shows `(Worker_TP3_EP3 pid=891)`, which the
    mark (`Worker_TP\\d*` then a word boundary) missed. A worker's tag of another program is not."""
    assert family_marks(f"{tag} [aiter] import [module_moe_sorting] under /usr/lib/x.so")[0] == 1
    assert family_marks("(Worker_TP3_EPX pid=1) something")[0] == 0
    assert family_marks("(Workers pid=1) something")[0] == 0
