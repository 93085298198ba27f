"""The jobs the notebooks call, with the values papermill passes (dry runs: no host)."""

from __future__ import annotations

import pytest

import ddlab
import sweepkit
from ddlab.core.errors import ConfigError
from ddlab.report.verdicts import TABLE_COLUMNS


def test_plain_papermill_strings_are_read_as_yaml(project):
    """`papermill -p cuda_graph true -p budget [4,16]` passes the strings 'true' and '[4,16]'."""
    report = ddlab.sweep(budget="[4, 16]", topk_cap="4", cuda_graph="true",
                            fixed="{mem_fraction_static: 0.8}",
                            extra="[{debug_drop_verify_field: num_token_non_padded}]", dry_run=True)
    frame = report.frame
    assert list(frame["role"]) == ["baseline", "grid", "grid", "extra"]
    assert list(frame["budget"][1:]) == [4, 16, 16] and set(frame["cuda_graph"]) == {True}
    assert frame["point.debug_drop_verify_field"][3] == "num_token_non_padded"
    assert not project.state.exists()


def test_one_key_value_string_is_one_extra_cell(project):
    report = ddlab.sweep(budget=4, topk_cap=4, cuda_graph=False, baseline=False,
                            extra="debug_drop_verify_field=num_token_non_padded", dry_run=True)
    assert list(report.frame["role"]) == ["grid", "extra"]


@pytest.mark.parametrize("kwargs, words", [
    ({"budget": "[4, 16"}, "budget='[4, 16': not a value or a list"),
    ({"grid": "[1, 2]"}, "grid=[1, 2]: must map override keys to values"),
], ids=["unclosed-list", "grid-not-a-mapping"])
def test_unreadable_values_are_config_errors(project, kwargs, words):
    with pytest.raises(ConfigError) as info:
        ddlab.sweep(dry_run=True, **kwargs)
    assert words in str(info.value)


def test_load_report_refuses_an_unknown_metric_listing_the_known(project):
    with pytest.raises(ConfigError) as info:
        ddlab.load_report(metric="tok_per_s")
    assert "metric='tok_per_s': not a known figure; choose one of: accept_length, output_tok_s" in str(
        info.value)


@pytest.mark.slow
def test_the_table_puts_the_readers_columns_first(tmp_path_factory):
    shared = sweepkit.shared_sweep(tmp_path_factory)
    with sweepkit.using(shared.project):
        report = ddlab.load_report(shared.sweep_id)
    assert list(report.table().columns) == TABLE_COLUMNS
    assert report.verdict.headline.startswith("SWEEP DONE: 7 cells, 6 measured, 1 crashed")
