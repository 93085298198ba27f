"""The ddlab page: every ``report.html``, however the run was started.

``ddlab run`` (any notebook, :func:`ddlab.report.html.render_html`), a sweep run
by plain papermill or in JupyterLab (:mod:`ddlab.report.sweep_page`) and
``ddlab run plot`` all write this one page, so a colleague reads them the same way:

- ``<title>``: what ran (``sweep local b4.16.32 x cap1.4 x graphs — ddlab``);
- ``ddlab-verdict``, the first thing in ``<body>``: one word and the headline (one
  line), whose colour always agrees with the word (:func:`banner_word`: OK green;
  WARNINGS, INTERRUPTED, TIMEOUT amber; CRASHES, CRASHED, WRONG OUTPUT, FAILED red),
  then the details (best cell, ties, each warning), the crashes, the next step and
  the run's facts;
- ``ddlab-provenance``: where and with what it ran;
- the body, in reading order: each heading above its own figures, the cells table
  (``ddlab-table``, scrolling inside its own box when wider than the page),
  the figures (``ddlab-figures``: their ``<img>``, embedded PNG), text, errors,
  progress folded in a ``<details>``.

The page stands alone: inline CSS, no script, nothing fetched from the network, no
widget state. Absolute paths in its text are written relative to the run folder
(:func:`relative_paths`), so the folder can be moved or shared.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Callable

from ddlab.core.redact import redact_text
from ddlab.core.run_folders import write_text

__all__ = ["Page", "Block", "render_page", "page_title", "relative_paths", "markdown_blocks",
           "banner_word", "banner_title", "banner_html", "provenance_html", "figures_html",
           "IDS", "STATUS_COLOURS", "RED", "AMBER", "GREEN"]

IDS = {"verdict": "ddlab-verdict", "provenance": "ddlab-provenance", "table": "ddlab-table",
       "figures": "ddlab-figures"}

RED, AMBER, GREEN, GREY = "#cf222e", "#9a6700", "#1a7f37", "#57606a"
STATUS_COLOURS = {"ok": GREEN, "done": GREEN, "ready": GREEN, "failed": RED, "crashed": RED,
                  "wrong_output": RED, "error": RED, "interrupted": AMBER, "timeout": AMBER,
                  "connection_lost": AMBER, "scheduler_ended": AMBER, "preempted": AMBER}
RUN_STATUSES = ("ok", "failed", "interrupted", "running")  # a run's own, not a verdict's

_STYLE = (
    "body{font-family:sans-serif;margin:0 0 2em 0;max-width:100%;overflow-x:hidden}"
    " h2,h3{margin:1em 1em 0.3em 1em} p,pre,ul,details{margin-left:1em;margin-right:1em}"
    " #ddlab-verdict h2{font-size:130%}"
    " .ddlab-figures img{display:block;max-width:calc(100% - 2em);margin:0.5em 1em}"
    " .ddlab-scroll{margin:0 1em;overflow-x:auto;max-width:calc(100vw - 2em)}"
    " table.dataframe{border-collapse:collapse;font-size:85%}"
    " table.dataframe td,table.dataframe th{border:1px solid #ddd;padding:2px 6px;"
    "white-space:nowrap;text-align:right} table.dataframe td.ddlab-long{white-space:normal;"
    "min-width:16em;max-width:32em;text-align:left}"
    " pre{white-space:pre-wrap;font-size:85%} pre.ddlab-error{color:#cf222e}"
    " code{background:#f0f0f0;padding:0 2px}")


@dataclass
class Block:
    """One piece of a page's body: ``heading`` (``level``), ``markdown``, ``table`` (its
    HTML), ``figure`` (a PNG, base64), ``figures-note`` (why there are none), ``text``,
    ``html``, ``error``, ``progress`` (folded)."""

    kind: str
    text: str
    level: int = 2


@dataclass
class Page:
    """A report: its title (what ran), the banner and provenance, then the body."""

    title: str
    banner: dict
    provenance: dict = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    run_dir: Path | None = None  # absolute paths in the text become relative to it


def render_page(page: Page, path: Path) -> Path:
    """Write ``page`` to ``path`` (secrets masked, as every file ddlab writes)."""
    rel = (lambda text: relative_paths(text, page.run_dir))
    body = (banner_html(page.banner, rel) + provenance_html(page.provenance, rel)
            + _body(page.blocks, rel))
    title = escape(redact_text(f"{page.title} — ddlab" if page.title else "ddlab"))
    return write_text(path, "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                            f"<title>{title}</title><style>{_STYLE}</style></head>"
                            f"<body>{body}</body></html>")


def page_title(kind: str, verdict: dict, record: dict | None = None) -> str:
    """What ran, in a few words: ``sweep local b4.16.32 x cap1.4 x graphs``, ``poll
    local-b8 on local``, ``plot local b4 x graphs``, ``envelope <search id>``; from the
    verdict when it says, else the run's host."""
    record = record or {}
    what = verdict.get("what")
    if not what and verdict.get("variant"):
        what = f"{verdict['variant']} on {verdict.get('host') or record.get('host') or '?'}"
    what = what or _after_stamp(verdict.get("search_id")) or record.get("host") or ""
    return " ".join(w for w in (kind, what) if w)


