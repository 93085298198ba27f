"""The rules that round 9 of the vLLM corpus (vj01-vj30, measured once) showed missing.

Each rule is general and cited from its writer's source (the vLLM wheels 0.6.4.post1, 0.7.3,
0.30.0, 0.34.0; Akash Console, UCX, glibc and dyld where they write the text): the round-9 log
that showed it is one case, a text written from the source in another form is the other, and a
text beside it that the rule must not take is a third.
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.logtext import split_lines
from fieldkit import assert_in_wheel, read_log, reads, vllm_traceback


# --- a paste format: Akash Console's "[service]: " in front of every line ---------------------

def test_akash_consoles_service_tag_is_peeled():
    """vj09: Akash Console's lease log viewer writes each line as "[service]: message"
    (akash-network/console apps/deploy-web/src/services/provider-proxy/logFormatters.ts:6); with
    the tag in front, a V0 worker's traceback into ncclCommInitRank was no traceback: not crashed.
    Peeled, it is the NCCL init's cut traceback (vllm_nccl_init_cut, as vi28)."""
    assert reads(read_log("vj09.log")) == (True, "nccl", "launch")
    assert split_lines("[web]: INFO: Started server process")[0].msg == "INFO: Started server process"
    # a bracket that is no service name (a level in capitals, a file:line, an errno) stays
    for text in ("[ERROR]: x", "[core.py:396]: x", "[Errno 98]: x"):
        assert split_lines(text)[0].msg == text, text


# --- vLLM's compiled ops that do not link: dependency_mismatch --------------------------------

_LINUX = ("WARNING 12-03 10:00:00 [interface.py:382] Failed to import from vllm._C: ImportError('/usr/lib/"
          "python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa')\n")
