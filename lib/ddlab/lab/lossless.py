"""The lossless check: a speculative variant's greedy tokens against the model's own.

Speculative decoding is lossless: at temperature 0 a DDTree or DFlash variant
must produce exactly the tokens of the same model without speculation. A
variant that serves other tokens is wrong, however fast; SGLang 0.5.23 made
the field's replay bug do exactly that (``fill_from`` skips a None field and
the graph replays stale buffers, no crash). So after ready, :func:`collect`
sends a fixed prompt set (:data:`PROMPTS`, or the caller's) one at a time,
greedily, and :func:`compare` holds the tokens (``output_ids``; the text when a
server sends no ids) against a :class:`Reference`.

A reference is the same model without speculation: the no-speculation cell of
a sweep, or any watched variant that runs none (a base with its speculative
flags removed: ``--set speculative_algorithm=null`` and the other ``speculative_*`` keys).
It is kept in the store (``outputs/references/``) by model + prompts + max
tokens, so it is measured once and reused. A family without its own generate (vLLM) is
asked by ``/v1/completions`` at temperature 0 (:mod:`ddlab.lab.family_api`): each prompt
alone, then all of them sent at once, one request each (the embedded target takes one
prompt per completions request), and the text is compared (no ids come back). Where exactness cannot hold
(non-deterministic kernels), ``tolerance`` is the token match rate that still
passes; :attr:`LosslessCheck.compared` says what was compared either way.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from ddlab.config.families import DEFAULT_FAMILY, Family, family_named
from ddlab.core.errors import ConfigError
from ddlab.core.paths import outputs_dir
from ddlab.core.run_folders import write_json
from ddlab.lab import http_client
from ddlab.lab.family_api import completion_body, completion_text, speculative_flags, uses_generate

__all__ = ["PROMPTS", "MAX_NEW_TOKENS", "TOLERANCE", "Output", "Reference", "LosslessCheck", "collect",
           "compare", "reference_key", "load_reference", "save_reference", "check_tolerance",
           "check_prompts",
           "model_identity", "speculative"]

# Short prompts of different kinds (code, prose, a list, a continuation), so a
# wrong verify step shows within a few dozen tokens.
PROMPTS = ("def fibonacci(n):\n    ",
           "The three primary colours are",
           "import numpy as np\nimport pandas as pd\n\n",
           "Once upon a time, in a small village,")
MAX_NEW_TOKENS = 32
TOLERANCE = 1.0  # the token match rate that passes, by default: every token equal


@dataclass
class Output:
    """One greedy generation: its tokens (ids when the server sends them), text and
    the accept length the server reported for it (None without speculation)."""

    ids: list
    text: str
    accept_length: float | None = None


@dataclass
class Reference:
    """The model's own greedy outputs for a prompt set (each prompt alone, then all in
    one batch: :func:`collect`), and where they came from."""

    model: str
    prompts: list[str]
    max_new_tokens: int
    outputs: list[Output]
    source: str                   # the variant (and host) that produced it
    recorded_at: str = ""

    @property
    def key(self) -> str:
        return reference_key(self.model, self.prompts, self.max_new_tokens)

    @classmethod
    def from_dict(cls, data: dict) -> "Reference":
        outputs = [Output(**o) for o in data["outputs"]]
        return cls(model=data["model"], prompts=list(data["prompts"]),
                   max_new_tokens=int(data["max_new_tokens"]), outputs=outputs,
                   source=data.get("source", ""), recorded_at=data.get("recorded_at", ""))


@dataclass
class LosslessCheck:
    """A variant's outputs held against a reference. ``ok`` when the token match
    rate is at least ``tolerance`` (1.0: every token equal)."""

    ok: bool
    match_rate: float
    tolerance: float
    compared: str                 # what was compared, in one line
    reference_source: str
    first_diff: dict = field(default_factory=dict)  # prompt, position, expected, actual
    accept_length: float | None = None
    reference_accept_length: float | None = None

    @property
    def summary(self) -> str:
        """``prompt 2 diverges at token 5: expected 1234, got 987`` or ``4/4 prompts equal``."""
        if not self.first_diff:
            return f"tokens equal to the reference ({self.compared})"
        d = self.first_diff
        accept = ""
        if self.accept_length is not None:
            accept = f"; accept length {self.accept_length:.2f}"
            if self.reference_accept_length is not None:
                accept += f" vs {self.reference_accept_length:.2f} in the reference"
        batch = f", in a batch of {d['batch']}" if d.get("batch", 1) > 1 else ""
        verdict = "passes" if self.ok else "fails"
        return (f"prompt {d['prompt_index']} ({d['prompt']!r}{batch}) diverges at token "
                f"{d['position']}: expected {d['expected']!r}, got {d['actual']!r}; "
                f"match rate {self.match_rate:.3f} ({verdict} tolerance {self.tolerance:g}; "
                f"{self.compared}){accept}")

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.summary}


MAX_PROMPTS = 32
MAX_PROMPT_CHARS = 4000


def check_prompts(prompts) -> tuple[str, ...]:
    """The lossless check's prompts as a tuple: the caller's (1 to 32 non-empty strings of
    at most 4000 characters), or the shipped :data:`PROMPTS` for None or an empty list.
    A ConfigError that names the value and what to give otherwise. Each prompt set has its
    own reference (the reference key covers the prompts)."""
    if prompts is None or (isinstance(prompts, (list, tuple)) and not prompts):
        return PROMPTS
    shown = repr(prompts)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    ok = (isinstance(prompts, (list, tuple)) and len(prompts) <= MAX_PROMPTS
          and all(isinstance(p, str) and p.strip() and len(p) <= MAX_PROMPT_CHARS
                  for p in prompts))
    if not ok:
        raise ConfigError(f"lossless_prompts={shown}: must be a list of 1 to {MAX_PROMPTS} "
                          f"non-empty prompts of at most {MAX_PROMPT_CHARS} characters",
                          fix='give a list, e.g. ["def add(a, b):", "The capital of France is"]; '
                              "an empty list keeps the shipped prompts",
                          key="lossless_prompts", value=shown)
    return tuple(prompts)


def check_tolerance(tolerance) -> float:
    """``tolerance`` as a float in (0, 1], or a ConfigError that says what to give."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) \
            or not 0 < tolerance <= 1:
        raise ConfigError(f"lossless_tolerance={tolerance!r}: must be a token match rate in "
                          "(0, 1]", fix="1.0 demands every token equal (greedy decoding is "
                                        "exact); 0.99 allows 1 token in 100",
                          key="lossless_tolerance", value=tolerance)
    return float(tolerance)


