"""Held-out round 50 (issue 24): its one miss, h50001's phase, read by a frame rule from SGLang Diffusion's source.

Round 50 (h50001 alone; an issue description's paste) was measured once on main at 74f0da7 (with the round's
log, 46fcf94: crashed 1/1, kind 1/1, phase 0/1); docs/diagnosis.md, "Held-out round 50", explains the miss.
h50001 is SGLang Diffusion's worker (sglang.multimodal_gen) printing the tail of its OOM advice, "Worker 0:
Shutdown complete." and its process's traceback, which starts in the component loader's template method
(0.5.12 loader/component_loaders/component_loader.py:138 ``self.load_customized(`` in ``load``) and is cut in
the transformer's quantization config (transformer_load_utils.py:495). ddlab read it unknown at launch; the
component loaders are the pipeline loading its components' weights (its constructor's load_modules,
composed_pipeline_base.py:130, :431), so their frames read load_weights now (crashes/frames.py), as labelled,
except under a request's stage, which loads a component it left unloaded (denoising.py:620, decoding.py:187).
A rule's test reads the corpus log, texts written from the same source in other forms, and near misses that
must not read the same way; the positive tests fail on 74f0da7. A text cited from a wheel is checked there
where it is unpacked (/work/wheels/sglang-0.5.12 and the others named; skipped elsewhere).
"""

from __future__ import annotations

from fieldkit import REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, reads

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 50}

_SITE = "/opt/venv/lib/python3.12/site-packages/"
_RUNTIME = _SITE + "sglang/multimodal_gen/runtime/"
_LOADERS = _RUNTIME + "loader/component_loaders/"


def test_round50_is_folded_into_work_with_no_label_disputed():
    assert sorted(_ROUND) == ["h50001"]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())


def test_the_diffusion_workers_component_load_cut_in_the_quant_config_reads_as_labelled():
    assert_reads_as_labelled("h50001", None)


# --- the same load in other forms, written from SGLang Diffusion's source -------------------------------------

def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{path}", line {line}, in {func}\n    {code}\n'


# the pipeline's constructor loading its modules (0.5.12 composed_pipeline_base.py:130, :431), the template
# method falling back to the native loader (component_loader.py:156)
_STARTUP_LOAD = ("Traceback (most recent call last):\n"
                 + _frame(_RUNTIME + "pipelines_core/composed_pipeline_base.py", 130, "__init__",
                          "self.modules = self.load_modules(server_args, loaded_modules)")
                 + _frame(_RUNTIME + "pipelines_core/composed_pipeline_base.py", 431, "load_modules",
                          "module, memory_usage = PipelineComponentLoader.load_component(")
                 + _frame(_LOADERS + "component_loader.py", 439, "load_component", "return loader.load(")
                 + _frame(_LOADERS + "component_loader.py", 156, "load", "component = self.load_native("))


def test_the_pipelines_own_load_of_a_component_cut_in_the_native_loader_reads_load_weights():
    assert reads(_STARTUP_LOAD) == (True, "unknown", "load_weights")


def test_0_5_6s_single_component_loader_module_reads_the_same():
    # 0.5.6 loader/component_loader.py: one module, load (:138) calling load_customized (:155), the
    # TransformerLoader's building the DiT from its safetensors (:660)
    loader = _RUNTIME + "loader/component_loader.py"
    text = ("Traceback (most recent call last):\n"
            + _frame(loader, 155, "load", "component = self.load_customized(")
            + _frame(loader, 660, "load_customized", "model = maybe_load_fsdp_model("))
    assert reads(text) == (True, "unknown", "load_weights")


# --- near misses ----------------------------------------------------------------------------------------------

def test_a_component_a_request_stage_loads_late_is_that_requests():
    # 0.5.12 denoising.py:1238 forward -> :620 _prepare_denoising_loop -> TransformerLoader.load: a request's
    # stage loading the transformer it left unloaded (memory-constrained runs), not the startup's load
    text = ("[07-01 15:20:42] Error executing request ID: 7f3a: CUDA out of memory.\n"
            "Traceback (most recent call last):\n"
            + _frame(_RUNTIME + "pipelines_core/stages/denoising.py", 1238, "forward",
                     "ctx = self._prepare_denoising_loop(batch, server_args)")
            + _frame(_RUNTIME + "pipelines_core/stages/denoising.py", 620, "_prepare_denoising_loop",
                     "self.transformer = loader.load(")
            + _frame(_LOADERS + "component_loader.py", 156, "load", "component = self.load_native("))
    assert reads(text)[2] == "serving"