def _after_stamp(run_id) -> str:
    """``local-envelope-...`` from ``20261201T014500Z-local-envelope-...``."""
    return re.sub(r"^\d{8}T\d{6}Z-", "", str(run_id or ""))


# --- paths ----------------------------------------------------------------------------

_PATH = re.compile(r"(?<![\w.~:/\\<-])/(?:[^\s'\"<>|;,()\[\]{}]+)")


def relative_paths(text: str, run_dir: Path | None, roots=None) -> str:
    """``text`` with each absolute path of this machine written relative to ``run_dir``
    (``/tmp/x/out.ipynb`` beside ``/tmp/x/outputs/<run>``: ``../../out.ipynb``): a path
    that shares its top folder with ``run_dir`` or lies under one of ``roots`` (default:
    the project, the ddlab checkout and the home folder). Other text (URLs, ``tok/s``,
    ``1/2``, a host's ``/opt/sglang``) is left as it was."""
    if not run_dir or not text:
        return text
    folder = os.path.abspath(run_dir)
    top = folder.split("/")[1]
    roots = [str(r).rstrip("/") + "/" for r in (_machine_roots() if roots is None else roots)]

    def relative(match: re.Match) -> str:
        path = match.group(0).rstrip(".:")
        if path.split("/")[1] != top and not any(path.startswith(r) for r in roots):
            return match.group(0)
        return os.path.relpath(path, folder) + match.group(0)[len(path):]

    return _PATH.sub(relative, text)


def _machine_roots() -> list[Path]:
    from ddlab.core.paths import project_root

    roots = [Path(__file__).resolve().parents[3], Path.home()]  # the checkout: lib/ddlab/report
    try:
        roots.insert(0, project_root())
    except Exception:  # noqa: BLE001 - outside a project: the others still apply
        pass
    return [r for r in roots if str(r) != "/"]


# --- the banner -----------------------------------------------------------------------

def banner_word(status: str, verdict: dict | None = None) -> tuple[str, str]:
    """The banner's word and its colour, which always agree. A run that went through
    (``ok``): WRONG OUTPUT or CRASHES (red) when its cells did, WARNINGS (amber) when its
    verdict warns, else OK (green); PREEMPTED (amber) when another ddlab run took its host;
    otherwise the status itself (FAILED red, INTERRUPTED
    amber, a verdict's state such as CRASHED or TIMEOUT in its colour)."""
    verdict = verdict or {}
    if status == "ok" and verdict.get("state") == "preempted":  # another run took the host
        return "PREEMPTED", STATUS_COLOURS["preempted"]
    if status == "ok":
        found = verdict.get("summary") or {}
        if found.get("wrong_output"):
            return "WRONG OUTPUT", RED
        if found.get("crashed"):
            return "CRASHES", RED
        if verdict.get("warnings"):
            return "WARNINGS", AMBER
        return "OK", GREEN
    return status.upper().replace("_", " "), STATUS_COLOURS.get(status, GREY)


