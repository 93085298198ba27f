"""The rules that held-out round 21 of the vLLM corpus (vw01-vw26, measured once at c5c0640 with its logs
74fe1a5) showed missing, and the one miss read as a disputed label.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.6.3.post1 to 0.34.0): the
log that showed it is one case, a text written from the source in another form is the other, and a text beside
it that the rule must not take is a third. The source checks skip where the wheels are not unpacked (CI); the
readings run everywhere.
"""

from __future__ import annotations

from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test


_MIN = "is not supported for the current GPU. Minimum "
SOURCES = [
    # the quantization method's capability check: the model loader's (0.6.3), then the config's
    ("0.6.3.post1", "vllm/model_executor/model_loader/loader.py",
     '"is not supported for the current GPU. "\n                    f"Minimum capability: '),
    ("0.6.4.post1", "vllm/config.py", _MIN), ("0.7.3", "vllm/config.py", _MIN),
    ("0.11.1", "vllm/config/vllm.py", _MIN), ("0.14.0", "vllm/config/vllm.py", _MIN),
    ("0.30.0", "vllm/config/vllm.py", _MIN), ("0.33.0", "vllm/config/vllm.py", _MIN),
    ("0.34.0", "vllm/config/vllm.py", _MIN),
    ("0.34.0", "vllm/config/vllm.py", 'f"The quantization method {model_config.quantization} "'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- the quantization method's GPU capability check ----------------------------------------------------------

_FP8 = ("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. "
        "Current capability: 80.")


def test_the_quantization_methods_capability_check_is_an_unsupported_gpu():
    """vw23: the driver's ValueError line, then a Ray worker's load_model traceback, cut; read unknown before.
    And the config's check of later releases (VllmConfig at startup), its message on its own."""
    assert reads(read_log("vw23.log")) == (True, "unsupported_gpu", "load_weights")
    config = vllm_traceback(("vllm/engine/arg_utils.py", 1400, "create_engine_config", "config = VllmConfig("),
                            ("vllm/config/vllm.py", 839, "__post_init__",
                             "self.quant_config = VllmConfig._get_quantization_config("), exc=_FP8, head="")
    assert reads(config, family="vllm")[:2] == (True, "unsupported_gpu")
    assert vllm_signature(_FP8) == "vllm_quant_method_gpu"


def test_the_quantization_methods_other_checks_are_not_it():
    """The same function's dtype check stays a bad argument, an unknown method name is no GPU's fault, and the
    compressed-tensors scheme's own check keeps its signature."""
    dtype = "ValueError: torch.bfloat16 is not supported for quantization method gptq. Supported dtypes: [torch.float16]"
    assert reads(dtype, family="vllm")[:2] == (True, "bad_argument")
    unknown = "ValueError: Unknown quantization method: fp9. Must be one of ['awq', 'fp8', 'gptq']."
    assert vllm_signature(unknown) != "vllm_quant_method_gpu"
    assert reads(unknown, family="vllm")[1] != "unsupported_gpu"
    scheme = ("RuntimeError: Quantization scheme is not supported for the current GPU. Min capability: 80. "
              "Current capability: 75.")
    assert vllm_signature(scheme) == "vllm_quant_scheme_gpu"


# --- vw15: the label disputed, not a rule ----------------------------------------------------------------------

def test_a_traceback_cut_inside_inductors_precompile_names_no_kind():
    """vw15: the engine core's traceback ends on the header of triton_heuristics' ``precompile`` frame, no code
    line under it, no exception: what failed inside it the paste does not say (labelled kernel_compile, disputed
    to unknown in the manifest). ddlab reads it crashed, kind unknown."""
    assert reads(read_log("vw15.log"))[:2] == (True, "unknown")