def model_identity(info: dict, fallback: str | None = None) -> str:
    """What makes greedy tokens the same: the weights, their dtype and quantization (from
    ``/server_info``), else the served model's name."""
    model = info.get("model_path") or fallback or "unknown-model"
    extra = [f"{k}={info[k]}" for k in ("dtype", "quantization", "kv_cache_dtype")
             if info.get(k) not in (None, "", "auto")]
    return " ".join([str(model), *extra])


def speculative(flags: dict, info: dict | None = None, family: Family | None = None) -> bool:
    """Whether the server decodes speculatively: its flags (by ``family``'s algorithm
    key; None: SGLang), else its ``/server_info``."""
    if family is not None and family.name != DEFAULT_FAMILY:
        return speculative_flags(flags, family)
    algorithm = flags.get("speculative-algorithm")
    if algorithm is None and info:
        algorithm = info.get("speculative_algorithm")
    return bool(algorithm) and str(algorithm).upper() != "NONE"


def reference_key(model: str, prompts, max_new_tokens: int) -> str:
    """The store key of a reference: the model, the prompts and the length."""
    text = json.dumps([model, list(prompts), int(max_new_tokens), "alone, then one batch"])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _folder(store: Path | None) -> Path:
    return Path(store) if store else outputs_dir() / "references"


def load_reference(model: str, prompts=PROMPTS, max_new_tokens: int = MAX_NEW_TOKENS, *,
                   store: Path | None = None) -> Reference | None:
    """The stored reference for this model, prompts and length (None: none yet)."""
    path = _folder(store) / f"{reference_key(model, prompts, max_new_tokens)}.json"
    try:
        return Reference.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):  # a broken file is no reference
        return None


def save_reference(reference: Reference, *, store: Path | None = None) -> Path:
    folder = _folder(store)
    folder.mkdir(parents=True, exist_ok=True)
    reference.recorded_at = reference.recorded_at or time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return write_json(folder / f"{reference.key}.json", asdict(reference))