def banner_title(word: str, headline: str) -> str:
    """``WORD: headline``; for a verdict's state, the headline alone when its first part
    says it already (``CRASHED: x on local: ...``, never ``CRASHED: CRASHED``)."""
    if word.lower() not in RUN_STATUSES and headline \
            and word in headline.partition(":")[0].upper():
        return headline
    return f"{word}: {headline}"


def banner_html(banner: dict, rel: Callable[[str], str] = str) -> str:
    """The ``ddlab-verdict`` block: ``banner`` holds ``status`` (the run's outcome),
    ``headline``, ``_verdict`` (the verdict's dict: its details, warnings, crashes),
    ``_extra`` (lines the verdict's own display said beyond the headline), then the facts
    shown in a table (``next step`` first)."""
    verdict = banner.get("_verdict") or {}
    word, colour = banner_word(banner.get("status", "?"), verdict)
    title = banner_title(word, rel(redact_text(str(banner.get("headline") or ""))))
    details = "".join(f"<li>{_text(line, rel)}</li>" for line in verdict.get("details") or [])
    extra = "\n".join(banner.get("_extra") or [])
    facts = {"next step": banner.get("next step"),
             **{k: v for k, v in banner.items() if k not in ("status", "headline", "next step")}}
    rows = "".join(f"<tr><th style='text-align:left;padding-right:1em;vertical-align:top'>"
                   f"{escape(str(k))}</th><td>{_text(str(v), rel)}</td></tr>"
                   for k, v in facts.items() if not k.startswith("_") and v not in (None, ""))
    return (f"<div id='{IDS['verdict']}' style='font-family:sans-serif;border-left:8px solid "
            f"{colour};margin:1em;padding:0.5em 1em;background:#f6f8fa'>"
            f"<h2 style='margin:0;color:{colour}'>{escape(title)}</h2>"
            + (f"<ul style='margin:0.3em 0;padding-left:1.2em'>{details}</ul>" if details else "")
            + (f"<pre style='margin:0.3em 0'>{_text(extra, rel)}</pre>" if extra else "")
            + _crashes(verdict.get("crashes") or [], rel, str(banner.get("next step") or ""))
            + f"<table style='font-size:90%'>{rows}</table></div>")


def _crashes(crashes: list[dict], rel, next_step: str = "") -> str:
    """The crashed cells, each with its kind, phase, cause and its own next step (unless
    it is the verdict's, shown below)."""
    if not crashes:
        return ""
    items = "".join(f"<li><b>{_text(str(c.get('name')), rel)}</b>: {_text(str(c.get('kind')), rel)}"
                    f" in {_text(str(c.get('phase')), rel)}: {_text(str(c.get('cause')), rel)}"
                    + (f"<br><i>next: {_text(str(c['suggestion']), rel)}</i>"
                       if c.get("suggestion") and not next_step.endswith(str(c["suggestion"]))
                       else "") + "</li>" for c in crashes)
    return (f"<details{' open' if len(crashes) <= 3 else ''}><summary>{len(crashes)} crashed "
            f"cell{'s' if len(crashes) != 1 else ''}</summary><ul>{items}</ul></details>")


def _text(text: str, rel) -> str:
    return escape(rel(redact_text(text)))


def provenance_html(provenance: dict, rel: Callable[[str], str] = str) -> str:
    """The ``ddlab-provenance`` table: one row per fact (:mod:`ddlab.report.provenance`)."""
    rows = "".join(f"<tr><th style='text-align:left;padding-right:1em;vertical-align:top'>"
                   f"{escape(str(k))}</th><td><code>{_text(str(v), rel)}</code></td></tr>"
                   for k, v in provenance.items() if v not in (None, ""))
    return (f"<div style='font-family:sans-serif;margin:0 1em 1em 1em'><b>Provenance</b>"
            f"<table id='{IDS['provenance']}' style='font-size:90%'>"
            f"{rows or '<tr><td>not recorded</td></tr>'}</table></div>")


def figures_html(pngs: list[bytes | str]) -> str:
    """A ``ddlab-figures`` block of its own: each PNG (bytes, or base64 text) embedded."""
    return (f"<div id='{IDS['figures']}' class='ddlab-figures'>"
            + "".join(_img(png, n) for n, png in enumerate(pngs, 1)) + "</div>")


