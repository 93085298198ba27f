"""What a sweep varies, in words: its titles (:func:`describe_grid`), its id's words
(:func:`grid_words`), a cell's value as a word. Read by the plan
(:mod:`ddlab.sweeps.plan`, which re-exports these names), the results and the reports.
"""

from __future__ import annotations

from ddlab.core.errors import ConfigError
from ddlab.core.redact import looks_secret
from ddlab.core.run_folders import plain_text

__all__ = ["describe_grid", "grid_words", "grid_word_list"]


def _word(value) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return "none" if value is None else str(value)


def _as_list(key: str, values) -> list:
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if not values:
        raise ConfigError(f"{key}=[]: a grid dimension needs at least one value",
                          fix=f"e.g. -p {key} 16, or a list such as [4, 16, 32]", key=key)
    return values


def _flag_of(key: str, family=None) -> str:
    """The flag an override key names in ``family`` (SGLang's by default; ``algorithm`` and
    ``speculative_algorithm`` are one)."""
    from ddlab.config.families import SGLANG

    try:
        return "%s.%s" % (family or SGLANG).override_target(key)
    except ConfigError:  # a bad key is refused with its own message when the cell is made
        return key


# a built-in dimension: (its word in a description, its word in a sweep id)
_DIMENSION_WORDS = {"budget": ("budget", "b"), "topk_cap": ("cap", "cap"),
                    "num_speculative_tokens": ("tokens", "t"), "method": ("method", "m"),
                    "cuda_graph": ("graphs", "graphs")}


def describe_grid(grid: dict, extra=()) -> str:
    """``budget 4,16,32 × cap 1,4 × graphs on,off + 1 extra``: what a sweep varies
    (its titles and ``ddlab runs``); a secret-named dimension's values are masked."""
    parts = [f"{_DIMENSION_WORDS.get(k, (k,))[0]} "
             f"{'***' if looks_secret(k) else ','.join(_word(v) for v in _as_list(k, values))}"
             for k, values in _ordered(grid)]
    text = " × ".join(parts) or "no grid"
    return f"{text} + {len(extra)} extra" if extra else text


def grid_words(grid: dict, extra=()) -> str:
    """``b4.16.32-cap1.4-graphs-1extra``: the grid in a few folder-safe characters, for
    sweep ids (``graphs`` is on and off, ``graph`` / ``nograph`` one of them)."""
    return "-".join(grid_word_list(grid, extra))[:64].strip("-.") or "nogrid"


def grid_word_list(grid: dict, extra=()) -> list[str]:
    """:func:`grid_words` a word each: ``["b4.16.32", "cap1.4", "graphs", "1extra"]``
    (a report's title joins them with `` x ``)."""
    words = []
    for key, values in _ordered(grid):
        values = _as_list(key, values)
        if key == "cuda_graph":
            words.append("graphs" if len(set(values)) > 1 else "graph" if values[0] else "nograph")
            continue
        head = _DIMENSION_WORDS.get(key, (None, None))[1] or _short_of(key)
        shown = "masked" if looks_secret(key) else ".".join(_id_word(v) for v in values)
        words.append(plain_text(f"{head}{shown}")[:24].strip("-."))
    if extra:
        words.append(f"{len(extra)}extra")
    return words


def _ordered(grid: dict) -> list[tuple]:
    """Budget, cap, graphs first (the store keeps a grid's keys sorted), then the rest."""
    order = list(_DIMENSION_WORDS)
    return sorted(grid.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order
                  else len(order))


def _short_of(key: str) -> str:
    """A dimension's head in a sweep id: the flag's short name (``mem``), or its last word."""
    from ddlab.config.flags import FLAGS

    flag = FLAGS.get(_flag_of(key).partition(".")[2])
    return flag.short if flag is not None and flag.short else key.rpartition(".")[2][:12]


def _id_word(value) -> str:
    if isinstance(value, float):
        return repr(value).replace("-", "m").replace(".", "p")
    return plain_text(_word(value)).lower()[:12]