_CUT = ("INFO 12-03 10:00:01 [parallel_state.py:1000] rank 0 in world size 1 is assigned as DP rank 0\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "<frozen runpy>", line 198, in _run_module_as_main\n')


def test_a_c_extension_that_does_not_link_explains_the_traceback_after_it():
    """vj10: vLLM only warns when its compiled ops fail to import ("Failed to import from vllm._C
    with %r", _custom_ops.py:21 (0.7.3)); a dynamic linker's missing symbol in it (dyld's "Symbol
    not found: ", dyld/Loader.cpp:3175) is an extension built against another torch, and the
    traceback cut right after it was read unknown before."""
    assert_in_wheel("0.7.3", "vllm/_custom_ops.py", 'logger.warning("Failed to import from vllm._C with %r", e)')
    assert_in_wheel("0.34.0", "vllm/platforms/interface.py", 'logger.warning_once("Failed to import from vllm._C: %s", repr(e))')
    assert reads(read_log("vj10.log")) == (True, "dependency_mismatch", "launch")
    # 0.34.0's wording with glibc's "undefined symbol: " (elf/dl-lookup.c:806), a traceback cut after it
    assert reads(_LINUX + _CUT, family="vllm") == (True, "dependency_mismatch", "launch")
    # the warning alone is no crash (vLLM carries on without its ops until one is called; Linux's
    # ".so: undefined symbol: " line is read by vllm_dependency_mismatch on its own, as before)
    warning = next(line for line in read_log("vj10.log").splitlines() if "Failed to import" in line)
    assert not diagnose(warning + "\n", family="vllm").crashed
    # an import failure that is no linker's (the module not built) does not explain the crash
    unbuilt = _LINUX.replace("/usr/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: "
                             "_ZN3c104cuda9SetDeviceEa", "No module named 'vllm._C'")
    assert reads(unbuilt + _CUT, family="vllm")[1] != "dependency_mismatch"


# --- UCX's backtrace frames without their header: native_crash --------------------------------

def test_a_ucx_backtrace_frame_is_a_fatal_signals_dump():
    """vj16: frames 14-23 of UCX's backtrace ("%2d 0x%016lx %s()  %s:%u", src/ucs/debug/debug.c:45),
    which UCX prints bare only from ucs_handle_error (a fatal signal, or a fatal error and abort();
    debug.c:1094), in a Ray worker's lines; the "==== backtrace" header was cut: not crashed before."""
    assert reads(read_log("vj16.log"))[:2] == (True, "native_crash")
    frame = " 3 0x0000000000044dd0 __GI_raise()  ???:0\n"
    assert reads(frame)[:2] == (True, "native_crash")
    # UCX's logger prints the same frame for a warning with its own prefix: not the bare dump
    logged = ("[1733300000.123456] [node1:4242 :0]        uct_iface.c:97   UCX  WARN   3 0x0000000000044dd0 "
              "__GI_raise()  ???:0\n")
    assert not diagnose(logged).crashed
    # a gdb frame is not UCX's format
    assert not diagnose("#3  0x00007f0000044dd0 in raise () from /lib/x86_64-linux-gnu/libc.so.6\n").crashed


# --- a traceback cut in the loop that reads the checkpoint: weights_unreadable -----------------

_LOAD = (("vllm/model_executor/models/utils.py", 402, "_load_module", "loaded_params = module_load_weights(weights)"),
         ("vllm/model_executor/models/llama.py", 450, "load_weights", "for name, loaded_weight in weights:"))


def test_a_traceback_cut_in_the_checkpoint_loop_failed_reading_the_files():
    """vj21: a V0 engine's traceback through Qwen2's load_weights into the generic loader's
    generators over the checkpoint iterator (models/utils.py:99, :108 (0.7.3)), cut before its
    exception: below that loop only the loader's iterators run, which open and read the files
    (weight_utils.py:425 safe_open (0.7.3)); read unknown before."""
    assert_in_wheel("0.7.3", "vllm/model_executor/models/utils.py", "for weight_name, weight_data in weights)")
    assert_in_wheel("0.34.0", "vllm/model_executor/models/utils.py", "for weight_name, weight_data in weights")
    assert_in_wheel("0.7.3", "vllm/model_executor/model_loader/weight_utils.py", 'with safe_open(st_file, framework="pt") as f:')
    assert reads(read_log("vj21.log")) == (True, "weights_unreadable", "load_weights")
    # 0.34.0's frames, cut in the model's own loop
    assert reads(vllm_traceback(*_LOAD, exc=None)) == (True, "weights_unreadable", "load_weights")
    # cut further on, in the loop's body (a parameter's lookup), it is no file's fault
    body = vllm_traceback(*_LOAD, ("vllm/model_executor/models/llama.py", 470, "load_weights",
                                   "param = params_dict[name]"), exc=None)
    assert reads(body)[1] != "weights_unreadable"


# --- one completion request's preprocessing: request_error -----------------------------------

def test_the_completion_handlers_render_step_is_one_requests_error():
    """vj25: "Error in preprocessing prompt inputs" over a traceback whose outer frame is the
    completion handler's render_completion_request (completion/serving.py:88 (0.30.0), :139
    (0.34.0)), cut: one request's error, read as a crash before (only the chat handler's
    render_chat_request was known)."""
    assert_in_wheel("0.34.0", "vllm/entrypoints/openai/completion/serving.py", "async def render_completion_request(")
    assert reads(read_log("vj25.log")) == (False, "request_error", "serving")
    # a frame of that name outside the OpenAI handlers is no request's (round 19: without the handler's own
    # "Error in preprocessing prompt inputs" record above it, which only the OpenAI handlers log and which makes
    # the traceback under it theirs: test_vllm_round19.py)
    other = read_log("vj25.log").replace("in render_completion_request", "in render_completion_request_cached")
    other = "\n".join(ln for ln in other.splitlines() if not ln.endswith("Error in preprocessing prompt inputs"))
    assert reads(other)[:2] != (False, "request_error")


# --- vLLM's argument parser refusing the command line: bad_argument ---------------------------

def test_vllms_argument_parser_refusing_the_command_line_is_a_bad_argument():
    """vj29: FlexibleArgumentParser.parse_args raising ValueError for `vllm serve --model X`
    (vllm/utils.py:1343 (0.8.5)); read unknown before."""
    assert reads(read_log("vj29.log")) == (True, "bad_argument", "launch")
    # 0.34.0's parser refusing a command line with no model (argparse_utils.py:580)
    assert_in_wheel("0.34.0", "vllm/utils/argparse_utils.py", '"No model specified! Please specify model either "')
    head = "Traceback (most recent call last):\n"
    parser = (head + '  File "/usr/lib/python3.12/site-packages/vllm/utils/argparse_utils.py", line 409, in parse_args\n'
              "    args = self._pull_args_from_config(args)\n"
              '  File "/usr/lib/python3.12/site-packages/vllm/utils/argparse_utils.py", line 580, in _pull_args_from_config\n'
              "    raise ValueError(\nValueError: No model specified! Please specify model either as a positional "
              "argument or in a config file.\n")
    assert reads(parser)[:2] == (True, "bad_argument")
    # 0.7.3's serve command refusing --model (entrypoints/cli/serve.py:27)
    assert_in_wheel("0.7.3", "vllm/entrypoints/cli/serve.py", '"With `vllm serve`, you should provide the model as a "')
    serve = (head + '  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/cli/serve.py", line 27, in cmd\n'
             "    raise ValueError(\nValueError: With `vllm serve`, you should provide the model as a positional "
             "argument instead of via the `--model` option.\n")
    assert reads(serve)[:2] == (True, "bad_argument")
    # since 0.30 the `--model` text is a warning (argparse_utils.py:332 (0.34.0)): no crash
    warned = ("WARNING 12-03 10:00:00 [argparse_utils.py:332] With `vllm serve`, you should provide the model "
              "as a positional argument or in a config file instead of via the `--model` option.\n")
    assert not diagnose(warned, family="vllm").crashed
    # a ValueError raised in another of vLLM's utilities is not the parser's
    other = parser.replace("in _pull_args_from_config", "in get_open_port")
    assert reads(other)[1] != "bad_argument"


# --- a negative KV cache share before an engine's cut traceback: kv_pool_oom ------------------

def test_a_negative_kv_cache_share_explains_the_engines_cut_traceback():
    """vj30: V1's worker logs "Available KV cache memory: -2.77 GiB" (gpu_worker.py:796 (0.34.0));
    at or below zero the engine's check raises (kv_cache_planning.py:106 (0.34.0)), and the engine
    core's traceback right after it was cut: read unknown before."""
    assert_in_wheel("0.34.0", "vllm/v1/worker/gpu_worker.py", '"Available KV cache memory: %s GiB",')
    assert_in_wheel("0.34.0", "vllm/v1/core/kv_cache_planning.py", "if available_memory <= 0:")
    text = read_log("vj30.log")
    assert reads(text) == (True, "kv_pool_oom", "memory_pool")
    # a share that is left is no explanation
    assert reads(text.replace("memory: -2.77 GiB", "memory: 2.77 GiB"))[1] != "kv_pool_oom"
