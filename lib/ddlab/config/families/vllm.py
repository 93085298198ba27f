"""The vLLM family: ``vllm serve MODEL --flag value ...``, speculation in ``--speculative-config``.

A vLLM base's flags are ``vllm serve``'s options in snake case (``max_num_seqs``;
kebab and ``--`` spellings are read as the same), ``model`` the positional
``MODEL``, and the JSON flags (``speculative_config``, ``compilation_config``)
mappings written as one compact JSON argument; ``true`` is a switch, ``false`` its
off form (``--no-enforce-eager``). They are checked when the config is made,
against the release's parser table (:mod:`ddlab.config.vllm`: the base's
``vllm.version``, else the newest table); ``ddlab.lab.commands`` checks them again
with the release the host runs. On a real host the command is ``python -m
vllm.entrypoints.cli.main serve MODEL ...`` (the ``vllm`` console script's own
module: vllm/entrypoints/cli/main.py:122 (0.34.0) runs ``main()``); on the
embedded target, ``python -m ddlab.target --dialect vllm MODEL ...``.

Overrides: the knobs (``num_speculative_tokens``, ``method``: keys of
``--speculative-config``; ``cuda_graph``: false is ``--enforce-eager``), any
option of a tabled release in snake or kebab case, ``speculative_config.KEY`` /
``compilation_config.KEY`` for a key inside a JSON flag, ``flags.NAME`` verbatim,
``env.X``, ``unit.X``, ``vllm.version``, ``python``, ``module``, ``probes``. Any
other key is refused naming the knobs (``budget`` is SGLang's DDTree knob).
Citations are ``path:line (release)`` inside the vLLM wheels.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping

from ddlab.config.families.family import TARGET_MODULE, Family, HttpApi, Knob, MetricsCounters
from ddlab.config.overrides import ALIASES, change_order
from ddlab.config.unit_fields import unit_field_name
from ddlab.config.vllm import (JSON_CONFIGS, all_options, option_of, option_words, render_serve,
                               vllm_table)
from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError

__all__ = ["VLLM", "VllmFamily", "TARGET_SWITCHES"]

_NAME = re.compile(r"[a-z0-9]+(_[a-z0-9]+)*")
# sizes an envelope searches in powers of two (ddlab's choice, as for SGLang's context-length,
# max-prefill-tokens, cuda-graph-max-bs in ddlab.config.flags)
_POW2_SIZES = ("max_model_len", "max_num_batched_tokens", "max_cudagraph_capture_size")
_JSON_FLAGS = tuple(JSON_CONFIGS.values())   # speculative_config, compilation_config
_SPEC = "speculative_config"
# the embedded target's own switches in vLLM's dialect (ddlab/target/vllm_args.py:150-157:
# device, faults): no vLLM option, so kept out of the release's check when the config is
# made; ddlab.lab.commands refuses them for a real vLLM and passes them to the target
TARGET_SWITCHES = ("device", "device_memory_gb", "cpu_threads", "debug_drop_verify_field",
                   "debug_drop_verify_mode", "debug_graph_tokens_per_req", "debug_load_delay_s")


class VllmFamily(Family):
    """vLLM; see the module docstring."""

    name = "vllm"
    label = "vLLM"
    package = "vllm"
    server_module = "vllm.entrypoints.cli.main"
    version_named_in = "the base (vllm.version)"
    log_dialect = "vllm"
    # "Mean acceptance length: %.2f" = 1 + accepted / drafts, "conventionally including
    # the bonus token" (vllm/v1/spec_decode/metrics.py:114, :122 (0.34.0)); on /metrics
    # from vllm:spec_decode_num_accepted_tokens / vllm:spec_decode_num_drafts (:229-231)
    acceptance = "mean acceptance length"
    api = HttpApi(health="/health", completions="/v1/completions", metrics="/metrics",
                  version="/version",
                  sources={"/health": "vllm/entrypoints/serve/instrumentator/health.py:22 "
                                      "(0.34.0): 200, or 503 once the engine is dead",
                           "/v1/completions": "vllm/entrypoints/openai/completion/"
                                              "api_router.py:37 (0.34.0)",
                           "/metrics": "vllm/entrypoints/serve/instrumentator/metrics.py:77 "
                                       "(0.34.0)",
                           "/version": "vllm/entrypoints/serve/instrumentator/basic.py:53 "
                                       "(0.34.0)"})
    knobs = {"num_speculative_tokens": Knob(
                 "num_speculative_tokens", f"{_SPEC}.num_speculative_tokens",
                 "tokens drafted per step (--speculative-config's num_speculative_tokens, "
                 "> 0: vllm/config/speculative.py:455 (0.34.0))", "t"),
             "method": Knob("method", f"{_SPEC}.method", "the speculative method (eagle3, "
                            "ngram, mtp, ...: the release's SpeculativeMethod)"),
             "cuda_graph": Knob("cuda_graph", "enforce_eager", "CUDA graphs on (true) or off: "
                                "false sets --enforce-eager", "eager", negated=True)}
    default_grid = {"num_speculative_tokens": (2, 4), "cuda_graph": (True, False)}
    search_sizes = ("num_speculative_tokens", "max_num_seqs", "max_model_len")
    table_knobs = ("num_speculative_tokens", "method")
    table_accept = "mean acceptance length"
    baseline = {_SPEC: None}
    model_flag = "model"
    draft_flag = f"{_SPEC}.model"
    algorithm_key = f"{_SPEC}.method"
    spec_prefix = f"{_SPEC}."
    false_removes = False
    target_switches = TARGET_SWITCHES
    # /metrics is always served, its counters too unless --disable-log-stats
    # (vllm/entrypoints/serve/instrumentator/metrics.py:77 (0.34.0)): nothing to turn on
    metrics_overrides: dict = {}
    # accepted draft tokens over drafts, plus the bonus token: the mean acceptance length
    # (vllm/v1/spec_decode/metrics.py:186-195 (0.34.0)); per position, the accepted tokens
    # labelled position; finished requests (vllm/v1/metrics/loggers.py:809)
    counters = MetricsCounters("vllm:spec_decode_num_accepted_tokens_total",
                               "vllm:spec_decode_num_drafts_total", "vllm:request_success_total",
                               per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
                               bonus=1.0)
    # the envelope notebook's search on a vLLM base: the drafted tokens, then the batch
    default_search = {"num_speculative_tokens": "1..16", "max_num_seqs": "8..256"}

    # --- the base's flags and the command --------------------------------------------

    def check_flags(self, flags: Mapping, *, release: Mapping) -> dict:
        out = {}
        for raw, value in flags.items():
            name = _snake(raw)
            if name in out:
                raise ConfigError(f"flag {name}: given twice (as snake and kebab case?)",
                                  fix="keep one spelling", key=name)
            if value is not None:
                out[name] = copy.deepcopy(value)
        if not out.get("model"):
            raise ConfigError("vllm flags: need a model (vllm serve MODEL)",
                              fix="e.g. flags: {model: Qwen/Qwen3-8B}", key="model")
        render_serve({k: v for k, v in out.items() if k not in TARGET_SWITCHES},
                     release.get("version"))  # the release's parser: ConfigError
        return out

    def command_groups(self, config) -> list[list[str]]:
        table = vllm_table(config.release.get("version"))
        model = str(config.flags["model"])
        head = ["--dialect", "vllm", model] if config.module == TARGET_MODULE else ["serve", model]
        groups = [option_words(table, option_of(k), v) for k, v in config.flags.items()
                  if k != "model"]
        return [head, *(g for g in groups if g)]

    def parser_words(self, config) -> list[str]:
        """``MODEL --flag ...``: what ``vllm serve``'s parser reads after ``serve``."""
        groups = self.command_groups(config)
        return [groups[0][-1], *(w for g in groups[1:] for w in g)]

    def flat_flags(self, flags: Mapping) -> dict:
        """A JSON flag's keys one by one (``speculative_config.method``), as changes and
        names see them; the other flags as they are."""
        out = {}
        for name, value in flags.items():
            if name in _JSON_FLAGS and isinstance(value, Mapping):
                out.update({f"{name}.{_snake(k)}": v for k, v in value.items()})
            else:
                out[name] = value
        return out

    def flag_changes(self, before: Mapping, after: Mapping) -> list[tuple[str, object]]:
        """Per flag; a JSON flag set on both sides key by key (``num_speculative_tokens``,
        ``speculative_config.model``), one set on one side only as a whole
        (``speculative_config=None``: no speculation); a knob's flag as the knob
        (``cuda_graph=False`` for ``enforce_eager: true``)."""
        out = []
        for name in {**before, **after}:
            old, new = before.get(name), after.get(name)
            if old == new:
                continue
            if name in _JSON_FLAGS and isinstance(old, Mapping) and isinstance(new, Mapping):
                old, new = ({_snake(k): v for k, v in side.items()} for side in (old, new))
                out += [self._change_key(f"{name}.{key}", new.get(key))
                        for key in {**old, **new} if old.get(key) != new.get(key)]
            else:
                out.append(self._change_key(name, new))
        return out

    def _change_key(self, flag: str, value) -> tuple[str, object]:
        """``(override key, value)`` that sets ``flag`` to ``value``."""
        knob = next((k for k in self.knobs.values() if k.sets == flag), None)
        if knob is not None and (not knob.negated or isinstance(value, bool)):
            return knob.name, (not value) if knob.negated else value
        if "." in flag or flag == "model" or option_of(flag) in _known_options():
            return flag, value
        if flag in TARGET_SWITCHES:
            return flag, value
        return f"flags.{flag}", value

    def point_words(self, key: str, value) -> str | None:
        """CUDA graphs in vLLM's flags: ``graphs off (--enforce-eager)``."""
        if self.knob_for(key) is self.knobs["cuda_graph"] and isinstance(value, bool):
            return "graphs on (--no-enforce-eager)" if value else "graphs off (--enforce-eager)"
        return None

    def search_flag(self, name: str):
        """A searched flag as a :class:`ddlab.config.flags.Flag` from the newest table: its
        kind (an integer option, ``human_readable_int``, a JSON field typed int) and bounds
        (``num_speculative_tokens > 0``: vllm/config/speculative.py:455 (0.34.0)); None when
        the table does not type it (a target switch, ``flags.X``)."""
        from ddlab.config.flags import Flag

        table = vllm_table(None)
        space, dot, key = name.partition(".")
        if dot:
            field = ((table.table.get(space) or {}).get("fields") or {}).get(key)
            if field is None:
                return None
            kinds = [k for k in field.get("kinds") or () if k != "none"]
            kind = "int" if kinds == ["int"] else "float" if "float" in kinds else "str"
            bounds = field.get("bounds") or {}
            low = bounds.get("gt", bounds.get("ge"))
            high = bounds.get("lt", bounds.get("le"))
            return Flag(name=name, kind=kind, short="", help=field.get("where") or "",
                        min=low, max=high, min_open="gt" in bounds)
        action = table.by_option.get(option_of(name))
        if action is None:
            return None
        typed = str(action.get("type") or "")
        kind = ("int" if typed == "int" else "human_int" if typed.startswith("human_readable_int")
                else "float" if typed == "float" else "switch" if action.get("nargs") == 0
                else "str")
        sized = name in _POW2_SIZES  # as SGLang's context-length, max-prefill-tokens
        return Flag(name=name, kind=kind, short="", help=action.get("where") or "",
                    min=1 if sized else None, pow2=sized)

    # --- overrides ---------------------------------------------------------------------

    def resolve_overrides(self, overrides: dict) -> dict:
        targets: dict = {}
        for key, value in overrides.items():
            target = self.override_target(key)
            knob = self.knob_for(key)
            if knob is not None and knob.negated:
                if not isinstance(value, bool):
                    raise ConfigError(f"{key}={value!r}: must be true or false",
                                      fix=f"try --set {key}=false", key=key, value=value)
                value = not value
            if key == "probes":
                value = tuple([value] if isinstance(value, str) else value or ())
            if target in targets and targets[target][1] != value:
                raise ConfigError(f"override {key}: sets the same thing as {targets[target][0]} "
                                  "with another value", fix="keep one of them", key=key)
            targets[target] = (key, value)
        return {t: targets[t][1] for t in sorted(targets, key=lambda t: self.change_order(*t))}

    def change_order(self, kind: str, name: str) -> tuple:
        """The knobs' flags first, in the knobs' order (``t4-eager``), then by name."""
        sets = [knob.sets for knob in self.knobs.values()]
        if kind == "flags":
            return (0, sets.index(name), "") if name in sets else (1, 0, name)
        return change_order(kind, name)

    def override_target(self, key: str) -> tuple[str, str]:
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"override key {key!r}: must be a non-empty string", key=key,
                              fix="e.g. num_speculative_tokens=4")
        if key in ("python", "module", "probes"):
            return key, key
        knob = self.knob_for(key)
        if knob is not None:
            return "flags", knob.sets
        space, dot, rest = key.partition(".")
        if dot:
            return self._dotted(key, space.lower().removeprefix("--").replace("-", "_"), rest)
        name = _snake(key)
        if name == "model" or option_of(name) in _known_options():
            return "flags", name
        if name in TARGET_SWITCHES:  # the embedded target's own (refused on a real vLLM)
            return "flags", name
        raise self._unknown(key, name)

    def _dotted(self, key: str, space: str, rest: str) -> tuple[str, str]:
        if space == "env":
            return "env", rest
        if space == "unit":
            return "unit", unit_field_name(rest)
        if space == "vllm":
            return "vllm", rest
        if space == "flags":  # verbatim: the release's table checks it with the config
            return "flags", _snake(rest)
        if space in _JSON_FLAGS and rest:
            return "flags", f"{space}.{_snake(rest)}"
        known = ("env", "unit", "flags", "vllm", *_JSON_FLAGS)
        guess = closest(space, known)
        raise ConfigError(f"{key}: {space!r} is not a namespace of the vllm family; use "
                          + ", ".join(f"{k}." for k in known),
                          fix=f"did you mean {guess}.{rest}?" if guess else
                          f"e.g. {_SPEC}.{rest}", key=key)

    def _unknown(self, key: str, name: str) -> ConfigError:
        guess = closest(name, [*self.knobs, *(o[2:].replace("-", "_") for o in _known_options())])
        hint = f"did you mean {guess}? " if guess else ""
        sglangs = f" ({name} is an SGLang knob)" if name in ALIASES else ""
        return ConfigError(f"{key}: not a knob or a vllm serve option of the vllm family"
                           f"{sglangs}; its knobs: {self.knob_words()}",
                           fix=f"{hint}use a knob, a vllm serve option in snake case "
                               f"(max_num_seqs), {_SPEC}.KEY (a key of the speculative "
                               "config), env.X or unit.X",
                           key=key, knobs=list(self.knobs))

    # --- names -------------------------------------------------------------------------

    def flag_token(self, key: str, new) -> tuple[str, bool] | None:
        if key == self.algorithm_key and new is None:
            return "nospec", True
        knob = next((k for k in self.knobs.values() if k.sets == key), None)
        if knob is None or new is None:
            return None
        if knob.negated:  # enforce_eager: true is eager, false graphs (as the knob says)
            return ("eager" if new is True else "graph"), isinstance(new, bool)
        text = str(new)
        slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
        return knob.short + slug, slug == text and (bool(knob.short) or not slug.isdigit())


def _snake(raw) -> str:
    """``--max-num-seqs``, ``max-num-seqs``, ``max_num_seqs`` -> ``max_num_seqs``."""
    if not isinstance(raw, str):
        raise ConfigError(f"flag name {raw!r}: must be a string",
                          fix="write vllm serve's options in snake case, e.g. max_num_seqs",
                          key=raw)
    name = raw.strip().removeprefix("--").replace("-", "_")
    if not _NAME.fullmatch(name):
        raise ConfigError(f"flag name {raw!r}: must be lower-case letters, digits and "
                          "underscores (snake or kebab case)",
                          fix="write it like max_num_seqs", key=raw)
    return name


def _known_options() -> frozenset:
    return all_options()


VLLM = VllmFamily()
