"""ddlab.target.args and .log_lines: SGLang 0.5.23's flag names, the old ones as deprecated
aliases, human-readable integers, and the server args as each generation prints them."""

import ast

import pytest

from ddlab.target.args import ServerArgs, build_parser, parse_args, parse_command_line, speculative_algorithm
from ddlab.target.log_lines import generation

YELLOW, RESET = "\033[1;33m", "\033[0m"

def test_graph_sizes_take_the_0_5_23_names_without_a_word():
    args, warnings = parse_command_line(["--cuda-graph-max-bs-decode", "4", "--cuda-graph-bs-decode", "1", "2"])
    assert (args.cuda_graph_max_bs_decode, args.cuda_graph_bs_decode, warnings) == (4, [1, 2], [])


REMOVED = {  # 0.5.20 removed them; argparse's prefix matching (on in 0.5.23) makes each ambiguous
    "max-bs": ("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"),
    "bs": ("--cuda-graph-bs", "--cuda-graph-bs-decode, --cuda-graph-bs-prefill"),
}


@pytest.mark.parametrize("flag,matches", REMOVED.values(), ids=REMOVED.keys())
def test_the_removed_names_are_ambiguous_options_as_in_0_5_23(capsys, flag, matches):
    with pytest.raises(SystemExit) as exit_:
        parse_args([flag, "4"])
    said = capsys.readouterr().err.splitlines()[-1]
    assert exit_.value.code == 2
    assert said == f"python -m ddlab.target: error: ambiguous option: {flag} could match {matches}"


def test_a_unique_prefix_is_taken_as_0_5_23s_argparse_takes_it():
    assert parse_args(["--context-len", "32k"]).context_length == 32000


@pytest.mark.parametrize("given", ["dflash", "DFlash", "DFLASH"])
def test_the_algorithm_name_is_read_in_any_case(given):
    assert parse_args(["--speculative-algorithm", given]).speculative_algorithm == "DFLASH"


def test_none_in_any_case_is_no_speculation():
    assert parse_args(["--speculative-algorithm", "none"]).speculative_algorithm is None


@pytest.mark.parametrize("name,said", [("FOO", "Unknown speculative algorithm name: FOO"),
                                       ("eagle", "Speculative algorithm eagle: ddlab's target runs")])
def test_an_algorithm_the_target_cannot_run_is_kept_for_the_launcher_to_refuse(name, said):
    args = parse_args(["--speculative-algorithm", name])
    assert args.speculative_algorithm == name
    with pytest.raises(ValueError, match=said):
        speculative_algorithm(args.speculative_algorithm)


def test_prefill_graph_flags_parse_and_only_disabled_is_a_backend(capsys):
    args = parse_args(["--cuda-graph-max-bs-prefill", "8", "--cuda-graph-bs-prefill", "4", "8"])
    assert (args.cuda_graph_backend_prefill, args.cuda_graph_max_bs_prefill) == ("disabled", 8)
    with pytest.raises(SystemExit):
        parse_args(["--cuda-graph-backend-prefill", "breakable"])
    assert "has no prefill graphs" in capsys.readouterr().err


def test_the_old_names_are_0_4s_own_and_earn_no_warning_there():
    args, warnings = parse_command_line(["--log-format", "0.4", "--cuda-graph-max-bs", "4",
                                         "--cuda-graph-bs", "1", "2", "--disable-cuda-graph"])
    assert (args.cuda_graph_max_bs_decode, args.cuda_graph_bs_decode) == (4, [1, 2])
    assert args.disable_cuda_graph and warnings == []


GRAPHS_OFF = {
    "backend-disabled": (["--cuda-graph-backend-decode", "disabled"], False),
    "disable-cuda-graph": (["--disable-cuda-graph"], True),
}


@pytest.mark.parametrize("argv,deprecated", GRAPHS_OFF.values(), ids=GRAPHS_OFF.keys())
def test_both_ways_of_turning_graphs_off_agree(argv, deprecated):
    args, warnings = parse_command_line(argv)
    assert args.disable_cuda_graph and args.cuda_graph_backend_decode == "disabled"
    assert bool(warnings) == deprecated
    if deprecated:
        assert warnings[0] == (f"{YELLOW}'--disable-cuda-graph' is deprecated and will be removed in a "
                               "future release. Use '--cuda-graph-backend-{decode,prefill}=disabled' "
                               f"instead.{RESET}")


