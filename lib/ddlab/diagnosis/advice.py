"""Advice written once, rendered for the user's SGLang release and speculative algorithm.

Contract: :func:`advise` turns a signature's sentences (and its ``detail``
hook's) into the suggestion a :class:`~ddlab.diagnosis.diagnosis.Diagnosis`
shows. Sentences are written with the newest release's flag names, each
proposed flag as an argv fragment in backticks (`` `--mem-fraction-static 0.8` ``,
`` `--disable-cuda-graph` ``). For a given ``version`` every option is
respelled the way that release spells it (:func:`ddlab.config.sglang.spelled`:
``--cuda-graph-max-bs-decode`` is ``--cuda-graph-max-bs`` before 0.5.14) and a
sentence that needs an option the release lacks is dropped. Three idioms stand
for what changed shape across releases: ``{graphs_off}`` (decode CUDA graphs
off: ``--disable-cuda-graph``, from 0.5.14 ``--cuda-graph-backend-decode=disabled``),
``{prefill_graphs_off}`` (piecewise / prefill graphs off; none before 0.5.10)
and ``{all_graphs_off}``; where a release still parses the deprecated
``--disable-cuda-graph`` the advice names it too (it turns every graph off).
With no version the advice is version-neutral: the newest spelling, and the
older one in brackets where they differ.

:func:`family` maps a speculative algorithm to the family whose sentences
apply (``eagle`` for EAGLE, EAGLE3, NEXTN/MTP, STANDALONE; ``dflash``;
``ddtree``; ``ngram``; ``none``), so EAGLE users never get DDTree advice.
"""

from __future__ import annotations

import re
from functools import cache

from ddlab.config.sglang import flag_table, releases, spelled
from ddlab.crashes.signature import Found, Signature

__all__ = ["FAMILIES", "family", "render", "advise"]

FAMILIES = {
    "EAGLE": "eagle", "EAGLE3": "eagle", "NEXTN": "eagle", "MTP": "eagle", "FROZEN_KV_MTP": "eagle",
    "STANDALONE": "eagle", "DFLASH": "dflash", "DDTREE": "ddtree", "NGRAM": "ngram", "NONE": "none",
}
_FRAGMENT_RE = re.compile(r"`(--[^`]*)`")
_OPTION_RE = re.compile(r"--[a-z][a-z0-9-]*")


def family(algorithm: str | None) -> str | None:
    """``eagle`` | ``dflash`` | ``ddtree`` | ``ngram`` | ``none`` | None (not known)."""
    if not algorithm:
        return None
    return FAMILIES.get(str(algorithm).strip().upper())


@cache
def _table(version: str, overlays: tuple[str, ...] = ()):
    return flag_table(version, overlays=overlays)


def _has(option: str, version: str, overlays: tuple[str, ...] = ()) -> bool:
    return _table(version, overlays).action(option) is not None


def _accepted(fragment: str, version: str, overlays: tuple[str, ...]) -> bool:
    """The release's parser takes the fragment (a lone option: the option exists)."""
    words = fragment.split()
    if len(words) == 1 and "=" not in words[0]:
        return _has(words[0], version, overlays)
    return not any(f.level == "error" for f in _table(version, overlays).check(words))


@cache
def _backend_off(which: str, version: str) -> str | None:
    option = f"--cuda-graph-backend-{which}"
    action = flag_table(version).action(option)
    return f"{option}=disabled" if action and "disabled" in (action.get("choices") or ()) else None


def _graphs_off(version: str) -> str | None:
    return _backend_off("decode", version) or "--disable-cuda-graph"


def _prefill_graphs_off(version: str) -> str | None:
    if off := _backend_off("prefill", version):
        return off
    return "--disable-piecewise-cuda-graph" if _has("--disable-piecewise-cuda-graph", version) else None


def _all_graphs_off(version: str) -> str | None:
    both = [_backend_off("decode", version), _backend_off("prefill", version)]
    return " ".join(both) if all(both) else "--disable-cuda-graph"


_IDIOMS = {"graphs_off": _graphs_off, "prefill_graphs_off": _prefill_graphs_off,
           "all_graphs_off": _all_graphs_off}


def _idiom(name: str, version: str | None) -> str | None:
    make = _IDIOMS[name]
    if version:
        text = make(version)
        if text and name == "graphs_off" and text != "--disable-cuda-graph" \
                and _has("--disable-cuda-graph", version):  # still parsed, deprecated since 0.5.14
            return f"`{text}` (or the deprecated `--disable-cuda-graph`, which turns off every graph)"
        return f"`{text}`" if text else None
    spellings = {r: make(r) for r in releases() if make(r)}
    first, newest = next(iter(spellings)), make(releases()[-1])
    if spellings[first] == newest:
        return f"`{newest}`" + ("" if first == releases()[0] else f" (SGLang {first}+)")
    changed = next(r for r in spellings if spellings[r] == newest)
    return f"`{newest}` (before {changed}: `{spellings[first]}`)"


def _respell_for(fragment: str, version: str, overlays: tuple[str, ...] = ()) -> str | None:
    """The fragment as ``version`` spells it, or None when its parser would refuse it."""
    def one(match: re.Match) -> str:
        return match[0] if _has(match[0], version, overlays) else spelled(match[0], version)
    respelled = _OPTION_RE.sub(one, fragment)
    return respelled if _accepted(respelled, version, overlays) else None


def _neutral(fragment: str) -> str:
    """The fragment as the newest release spells it, and older spellings in brackets."""
    spellings = {r: _respell_for(fragment, r) for r in releases()}
    newest = spellings[releases()[-1]] or fragment
    known = [r for r in releases() if spellings[r]]
    text = f"`{newest}`"
    if known and known[0] != releases()[0]:
        text += f" (SGLang {known[0]}+)"
    older = [r for r in known if spellings[r] != newest]
    if older:
        changed = next(r for r in known if spellings[r] == newest)
        text += f" (before {changed}: `{spellings[older[0]]}`)"
    return text


def _sentence(text: str, version: str | None, overlays: tuple[str, ...]) -> str | None:
    """One sentence for ``version`` (None: neutral), or None when the release cannot do it."""
    fragments = {}
    for fragment in dict.fromkeys(_FRAGMENT_RE.findall(text)):
        if version is None:
            fragments[fragment] = _neutral(fragment)
            continue
        rendered = _respell_for(fragment, version, overlays)
        if rendered is None:
            return None
        fragments[fragment] = f"`{rendered}`"
    text = _FRAGMENT_RE.sub(lambda m: fragments.get(m[1], m[0]), text)
    for name in _IDIOMS:  # after the fragments: an idiom's text is already spelled
        token = "{" + name + "}"
        if token in text:
            idiom = _idiom(name, version)
            if idiom is None:
                return None
            text = text.replace(token, idiom)
    return text


def render(sentences, version: str | None, overlays: tuple[str, ...] = ()) -> str:
    """The sentences for ``version`` (None: version-neutral) and the fork ``overlays``
    (``("ddtree",)`` for DDTree), joined into one paragraph."""
    kept = [_sentence(text, version, tuple(overlays)) for text in sentences if text]
    return " ".join(text for text in kept if text)


def advise(signature: Signature, found: Found) -> str:
    """The suggestion for ``signature``'s crash: its sentences, its detail, for the
    release and algorithm family ``found`` carries."""
    fam = family(found.algorithm)
    sentences = list(signature.sentences(fam))
    extra = signature.detail(found) if signature.detail else None
    if extra:
        sentences.append(extra)
    return render(sentences, found.version, ("ddtree",) if fam == "ddtree" else ())