def test_a_frame_named_load_outside_the_component_loaders_is_not_a_load():
    # a function named load in another module of multimodal_gen (its configs, its utils) says nothing of weights
    text = ("Traceback (most recent call last):\n"
            + _frame(_RUNTIME + "utils/hf_diffusers_utils.py", 212, "load", "config = json.load(f)"))
    assert reads(text)[2] != "load_weights"


# --- the source lines the rule cites --------------------------------------------------------------------------

_CL = "sglang/multimodal_gen/runtime/loader/component_loaders/component_loader.py"
_CORE = "sglang/multimodal_gen/runtime/pipelines_core/"


def test_the_component_loaders_template_method_loads_each_component():
    assert_at_line("sglang", "0.5.12", _CL, 99, "def load(")
    assert_at_line("sglang", "0.5.12", _CL, 138, "component = self.load_customized(")
    assert_at_line("sglang", "0.5.12", _CL, 156, "component = self.load_native(")
    assert_at_line("sglang", "0.5.12", _CL, 415, "def load_component(")
    assert_at_line("sglang", "0.5.12", _CL, 439, "return loader.load(")
    old = "sglang/multimodal_gen/runtime/loader/component_loader.py"
    assert_at_line("sglang", "0.5.6", old, 138, "def load(")
    assert_at_line("sglang", "0.5.6", old, 155, "component = self.load_customized(")
    assert_at_line("sglang", "0.5.6", old, 660, "model = maybe_load_fsdp_model(")
    assert_at_line("sglang", "0.5.23", _CL, 332, "def load(")
    assert_at_line("sglang", "0.5.23", _CL, 1053, "def load_component(")


def test_the_pipelines_constructor_loads_its_modules():
    assert_at_line("sglang", "0.5.12", _CORE + "composed_pipeline_base.py", 130,
                   "self.modules = self.load_modules(server_args, loaded_modules)")
    assert_at_line("sglang", "0.5.12", _CORE + "composed_pipeline_base.py", 431,
                   "module, memory_usage = PipelineComponentLoader.load_component(")


def test_a_stage_loads_a_component_it_left_unloaded_inside_its_forward():
    assert_at_line("sglang", "0.5.12", _CORE + "stages/denoising.py", 620, "self.transformer = loader.load(")
    assert_at_line("sglang", "0.5.12", _CORE + "stages/denoising.py", 1238,
                   "ctx = self._prepare_denoising_loop(batch, server_args)")
    assert_at_line("sglang", "0.5.12", _CORE + "stages/decoding.py", 187, "self.vae, _ = loader.load(")
    assert_at_line("sglang", "0.5.12", _CORE + "stages/decoding.py", 212, "self.load_model()")


def test_h50001s_frames_and_lines_are_0_5_12s():
    utils = "sglang/multimodal_gen/runtime/loader/transformer_load_utils.py"
    transformer = "sglang/multimodal_gen/runtime/loader/component_loaders/transformer_loader.py"
    assert_at_line("sglang", "0.5.12", transformer, 91, "quant_spec = resolve_transformer_quant_load_spec(")
    assert_at_line("sglang", "0.5.12", utils, 365, "quant_config = _resolve_quant_config(")
    assert_at_line("sglang", "0.5.12", utils, 495, "return quant_cls.from_config({})")
    worker = "sglang/multimodal_gen/runtime/managers/gpu_worker.py"
    assert_at_line("sglang", "0.5.12", worker, 890, "5. Use a lower-memory attention backend or quantization")
    assert_at_line("sglang", "0.5.12", worker, 958, "logger.warning(OOM_MSG)")
    assert_at_line("sglang", "0.5.12", worker, 969, 'logger.info(f"Worker {rank}: Shutdown complete.")')
