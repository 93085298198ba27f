"""The interface every server family implements: :class:`Family`, with the data it holds
(:class:`HttpApi`, :class:`Knob`) and the host's version probe; see :mod:`ddlab.config.families`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from ddlab.config.overrides import change_order
from ddlab.core.errors import ConfigError


__all__ = ["Family", "HttpApi", "Knob", "MetricsCounters", "DEFAULT_FAMILY", "TARGET_MODULE", "EMBEDDED_MODELS",
           "version_probe"]

DEFAULT_FAMILY = "sglang"  # a base that names none: every base written before families
TARGET_MODULE = "ddlab.target"  # the embedded server: `python -m ddlab.target [--dialect D]`
# the embedded target's built-in checkpoints, target and drafter (ddlab.target.checkpoint)
EMBEDDED_MODELS = ("ddlab-tiny", "ddlab-tiny-drafter")


@dataclass(frozen=True)
class HttpApi:
    """A family's HTTP API, each path with where the real server defines it
    (``sources``: path -> ``file:line (release)``)."""

    health: str                     # 200 when ready (503 while starting or dead)
    completions: str                # OpenAI completions: a request every family answers
    metrics: str                    # Prometheus text
    generate: str | None = None     # the family's own generate (SGLang: output_ids, spec_*)
    server_info: tuple = ()         # what the server says of itself, newest name first
    version: str | None = None      # the running server's release
    sources: dict = field(default_factory=dict)


@dataclass(frozen=True)
class MetricsCounters:
    """Where a family's acceptance is on its ``/metrics``: two counters that give it when
    differenced (``accepted`` over ``steps``, plus ``bonus``: the token a step emits of
    its own when ``accepted`` counts drafts only), the finished requests, and the accepted
    drafts per position (a counter labelled ``position``; "" when the family has none)."""

    accepted: str
    steps: str
    requests: str
    per_position: str = ""
    bonus: float = 0.0

    @property
    def names(self) -> tuple:
        """(accepted, steps, requests): the counters every reading holds."""
        return self.accepted, self.steps, self.requests

    def acceptance(self, accepted: float, steps: float) -> float | None:
        """The family's figure from two counters' changes (None: no step)."""
        return self.bonus + accepted / steps if steps > 0 else None


@dataclass(frozen=True)
class Knob:
    """One thing a sweep varies: the override key (``budget``) and what it sets.

    ``sets``: the flag (a dotted path into a JSON flag: ``speculative_config.
    num_speculative_tokens``); ``negated``: a bool knob that sets the flag's opposite
    (``cuda_graph: false`` is ``disable-cuda-graph`` / ``enforce_eager``);
    ``short``: its word in a variant's name (``b32``, ``t4``)."""

    name: str
    sets: str
    meaning: str
    short: str = ""
    negated: bool = False


