"""Write docs/api.md, the API reference, from ``ddlab.__all__``: signatures and docstrings.

    python tools/api_reference.py            # print the reference
    python tools/api_reference.py --write    # write docs/api.md
    python tools/api_reference.py --check    # exit 1 when docs/api.md differs from what this writes

Every name a notebook or a script may use is in ``ddlab.__all__`` (a test keeps it equal
to docs/DESIGN.md's table); this page is their reference, written from the code so it
cannot drift: each job by verb family (the section's text is its module's docstring),
the figures, the errors (their tree is the errors module's docstring), the constants,
then what the jobs return (the classes their return annotations name: fields, methods).
tests/api/test_docs.py fails when the committed page differs from what this writes, and
this refuses a public name without a docstring or a return type it does not describe.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pprint
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

import ddlab  # noqa: E402

OUT = ROOT / "docs" / "api.md"

# Where each name of ddlab.__all__ is defined, in the order the page shows them.
SECTIONS = [
    ("ddlab.api.deploy_verbs", "One variant on one host"),
    ("ddlab.api.sweep_verbs", "Sweeps"),
    ("ddlab.api.search_verbs", "Searches"),
    ("ddlab.api.tool_verbs", "Logs, units, notebooks, the embedded server"),
    ("ddlab.report.plots", "Figures"),
    ("ddlab.report.workload_plots", "Figures of a workload sweep"),
    ("ddlab.core.errors", "Errors"),
]
# The constants' one line each (a constant has no docstring); the value is read from ddlab.
CONSTANTS = {
    "__version__": "ddlab's version, a string (`ddlab --version` prints it).",
    "RESTORE_CHOICES": "What `watch(restore=...)` and `ddlab watch --restore` take.",
    "DEMO_PARAMETERS": "The demo sweep's notebook parameters (`make demo`, `ddlab demo`).",
    "MAX_CELLS": "The grid size above which `sweep` refuses until `max_cells` is raised.",
}
# What the jobs return, in the order they are met above.
RESULTS = [
    "ddlab.lab.plans.DeployPlan", "ddlab.lab.plans.DryRun", "ddlab.lab.deploy.Deployed",
    "ddlab.lab.verdict.Verdict", "ddlab.report.verdicts.SweepReport",
    "ddlab.report.verdicts.SweepVerdict", "ddlab.report.runs.Runs",
    "ddlab.report.search_report.SearchReport", "ddlab.diagnosis.diagnosis.Diagnosis",
    "ddlab.report.notebooks.NotebookRun", "ddlab.report.notebooks.NotebookRuns",
    "ddlab.report.plots.Explorer",
]
# Names a return annotation may hold that are not ddlab's to describe.
FOREIGN = {"str", "int", "float", "bool", "dict", "list", "tuple", "None", "Path", "Figure", "pd",
           "DataFrame"}
WIDTH = 92


class RefError(Exception):
    """The code lacks what the reference needs (a docstring, a described result type)."""


def markdown(doc: str) -> str:
    """A docstring in Markdown: ``x`` and :role:`~a.b.x` as `x`, ``::`` blocks kept."""
    doc = re.sub(r":(?:func|class|mod|data|meth|attr|exc):`~?([^`]+)`",
                 lambda m: f"`{m.group(1).split('.')[-1] if '~' in m.group(0) else m.group(1)}`", doc)
    return doc.replace("``", "`")


def _doc(obj, name: str) -> str:
    doc = inspect.getdoc(obj) or ""
    if not doc or (inspect.isclass(obj) and dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}(")):
        raise RefError(f"{name}: no docstring; the reference is written from it")
    return markdown(doc)


class _Text:
    """An annotation shown as written (``str | None``), not quoted."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def signature(name: str, obj) -> str:
    """``name(params) -> ret``, one parameter per line when it does not fit ``WIDTH``."""
    sig = inspect.signature(obj)
    params, marks = [], []
    shown = sig.replace(parameters=[p.replace(annotation=_Text(p.annotation) if isinstance(p.annotation, str)
                                              else p.annotation) for p in sig.parameters.values()],
                        return_annotation=inspect.Signature.empty)
    previous = None
    for p in shown.parameters.values():
        if p.kind is p.KEYWORD_ONLY and previous not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            params.append("*")
        params.append(str(p))
        previous = p.kind
        marks.append(p.kind)
    ret = sig.return_annotation
    tail = "" if ret is inspect.Signature.empty else f" -> {str(ret).strip(chr(39))}"
    one = f"{name}({', '.join(params)}){tail}"
    if len(one) <= WIDTH:
        return one
    return f"{name}(\n" + "".join(f"    {p},\n" for p in params) + f"){tail}"


def _returns(obj) -> set[str]:
    ret = inspect.signature(obj).return_annotation
    if ret is inspect.Signature.empty or not isinstance(ret, str):
        return set()
    return set(re.findall(r"[A-Za-z_]\w*", ret)) - FOREIGN