@pytest.mark.parametrize("backend", ["full", "breakable"])
def test_graph_backends_that_keep_graphs_on(backend):
    args = parse_args(["--cuda-graph-backend-decode", backend])
    assert not args.disable_cuda_graph and args.cuda_graph_backend_decode == backend


HUMAN = {"plain": ("300", 300), "si": ("32k", 32000), "si-decimal": ("25.6k", 25600),
         "iec": ("1Ki", 1024)}


@pytest.mark.parametrize("text,value", HUMAN.values(), ids=HUMAN.keys())
def test_context_length_reads_human_readable_integers_as_sglang_does(text, value):
    assert parse_args(["--context-length", text]).context_length == value
    assert parse_args(["--max-prefill-tokens", text]).max_prefill_tokens == value


BAD = {
    "iec-decimal": (["--context-length", "1.5Ki"], "Decimals are not allowed with IEC suffixes"),
    "lowercase-m": (["--context-length", "32m"], "Invalid integer value: '32m'"),
    "backend": (["--cuda-graph-backend-decode", "piecewise"], "invalid choice: 'piecewise'"),
    "mode": (["--debug-drop-verify-mode", "ignore"], "invalid choice: 'ignore'"),
    "format": (["--log-format", "0.5.10"], "invalid choice: '0.5.10'"),
}


@pytest.mark.parametrize("argv,message", BAD.values(), ids=BAD.keys())
def test_bad_values_are_argparse_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_default_is_0_5_23_and_a_dropped_field_does_what_its_copy_does():
    """0.5.23's fill_from skips a None field (cuda_graph_buffer_registry.py:441-443, 489-491);
    0.4's replay_prepare hands it to Tensor.copy_, which raises; either is there by the switch."""
    assert (parse_args([]).log_format, parse_args([]).debug_drop_verify_mode) == ("0.5.23", "skip")
    assert parse_args(["--log-format", "0.4"]).debug_drop_verify_mode == "raise"
    assert parse_args(["--debug-drop-verify-mode", "raise"]).debug_drop_verify_mode == "raise"
    assert parse_args(["--log-format", "0.4", "--debug-drop-verify-mode", "skip"]).debug_drop_verify_mode == "skip"


def test_lab_flags_still_parse():
    """What params/base/local.yaml and ddlab's lab pass (deploy, watch, sweep, bench)."""
    args = parse_args(["--model-path", "ddlab-tiny", "--speculative-draft-model-path", "ddlab-tiny-drafter",
                       "--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "16",
                       "--speculative-ddtree-topk-cap", "4", "--host", "127.0.0.1", "--port", "30001",
                       "--disable-cuda-graph", "--mem-fraction-static", "0.8", "--device-memory-gb", "2",
                       "--debug-drop-verify-field", "num_token_non_padded",
                       "--debug-graph-tokens-per-req", "16", "--decode-log-interval", "5"])
    assert args.speculative_ddtree_budget == 16 and args.port == 30001 and args.disable_cuda_graph


@pytest.mark.parametrize("fmt", ["0.5.23", "0.4"])
def test_every_flag_has_a_server_args_field(fmt):
    fields = set(ServerArgs.__dataclass_fields__)
    dests = {a.dest for a in build_parser(log_format=fmt)._actions if a.option_strings and a.dest != "help"}
    assert dests <= fields


def test_0_5_23_prints_server_args_as_a_dict_with_the_new_names():
    args = parse_args(["--speculative-algorithm", "DDTREE", "--cuda-graph-max-bs-decode", "4"])
    line = generation("0.5.23").server_args(args)
    assert line.startswith("server_args={'model_path': 'ddlab-tiny', ")
    view = ast.literal_eval(line.removeprefix("server_args="))
    assert view["cuda_graph_max_bs_decode"] == 4 and "cuda_graph_max_bs" not in view
    assert view["cuda_graph_config"]["decode"] == {"backend": "full", "max_bs": 4, "bs": None}
    assert view["cuda_graph_config"]["prefill"] == {"backend": "disabled", "max_bs": None, "bs": None}


def test_0_4_prints_the_dataclass_repr_with_0_4s_names():
    args = parse_args(["--log-format", "0.4", "--cuda-graph-max-bs-decode", "4", "--mem-fraction-static",
                       "0.5"])
    line = generation("0.4").server_args(args)
    assert line.startswith("server_args=ServerArgs(model_path='ddlab-tiny', ")
    assert "cuda_graph_max_bs=4" in line and "mem_fraction_static=0.5" in line
    assert "_decode" not in line and "graph_backend_prefill" not in line and "bs_prefill" not in line
    assert "cuda_graph_config" not in line
