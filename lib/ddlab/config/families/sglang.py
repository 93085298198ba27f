"""The SGLang family: ``python -m sglang.launch_server --flag value ...``.

Its flags are ddlab's registry (:data:`ddlab.config.flags.FLAGS`, kebab names; an
unknown flag passes through verbatim, a near miss is refused), checked per release
by :mod:`ddlab.config.sglang`'s parser tables; its knobs are the notebook aliases
(:data:`ddlab.config.overrides.ALIASES`). Citations are ``path:line`` inside the
sglang 0.5.23 wheel. Everything SGLang did before families is here, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

from ddlab.config import flags as flagreg
from ddlab.config.families.family import Family, HttpApi, Knob, MetricsCounters
from ddlab.config.overrides import ALIASES, _target, resolve_overrides
from ddlab.core.errors import ConfigError

__all__ = ["SGLANG", "SGLangFamily"]

_SERVER = "sglang/srt/entrypoints/http_server.py"


class SGLangFamily(Family):
    """SGLang; see the module docstring."""

    name = "sglang"
    label = "SGLang"
    package = "sglang"
    server_module = "sglang.launch_server"
    version_named_in = "the host profile (sglang_version)"
    log_dialect = "sglang"
    # completion tokens per verify step: meta_info's spec_accept_length
    # (sglang/srt/managers/tokenizer_manager.py:3166 (0.5.23)); ddlab takes it per run
    # from spec_verify_ct (ddlab.lab.measure)
    acceptance = "accept length"
    api = HttpApi(health="/health", completions="/v1/completions", metrics="/metrics",
                  generate="/generate", server_info=("/server_info", "/get_server_info"),
                  sources={"/health": f"{_SERVER}:721 (0.5.23)",
                           "/generate": f"{_SERVER}:929 (0.5.23)",
                           "/v1/completions": f"{_SERVER}:1860 (0.5.23)",
                           "/server_info": f"{_SERVER}:863 (0.5.23)",
                           "/get_server_info": f"{_SERVER}:853 (0.5.23)",
                           "/metrics": "sglang/srt/utils/common.py:2849 (0.5.23), with "
                                       "--enable-metrics"})
    knobs = {"budget": Knob("budget", ALIASES["budget"], "DDTree's tree budget: nodes "
                            "verified per step", "b"),
             "topk_cap": Knob("topk_cap", ALIASES["topk_cap"], "DDTree's per-depth top-k cap",
                              "k"),
             "algorithm": Knob("algorithm", ALIASES["algorithm"], "the speculative algorithm"),
             "cuda_graph": Knob("cuda_graph", ALIASES["cuda_graph"], "CUDA graphs on (true) "
                                "or off: false sets --disable-cuda-graph", "nograph",
                                negated=True)}
    default_grid = {"budget": (4, 16, 32), "topk_cap": (1, 4), "cuda_graph": (True, False)}
    search_sizes = ("context_length", "max_running_requests", "cuda_graph_max_bs_decode")
    table_knobs = ("budget", "topk_cap")
    baseline = {"speculative_algorithm": None, "speculative_draft_model_path": None,
                "speculative_ddtree_budget": None, "speculative_ddtree_topk_cap": None,
                "speculative_dflash_block_size": None, "speculative_num_draft_tokens": None}
    model_flag = "model-path"
    draft_flag = "speculative-draft-model-path"
    algorithm_key = "speculative-algorithm"
    spec_prefix = "speculative-"
    registry = flagreg.FLAGS
    # /metrics and its counters only with --enable-metrics (sglang/srt/utils/common.py:2849
    # (0.5.23)): a workload sweep's acceptance comes from them (ddlab.sweeps.workload)
    metrics_overrides = {"enable_metrics": True}
    # tokens generated over verify steps, differenced: the accept length (the tokens hold the
    # step's own); finished requests (0.5.23 metrics_collector.py:1940-1942, :2136)
    counters = MetricsCounters("sglang:generation_tokens_total", "sglang:spec_verify_calls_total",
                               "sglang:num_requests_total")
    default_search = {"context_length": "4096..131072", "max_running_requests": "8..256"}

    def baseline_words(self) -> str:  # six keys: the one that matters, then the rest by kind
        return "--set speculative_algorithm=null and the other speculative_* keys"

    def check_base_flag_names(self, flags: Mapping) -> None:
        for raw in flags:
            if raw in ALIASES:  # a notebook alias here would pass through as --budget
                raise ConfigError(f"flags key {raw!r}: is a notebook alias, not a flag",
                                  fix=f"write {ALIASES[raw]}: (or \"--{raw}\": for a "
                                      "flag of that very name)", key=raw)
            flagreg.resolve_name(raw)

    def check_flags(self, flags: Mapping, *, release: Mapping) -> dict:
        out = {}
        for raw, value in flags.items():
            name, _ = flagreg.normalize_name(raw)
            if name in out:
                raise ConfigError(f"flag {name}: given twice (as snake and kebab case?)",
                                  fix="keep one spelling", key=name)
            checked = flagreg.check_value(name, value)
            if checked is not None:
                out[name] = checked
        return out

    def command_groups(self, config) -> list[list[str]]:
        return [flagreg.render_flag(n, v) for n, v in config.flags.items()]

    def parser_words(self, config) -> list[str]:
        return list(chain.from_iterable(self.command_groups(config)))

    def null_is_a_value(self, name: str) -> bool:
        return flagreg.takes_null(name)  # --disaggregation-mode null

    def resolve_overrides(self, overrides: dict) -> dict:
        return resolve_overrides(overrides)

    def override_target(self, key: str) -> tuple[str, str]:
        return _target(key)

    def check_grid(self, keys, *, base: str = "", flags: Mapping | None = None) -> None:
        """Any key passes as a flag (a near miss is refused when its cell is made); but
        DDTree's knobs on a base that runs another algorithm are a mistake, not a sweep:
        upstream SGLang has no ``--speculative-ddtree-*`` flag (0.5.23's parser:
        unrecognized arguments), and DFLASH would not read them if it had."""
        algorithm = str((flags or {}).get("speculative-algorithm") or "").upper()
        ddtree_keys = [k for k in keys if ALIASES.get(k, k).replace("_", "-")
                       .startswith("speculative-ddtree-")]
        if ddtree_keys and algorithm != "DDTREE":
            raise ConfigError(
                f"base {base}: runs {algorithm or 'no speculation'}, but the grid varies "
                f"{', '.join(ddtree_keys)}, DDTree's knobs",
                fix="pick a DDTree base, or leave them out: -p budget '[]' -p topk_cap '[]' "
                    "(a grid of other flags goes in -p grid)", value=ddtree_keys)

    def flag_changes(self, before: Mapping, after: Mapping) -> list[tuple[str, object]]:
        out = []
        for name in {**before, **after}:
            old, new = before.get(name), after.get(name)
            if old == new:
                continue
            if name == ALIASES["cuda_graph"]:
                out.append(("cuda_graph", new is None))
            else:
                out.append((name.replace("-", "_") if name in flagreg.FLAGS else f"flags.{name}",
                            new))
        return out

    def flag_token(self, key: str, new):
        return None  # the registry's short names (ddlab.config.variants)


SGLANG = SGLangFamily()