def _section_of(name: str, obj) -> str:
    module = getattr(obj, "__module__", None) if callable(obj) else None
    if module in dict(SECTIONS):
        return module
    for section, _ in SECTIONS:
        if name in vars(importlib.import_module(section)) and not callable(obj):
            return section
    raise RefError(f"{name}: defined in {module}, which no section of the reference holds")


def _entry(name: str, obj) -> list[str]:
    if not callable(obj):
        lines = pprint.pformat(obj, width=WIDTH - len(name) - 3, sort_dicts=False).splitlines()
        value = ("\n" + " " * (len(name) + 3)).join(lines)
        return [f"### `{name}`", "", "```python", f"{name} = {value}", "```", "", CONSTANTS[name], ""]
    return [f"### `{name}`", "", "```python", signature(name, obj), "```", "", _doc(obj, f"ddlab.{name}"), ""]


def _result(path: str) -> list[str]:
    module, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    lines = [f"### `{name}`", "", f"`{path}`", "", _doc(cls, path), ""]
    if dataclasses.is_dataclass(cls):
        fields = [f"`{f.name}`" for f in dataclasses.fields(cls) if not f.name.startswith("_")]
        lines += ["Fields: " + ", ".join(fields) + ".", ""]
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, property):
            first = (inspect.getdoc(value) or "").split("\n\n")[0].replace("\n", " ")
            lines.append(f"- `{attr}` (property)" + (f": {markdown(first)}" if first else ""))
        elif isinstance(value, (staticmethod, classmethod)) or inspect.isfunction(value):
            func = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            first = (inspect.getdoc(func) or "").split("\n\n")[0].replace("\n", " ")
            sig = signature(attr, func).replace("(self, ", "(").replace("(self)", "()").replace("(cls, ", "(")
            sig = re.sub(r"\s+", " ", sig).replace("( ", "(").replace(",)", ")")
            lines.append(f"- `{sig}`" + (f": {markdown(first)}" if first else ""))
    return lines + [""]


def reference() -> str:
    """The whole page, as ``--write`` writes it."""
    by_section: dict[str, list[str]] = {section: [] for section, _ in SECTIONS}
    returned: set[str] = set()
    for name in ddlab.__all__:
        obj = getattr(ddlab, name)
        if not callable(obj) and name not in CONSTANTS:
            raise RefError(f"{name}: a constant without its line in CONSTANTS ({__file__})")
        if name != "__version__":
            by_section[_section_of(name, obj)].append(name)
        if inspect.isfunction(obj):
            returned |= _returns(obj)
    described = {path.rsplit(".", 1)[1] for path in RESULTS}
    if returned - described:
        raise RefError(f"return types the reference does not describe: {sorted(returned - described)}; "
                       f"add each to RESULTS in {__file__}")
    out = ["# API reference", "",
           "<!-- Written by `python tools/api_reference.py --write` from `ddlab.__all__`; do not edit: "
           "tests/api/test_docs.py fails when this page differs from what the tool writes. -->", "",
           markdown(inspect.getdoc(ddlab)), "",
           "Every name below is `ddlab.NAME` after `import ddlab`; notebooks import nothing deeper. "
           f"`ddlab.__version__` is {CONSTANTS['__version__'][0].lower()}{CONSTANTS['__version__'][1:]} "
           "How each verb and notebook calls them: [usage.md](usage.md); what the results hold: "
           "[results.md](results.md); the modules behind them: [DESIGN.md](DESIGN.md).", "",
           "## Contents", ""]
    for section, title in SECTIONS:
        names = ", ".join(f"`{n}`" for n in by_section[section])
        out.append(f"- [{title}](#{_anchor(title)}): {names}")
    out.append(f"- [What the jobs return](#{_anchor('What the jobs return')}): "
               + ", ".join(f"`{p.rsplit('.', 1)[1]}`" for p in RESULTS))
    out.append("")
    for section, title in SECTIONS:
        out += [f"## {title}", "", f"`{section}`: " + markdown(inspect.getdoc(importlib.import_module(section))), ""]
        for name in by_section[section]:
            out += _entry(name, getattr(ddlab, name))
    out += ["## What the jobs return", "",
            "Results show themselves (`render()`, the verdict first), serialise (`to_dict()`, "
            "the JSON line a verb prints last) and tell a script how it went (`exit_code`: "
            "`ddlab --help` ends with the table).", ""]
    for path in RESULTS:
        out += _result(path)
    return "\n".join(out).rstrip("\n") + "\n"


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    action.add_argument("--check", action="store_true", help=f"exit 1 when {OUT.relative_to(ROOT)} differs")
    args = parser.parse_args(argv)
    try:
        text = reference()
    except RefError as err:
        print(f"api_reference: {err}", file=sys.stderr)
        return 1
    if args.write:
        OUT.write_text(text)
        print(OUT.relative_to(ROOT))
    elif args.check:
        if OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} differs from the code's docstrings: run "
                  "python tools/api_reference.py --write", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