def collect(base_url: str, *, prompts=PROMPTS, max_new_tokens: int = MAX_NEW_TOKENS,
            headers=None, timeout_s: float = 60.0, family: Family | str | None = None,
            model: str | None = None) -> list[Output]:
    """Each prompt alone (batch 1), then all of them in one batch request (a stale static
    buffer shows when the batch differs from the last one), temperature 0; so
    ``2 * len(prompts)`` outputs. A failed request raises httpx's error or a ValueError
    naming the status (a check that could not run is no pass).

    The batch is one ``/generate`` with the prompts as a list, which the server takes in
    at once (SGLang 0.5.23 tokenizes a batch's prompts and dispatches them to the
    scheduler one after another without waiting for any answer,
    sglang/srt/managers/tokenizer_manager.py:2098-2113; the target submits them before it
    waits), not one request per prompt sent at the same moment: on a loaded host those
    arrived one after another, each decoded alone, and a variant that is wrong only in
    batches passed (seen: the 0.5.23 skip-mode fault called lossless, twice in one run
    of the suite beside another). ``family``: the server's (None: SGLang); one without
    its own generate is asked by ``/v1/completions`` (``model``: the served name)."""
    family = family if isinstance(family, Family) else family_named(family)
    if not uses_generate(family):
        return _collect_completions(base_url, prompts, max_new_tokens, headers=headers,
                                    timeout_s=timeout_s, model=model)
    with http_client.client(timeout=timeout_s, headers=headers) as client:
        alone = [_output(_generate(client, base_url, p, max_new_tokens)) for p in prompts]
        together = _generate(client, base_url, list(prompts), max_new_tokens)
    if not (isinstance(together, list) and len(together) == len(prompts)):
        raise ValueError(f"a batch of {len(prompts)} prompts: the server answered "
                         f"{type(together).__name__} {str(together)[:200]}")
    return alone + [_output(item) for item in together]


def _collect_completions(base_url: str, prompts, max_new_tokens: int, *, headers, timeout_s,
                         model) -> list[Output]:
    """Each prompt alone, then all at once (a thread each), by ``/v1/completions``."""
    def one(client, prompt):
        resp = client.post(f"{base_url}/v1/completions",
                           json=completion_body(prompt, max_new_tokens, model=model))
        if resp.status_code != 200:
            raise ValueError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        return Output(ids=[], text=completion_text(resp.json())[0])

    with http_client.client(timeout=timeout_s, headers=headers) as client:
        alone = [one(client, p) for p in prompts]
        with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
            together = list(pool.map(lambda p: one(client, p), prompts))
    return alone + together


def _generate(client: httpx.Client, base_url: str, prompt, max_new_tokens: int):
    body = {"text": prompt, "sampling_params": {"max_new_tokens": max_new_tokens,
                                                "temperature": 0}}
    resp = client.post(f"{base_url}/generate", json=body)
    if resp.status_code != 200:
        raise ValueError(f"HTTP {resp.status_code}: {resp.text[:200]}")
    return resp.json()


def _output(data) -> Output:
    if not isinstance(data, dict):
        raise ValueError(f"the server answered {type(data).__name__}, not one result")
    meta = data.get("meta_info") or {}
    ids = data.get("output_ids")  # SGLang 0.5.23 tokenizer_manager.py:2650-2654
    return Output(ids=list(ids) if isinstance(ids, list) else [], text=str(data.get("text", "")),
                  accept_length=meta.get("spec_accept_length"))


def compare(reference: Reference, outputs: list[Output], *, tolerance: float = 1.0) -> LosslessCheck:
    """Token by token, prompt by prompt; the first difference is named."""
    matched = total = 0
    first: dict = {}
    by_ids = all(o.ids for o in reference.outputs) and all(o.ids for o in outputs)
    for index, (want, got) in enumerate(zip(reference.outputs, outputs)):
        expected = want.ids if by_ids else list(want.text)
        actual = got.ids if by_ids else list(got.text)
        length = max(len(expected), len(actual))
        same = sum(1 for a, b in zip(expected, actual) if a == b)
        matched, total = matched + same, total + length
        if not first and expected != actual:
            position = next((i for i, (a, b) in enumerate(zip(expected, actual)) if a != b),
                            min(len(expected), len(actual)))
            n = len(reference.prompts)
            first = {"prompt_index": index % n, "prompt": reference.prompts[index % n][:40],
                     "batch": 1 if index < n else n,
                     "position": position,
                     "expected": expected[position] if position < len(expected) else "<end>",
                     "actual": actual[position] if position < len(actual) else "<end>",
                     "expected_text": want.text[:80], "actual_text": got.text[:80]}
    rate = matched / total if total else 1.0
    accepts = [o.accept_length for o in outputs if o.accept_length is not None]
    ref_accepts = [o.accept_length for o in reference.outputs if o.accept_length is not None]
    unit = "tokens" if by_ids else "characters (no output_ids)"
    compared = (f"{len(reference.prompts)} prompts alone and in one batch x "
                f"{reference.max_new_tokens} greedy tokens, {total} {unit}, against reference "
                f"{reference.key} of {reference.model}")
    return LosslessCheck(ok=rate >= tolerance and (not first or tolerance < 1.0),
                         match_rate=round(rate, 4), tolerance=tolerance, compared=compared,
                         reference_source=reference.source, first_diff=first,
                         accept_length=round(sum(accepts) / len(accepts), 3) if accepts else None,
                         reference_accept_length=(round(sum(ref_accepts) / len(ref_accepts), 3)
                                                  if ref_accepts else None))