def _img(png: bytes | str, n: int) -> str:
    import base64

    data = png if isinstance(png, str) else base64.b64encode(png).decode()
    return f"<img alt='figure {n}' src='data:image/png;base64,{data}'>"


# --- the body -------------------------------------------------------------------------

_FIGURES = ("figure", "figures-note")


def _body(blocks: list[Block], rel) -> str:
    """The blocks in order; the figures, with the heading above the first one and
    everything up to the last one, inside ``ddlab-figures``; the first table is
    ``ddlab-table``."""
    shown = [i for i, b in enumerate(blocks) if b.kind in _FIGURES]
    start, end = (shown[0], shown[-1]) if shown else (-1, -1)
    tables = [i for i, b in enumerate(blocks) if b.kind == "table"]
    while start > 0 and blocks[start - 1].kind in ("heading", "markdown") \
            and (not tables or start - 1 > tables[0]):
        start -= 1
    parts, figure = [], 0
    for i, block in enumerate(blocks):
        if i == start:
            parts.append(f"<div id='{IDS['figures']}' class='ddlab-figures'>")
        figure += block.kind == "figure"
        parts.append(_block(block, rel, first_table=bool(tables) and i == tables[0], n=figure))
        if i == end:
            parts.append("</div>")
    return "".join(parts)


def _block(block: Block, rel, *, first_table: bool, n: int) -> str:
    kind, text = block.kind, block.text
    if kind == "heading":
        return f"<h{block.level}>{_inline(_text(text, rel))}</h{block.level}>"
    if kind == "markdown":
        return f"<p>{_inline(_text(text, rel))}</p>"
    if kind == "table":
        mark = f" id='{IDS['table']}'" if first_table else ""
        return f"<section{mark} class='ddlab-scroll'>{rel(_no_missing(text))}</section>"
    if kind == "figure":
        return _img(text, n)
    if kind == "figures-note":
        return f"<p>{_text(text, rel)}</p>"
    if kind == "error":
        return f"<pre class='ddlab-error'>{_text(text, rel)}</pre>"
    if kind == "progress":
        count = len(text.splitlines())
        return (f"<details class='ddlab-progress'><summary>progress ({count} line"
                f"{'s' if count != 1 else ''})</summary><pre>{_text(text, rel)}</pre></details>")
    if kind == "html":
        return rel(_without_scripts(text))
    return f"<pre>{_text(text, rel)}</pre>"


_MISSING_CELL = re.compile(r"<td([^>]*)>\s*(?:NaN|None|nan|&lt;NA&gt;|<NA>|NaT)\s*</td>")
_LONG_CELL = re.compile(r"<td>([^<]{60,})</td>")


def _no_missing(html: str) -> str:
    """A pandas table's HTML with no NaN, None or <NA> shown (blank cells), and long
    text cells allowed to wrap."""
    return _LONG_CELL.sub(r"<td class='ddlab-long'>\1</td>", _MISSING_CELL.sub(r"<td\1></td>", html))


def _without_scripts(html: str) -> str:
    return re.sub(r"<script\b.*?</script>|<link\b[^>]*>", "", html, flags=re.S | re.I)


# --- markdown, the little that notebooks use ------------------------------------------

def markdown_blocks(source: str) -> list[Block]:
    """A markdown cell as blocks: ``#`` lines are headings (``#`` and ``##`` an ``h2``,
    deeper an ``h3``), other paragraphs text with inline ``code`` and **bold**."""
    blocks = []
    for paragraph in re.split(r"\n\s*\n", source.strip()):
        lines = paragraph.splitlines()
        while lines and lines[0].lstrip().startswith("#"):
            hashes, _, words = lines.pop(0).strip().partition(" ")
            blocks.append(Block("heading", words.strip(), level=2 if len(hashes) <= 2 else 3))
        if lines:
            blocks.append(Block("markdown", "\n".join(lines)))
    return blocks


def _inline(html: str) -> str:
    """Inline markdown on escaped text: ``code``, **bold**, line breaks kept."""
    html = re.sub(r"`([^`]+)`", r"<code>\1</code>", html)
    html = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", html)
    return html.replace("\n", " ")
