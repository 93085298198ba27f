"""The sweep's options and their defaults are defined once (ddlab.sweeps.plan:
SweepOptions, DEFAULT_GRID, MAX_CELLS): ``ddlab.sweep``'s signature, ``ddlab sweep``'s
options and the sweep notebook's parameters each offer every one, with its default."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
from pathlib import Path

import pytest

import ddlab
from ddlab.cli import build_parser
from ddlab.sweeps.plan import DEFAULT_GRID, DEFAULT_OPTIONS, MAX_CELLS, SweepOptions

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "sweep.ipynb"
INTERNAL = {"grace_s"}  # a search trial's business (search_plan.TRIAL_GRACE_S), not a sweep's


def _plain(value):
    """Lists and tuples alike (a signature holds tuples, argparse and the notebook lists)."""
    return list(value) if isinstance(value, (list, tuple)) else value


def _one_definition() -> dict:
    options = {f.name: getattr(DEFAULT_OPTIONS, f.name) for f in dataclasses.fields(SweepOptions)
               if f.name not in INTERNAL}
    return {k: _plain(v) for k, v in {**options, **DEFAULT_GRID, "max_cells": MAX_CELLS}.items()}


def _api() -> dict:
    parameters = inspect.signature(ddlab.sweep).parameters
    return {k: _plain(parameters[k].default) for k in _one_definition() if k in parameters}


def _cli() -> dict:
    args = build_parser().parse_args(["sweep"])
    return {k: _plain(getattr(args, k)) for k in _one_definition() if hasattr(args, k)}


def _notebook() -> dict:
    nb = json.loads(NOTEBOOK.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    found = {n.target.id: ast.literal_eval(n.value) for n in tree.body
             if isinstance(n, ast.AnnAssign)}
    return {k: _plain(found[k]) for k in _one_definition() if k in found}


@pytest.mark.parametrize("front", [_api, _cli, _notebook], ids=["api", "cli", "notebook"])
def test_each_front_offers_every_sweep_option_with_its_one_default(front):
    assert front() == _one_definition()


def test_the_check_sees_a_default_that_drifts(monkeypatch):
    """The comparison can fail: a definition that moves leaves behind the fronts that copy
    it (the notebook's literals, a signature bound at import); the CLI reads it at parse time."""
    monkeypatch.setattr("ddlab.sweeps.plan.DEFAULT_OPTIONS",
                        dataclasses.replace(DEFAULT_OPTIONS, requests=9))
    monkeypatch.setitem(globals(), "DEFAULT_OPTIONS",
                        dataclasses.replace(DEFAULT_OPTIONS, requests=9))
    assert _api() != _one_definition() and _notebook() != _one_definition()
    assert _cli() == _one_definition()