class Family:
    """A server family; see the module docstring. Subclasses fill the attributes and
    the methods; :data:`FAMILIES` holds one instance of each."""

    name: str = ""
    label: str = ""                 # as people write it: SGLang, vLLM
    package: str = ""               # the distribution (and import) name on a host
    server_module: str = ""         # what `python -m` runs on a real host
    version_named_in: str = ""      # where a user names the release a host cannot tell
    log_dialect: str = ""
    acceptance: str = ""            # the acceptance figure's name in the family's words
    api: HttpApi
    knobs: dict = {}                # override key -> Knob
    default_grid: dict = {}
    baseline: dict = {}             # overrides that remove speculation (the baseline cell)
    model_flag: str = ""            # the flag naming the model, as flags hold it
    draft_flag: str = ""            # the flag naming the draft model (dotted: inside JSON)
    algorithm_key: str = ""         # the change that names the algorithm (nospec when removed)
    spec_prefix: str = ""           # flags (and dotted keys) that belong to speculation
    false_removes: bool = True      # an override's false removes a flag (vLLM: --no-X)
    registry: dict = {}             # ddlab's table of the family's flags, name -> Flag (FLAGS)
    metrics_overrides: dict = {}    # what makes the server count on /metrics (a workload sweep)
    counters: MetricsCounters       # its acceptance on /metrics (workload sweeps, vLLM's bench)
    default_search: dict = {}       # the envelope notebook's search: key -> "LO..HI"
    search_sizes: tuple = ()        # integer flags an envelope is for, named when one is not
    table_knobs: tuple = ()         # a sweep table's knob columns (after kind)
    table_accept: str = "accept_length"  # the table's acceptance column, in the family's words

    def check_flags(self, flags: Mapping, *, release: Mapping) -> dict:
        """The base's flags, validated and normalised (names, values as typed)."""
        raise NotImplementedError

    def check_base_flag_names(self, flags: Mapping) -> None:
        """A base file's flag names, refused when they are a near miss or a knob."""

    def command_groups(self, config) -> list[list[str]]:
        """The argv after ``python -m MODULE``, one group per flag (a unit's lines)."""
        raise NotImplementedError

    def parser_words(self, config) -> list[str]:
        """The words the server's own parser reads (what its table checks)."""
        raise NotImplementedError

    def resolve_overrides(self, overrides: dict) -> dict:
        """``{(kind, name): value}`` in canonical order: where each override key goes
        (``flags``, ``env``, ``unit``, ``python``, ``module``, ``probes``, the release
        section), knobs translated; a dotted flag name is a key inside a JSON flag."""
        raise NotImplementedError

    def override_target(self, key: str) -> tuple[str, str]:
        """``(kind, name)``: where one override key goes (see :meth:`resolve_overrides`)."""
        raise NotImplementedError

    def null_is_a_value(self, name: str) -> bool:
        """Whether an override's null is the text ``null`` for flag ``name`` (one of its
        choices), not its removal."""
        return False

    def change_order(self, kind: str, name: str) -> tuple:
        """A change's place in names and descriptions (SGLang: the registry's order)."""
        return change_order(kind, name)

    def check_grid(self, keys, *, base: str = "", flags: Mapping | None = None) -> None:
        """A sweep's grid keys, refused before any cell is made when one is neither a knob
        nor an option of the family's server (a ConfigError naming the key and the
        knobs); ``flags``: the base's, with the sweep's fixed overrides applied."""
        for key in keys:
            try:
                self.override_target(key)
            except ConfigError as err:
                raise ConfigError(f"grid key {key!r}: base {base} is of the {self.name} "
                                  f"family, whose knobs are {self.knob_words()}; {key!r} is "
                                  f"none of them nor an option of {self.label}",
                                  fix=f"leave it out of the grid (-p {key} '[]'), or {err.fix}",
                                  key=key, family=self.name, knobs=list(self.knobs)) from None

    def flag_token(self, key: str, new) -> tuple[str, bool] | None:
        """A change's word in a variant's name and whether it says the value exactly;
        None: the generic word (:mod:`ddlab.config.variants`)."""
        return None

    def embedded(self, config):
        """``config`` as the embedded target runs it in this family's dialect: ``python
        -m ddlab.target`` with the host's interpreter, its model and draft model the
        target's built-in checkpoints (:data:`EMBEDDED_MODELS`), the other flags as they
        are (validated again, as every config is made)."""
        flags = dict(config.flags)
        for key, model in zip((self.model_flag, self.draft_flag), EMBEDDED_MODELS):
            name, _, inner = key.partition(".")
            if inner and isinstance(flags.get(name), Mapping) and inner in flags[name]:
                flags[name] = {**flags[name], inner: model}
            elif not inner and (name in flags or key == self.model_flag):
                flags[name] = model
        return dataclasses.replace(config, python=None, module=TARGET_MODULE, flags=flags)

    def flag_changes(self, before: Mapping, after: Mapping) -> list[tuple[str, object]]:
        """The overrides ``(key, value)`` that turn flags ``before`` into ``after``, one per
        key, each key as an override names it (a knob where one sets the flag; value None:
        removed): what a bisect tries one by one."""
        raise NotImplementedError

    def point_words(self, key: str, value) -> str | None:
        """An override in the family's words for a search's answer and trials (vLLM:
        ``graphs off (--enforce-eager)``); None: the generic words."""
        return None

    def search_flag(self, name: str):
        """The :class:`ddlab.config.flags.Flag` an envelope searches for flag ``name`` (its
        kind, bounds, powers of two), None when the family's table does not know it."""
        return self.registry.get(name)

    def flat_flags(self, flags: Mapping) -> dict:
        """The flags as changes see them (vLLM: a JSON flag's keys one by one)."""
        return dict(flags)

    @property
    def version_probe(self) -> str:
        return version_probe(self.package, self.version_named_in)

    def baseline_words(self) -> str:
        """How a user removes the speculative flags, as ``--set`` overrides (a verdict's
        advice for a variant that must run without speculation)."""
        return " ".join(f"--set {key}=null" for key in self.baseline)

    def knob_for(self, key: str) -> Knob | None:
        """The knob ``key`` names, in snake or kebab spelling."""
        return self.knobs.get(key.replace("-", "_")) if isinstance(key, str) else None

    def knob_words(self) -> str:
        return ", ".join(self.knobs)

    def __repr__(self) -> str:
        return f"<family {self.name}>"


