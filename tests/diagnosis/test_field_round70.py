"""Held-out round 70 (issue 24): Ray's RayTaskError(Cause), DeepGEMM's arch assertion, 0.3.x's DP controller.

Round 70 (h70001-h70012; excerpts of issue and pull-request threads) was measured once on main at 086af58 (with the
round's logs, 451b7ca): crashed 12/12, kind 9/12, phase 5/6. docs/diagnosis.md, "Held-out round 70", tells the
round. The three misses were ddlab's:

- h70003, "ray.exceptions.RayTaskError(ModuleNotFoundError): ray::WorkerDict.actor_rollout_init_model() ...", then
  one verl frame, cut: Ray raises a remote task's error as an instance of a class that subclasses both RayTaskError
  and the cause's class, named "RayTaskError(<cause>)" (ray 2.43.0 exceptions.py:169, :183-184): the line is an
  exception line (diagnosis/tracebacks.py reads the class's own name) and a signature's ``types`` is asked of the
  cause's type too (crashes/signature.py ``type_names``): ``dependency_mismatch`` by ``import_error``.
- h70011, "RuntimeError: Assertion error (/deepgemm/csrc/apis/attention.hpp:219): Unsupported architecture":
  DeepGEMM's C++ API dispatching on the GPU's major arch and reaching its DG_HOST_UNREACHABLE (deepseek-ai/DeepGEMM
  891d57b csrc/apis/attention.hpp:219, csrc/utils/exception.hpp:17): ``unsupported_gpu`` by
  ``deep_gemm_arch_assert`` (device_crashes/archs.py).
- h70012, "[14:26:31] Invalid object: UpdateWeightReqInput(...)": 0.3.x's DP controller logging an object it does
  not route and dropping it (0.3.0 managers/controller_multi.py:183, 0.3.2 :180), read only in loop_for_forward
  after "init ok" (0.3.2 :200-203): ``request_error`` at serving by ``dp_controller_dropped_request``
  (crashes/kinds/router.py).

No label was disputed. Each positive test here fails on 451b7ca.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, folded_round, said
from ddlab.diagnosis.diagnosis import diagnose

_IDS = folded_round(REAL_MANIFEST, 70)


def test_round70_is_folded_into_work_with_no_label_disputed():
    assert _IDS == [f"h700{n:02d}" for n in range(1, 13)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h70003", "import_error"),
    ("h70011", "deep_gemm_arch_assert"),
    ("h70012", "dp_controller_dropped_request"),
], ids=lambda v: v)
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h70003: Ray's RayTaskError(Cause), an instance of the cause's type -----------------------------------------

# the same header in other forms, written from ray 2.43.0's exceptions.py (the class named at :183, its __str__
# heading the remote traceback with "ray::<task>() (pid=..., ip=...)", :241): the header alone, an
# ImportError's, the header over a traceback cut before the cause's own line
@pytest.mark.parametrize("text", [
    "ray.exceptions.RayTaskError(ModuleNotFoundError): ray::WorkerDict.actor_rollout_init_model() (pid=1, "
    "ip=10.0.0.1)\n",
    "RayTaskError(ImportError): ray::SGLangEngine.init() (pid=2, ip=10.0.0.2)\n",
    "ray.exceptions.RayTaskError(ModuleNotFoundError): ray::RolloutWorker.init_model() (pid=3, ip=10.0.0.3)\n"
    '  File "/opt/verl/verl/workers/fsdp_workers.py", line 512, in init_model\n'
    "    self.rollout = SGLangRollout(\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/quantization/__init__.py", line 9, in '
    "<module>\n",
], ids=["header", "importerror", "header-over-cut-traceback"])
def test_a_ray_task_that_failed_an_import_is_a_dependency_mismatch(text):
    assert said(text) == (True, "dependency_mismatch", "import_error")


# near misses: another cause; Ray's actor death (no cause type); prose naming the header
@pytest.mark.parametrize("text", [
    "ray.exceptions.RayTaskError(TypeError): ray::run_inference_one_model() (pid=1, ip=10.0.0.1)\n",
    "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n",
    "I keep getting RayTaskError(ModuleNotFoundError) when verl starts the rollout\n",
], ids=["typeerror", "actor-died", "prose"])
def test_other_ray_texts_are_not_an_import_error(text):
    assert said(text)[2] != "import_error"


def test_a_ray_header_over_its_tasks_whole_traceback_keeps_the_causes_own_line():
    """The header above the task's traceback that reaches the cause's line (w5921's form): that line is the
    cause, the header is not read as an exception of its own."""
    text = ("ray.exceptions.RayTaskError(TypeError): ray::run_inference_one_model() (pid=1, ip=10.0.0.1)\n"
            '  File "/x/lm_eval/models/vllm_causallms.py", line 258, in run_inference_one_model\n'
            "    llm = LLM(**model_args)\n"
            "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'\n")
    assert diagnose(text, family="sglang").cause.startswith("TypeError: EngineArgs.__init__()")


# --- h70011: DeepGEMM's C++ API with no kernel for this GPU's major arch ----------------------------------------

# the same assertion in other forms, written from DeepGEMM's source: gemm.hpp's under SGLang 0.5.12's NSA frame,
# einsum.hpp's bare (no RuntimeError), 59f2c07's attention.hpp:136
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/nsa_backend.py", line 664, in '
    "init_forward_metadata\n"
    "    paged_mqa_schedule_metadata = deep_gemm.get_paged_mqa_logits_metadata(\n"
    "RuntimeError: Assertion error (/sgl-workspace/DeepGEMM/csrc/apis/gemm.hpp:312): Unsupported architecture\n",
    "Assertion error (/build/DeepGEMM/csrc/apis/einsum.hpp:57): Unsupported architecture\n",
    "RuntimeError: Assertion error (/tmp/deepgemm/csrc/apis/attention.hpp:136): Unsupported architecture\n",
], ids=["gemm-traceback", "einsum-bare", "59f2c07"])
def test_deepgemms_arch_assertion_is_an_unsupported_gpu(text):
    assert said(text) == (True, "unsupported_gpu", "deep_gemm_arch_assert")


# near misses: the arch-or-scale-types branch, an arch condition's own assert, the JIT's cuobjdump assert, prose
@pytest.mark.parametrize("text", [
    "RuntimeError: Assertion error (/deepgemm/csrc/apis/attention.hpp:72): Unsupported architecture or scaling "
    "factor types\n",
    "RuntimeError: Assertion error (/deepgemm/csrc/apis/attention.hpp:94): arch_major == 10\n",
    "RuntimeError: Assertion error (/deepgemm/csrc/jit/kernel_runtime.hpp:44): exit_code == 0\n",
    "Does DeepGEMM say Unsupported architecture on SM120?\n",
], ids=["scale-types", "arch-condition", "jit", "prose"])
def test_other_deepgemm_asserts_are_not_read_so(text):
    assert said(text)[2] != "deep_gemm_arch_assert"


# --- h70012: 0.3.x's DP controller dropping an object it does not route ----------------------------------------

# the same line in other forms, written from 0.3.0 / 0.3.2's controller_multi.py: a tokenized embedding request
# (also not routed), a date stamp of a later logger format
@pytest.mark.parametrize("text", [
    "[10:00:01] Invalid object: TokenizedEmbeddingReqInput(rid='a1', input_text='hi', input_ids=[1, 2])\n",
    "[2024-10-27 14:26:31] Invalid object: UpdateWeightReqInput(model_path='/models/llama', load_format=None)\n",
], ids=["embedding", "date-stamp"])
def test_the_dp_controller_dropping_a_request_is_one_requests_error(text):
    assert said(text) == (False, "request_error", "dp_controller_dropped_request")
    assert diagnose(text).phase == "serving"


# near misses: the tokenizer manager's and detokenizer's ValueError (0.1.11, 0.4.0: an exception of their own),
# a repr that is no dataclass's, prose
@pytest.mark.parametrize("text", [
    "ValueError: Invalid object: recv_obj=BatchStrOut(rids=['a'], output_strs=['x'])\n",
    "ValueError: Invalid object: BatchTokenIDOut(rids=['a'])\n",
    "[14:26:31] Invalid object: 42\n",
    "the server said invalid object: UpdateWeightReqInput(...) when I called update_weights\n",
], ids=["valueerror-0.4.0", "valueerror-0.1.11", "not-a-dataclass", "prose"])
def test_other_invalid_object_texts_are_not_read_so(text):
    assert said(text)[2] != "dp_controller_dropped_request"


# --- the lines the rules cite (DeepGEMM's are its repository's, 891d57b and 59f2c07: no wheel to check here) ----

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("ray", "2.43.0", "ray/exceptions.py", 169, "class cls(RayTaskError, cause_cls):"),
    ("ray", "2.43.0", "ray/exceptions.py", 183, 'name = f"RayTaskError({cause_cls.__name__})"'),
    ("ray", "2.43.0", "ray/exceptions.py", 184, "cls.__name__ = name"),
    ("ray", "2.43.0", "ray/exceptions.py", 217, "def as_instanceof_cause(self):"),
    ("sglang", "0.5.12", "sglang/srt/layers/deep_gemm_wrapper/configurer.py", 19,
     "if (_is_cuda and sm_version < 90) or (_is_musa and sm_version < 31):"),
    ("sglang", "0.5.12", "sglang/srt/layers/attention/nsa_backend.py", 664,
     "paged_mqa_schedule_metadata = deep_gemm.get_paged_mqa_logits_metadata("),
    ("sglang", "0.3.0", "sglang/srt/managers/controller_multi.py", 183, 'logger.error(f"Invalid object: {recv_req}")'),
    ("sglang", "0.3.2", "sglang/srt/managers/controller_multi.py", 180, 'logger.error(f"Invalid object: {recv_req}")'),
    ("sglang", "0.3.2", "sglang/srt/managers/controller_multi.py", 200, 'pipe_writer.send("init ok")'),
    ("sglang", "0.3.2", "sglang/srt/managers/controller_multi.py", 203, "controller.loop_for_forward()"),
    ("sglang", "0.3.2", "sglang/srt/managers/tokenizer_manager.py", 537, "self.send_to_controller.send_pyobj(obj)"),
    ("sglang", "0.3.2", "sglang/srt/managers/tokenizer_manager.py", 539, "result = await self.model_update_result"),
    ("sglang", "0.3.2", "sglang/srt/managers/tokenizer_manager.py", 151, "while self.model_update_lock.locked():"),
    ("sglang", "0.1.11", "sglang/srt/managers/tokenizer_manager.py", 262,
     'raise ValueError(f"Invalid object: {recv_obj}")'),
    ("sglang", "0.4.0", "sglang/srt/managers/tokenizer_manager.py", 695,
     'raise ValueError(f"Invalid object: {recv_obj=}")'),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_rules_cite_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