# One command on the host, its answer the last line of stdout. The installed
# distribution's metadata first (no import of the server). Without metadata (a source
# checkout on PYTHONPATH, as a fork may run), the package is located with
# find_spec, which imports nothing, and a literal ``__version__ = '...'`` is read
# from its ``_version.py`` (written by the build: SGLang 0.5.10+, vllm/_version.py:21
# (0.34.0), where it reads ``__version__ = version = '0.34.0'``) or ``version.py``
# (SGLang 0.4.x). Only when neither has one is the package imported, stdout kept
# clean: on SGLang 0.5.23 that pulls transformers, torch, numpy, IPython, aiohttp
# (seconds). A development placeholder (0.0.0.dev0, vLLM's "dev") is no version.
_VERSION_PROBE = """\
import importlib.metadata as m, sys
PACKAGE = '@PACKAGE@'
try:
    version = m.version(PACKAGE)
except m.PackageNotFoundError:
    version = None
if version:
    print(version)
    sys.exit(0)
import ast, contextlib, importlib, importlib.util, os
spec = importlib.util.find_spec(PACKAGE)
if spec is None:
    sys.exit(f"ModuleNotFoundError: No module named '{PACKAGE}'")
def literal(path):
    try:
        tree = ast.parse(open(path, encoding='utf-8').read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and any(getattr(t, 'id', None) == '__version__' for t in node.targets)):
            return node.value.value
version = next((v for d in spec.submodule_search_locations or ()
                for v in (literal(os.path.join(d, f)) for f in ('_version.py', 'version.py'))
                if v), None)
if version is None:
    with contextlib.redirect_stdout(sys.stderr):
        module = importlib.import_module(PACKAGE)
    version = str(getattr(module, '__version__', '') or '')
where = list(spec.submodule_search_locations or ())[:1] or [spec.origin]
if not version or version.startswith('0.0.0') or version == 'dev':
    sys.exit(f"{PACKAGE} at {where[0]} has no version ({version or 'none'}): no metadata, "
             "no _version.py; name it in @NAME_IT@")
print(version)
"""


def version_probe(package: str, name_it: str) -> str:
    """The script that prints ``package``'s version on a host (see ``_VERSION_PROBE``);
    ``name_it``: where a user names the version when the host cannot say."""
    return _VERSION_PROBE.replace("@PACKAGE@", package).replace("@NAME_IT@", name_it)
