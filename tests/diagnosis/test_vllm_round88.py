"""What held-out round 88 of the vLLM corpus (w8801-w8823, measured once on main at a9364fe with its logs 6e8fe4c)
showed: crashed 21/23, kind 14/23, phase 17/22. Folded into work with its thirteen misses known (known_misses.json);
docs/diagnosis.md, "Held-out round 88", reads each against the source.

Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

from fieldkit import VLLM_MANIFEST, assert_vllm_logs_read_as_labelled, disputed, folded_round

_ROUND = [f"w88{n:02d}" for n in range(1, 24)]

_LEFT = {
    "w8803": ["phase"], "w8806": ["kind"], "w8807": ["kind"], "w8809": ["phase"], "w8810": ["kind"],
    "w8811": ["phase"], "w8815": ["phase"], "w8816": ["crashed", "kind"], "w8817": ["kind"], "w8818": ["kind"],
    "w8820": ["crashed", "kind"], "w8822": ["kind"], "w8823": ["kind", "phase"]}


def test_the_round_is_folded_with_its_twenty_three_logs():
    assert folded_round(VLLM_MANIFEST, 88) == _ROUND


def test_no_label_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled_but_its_known_misses():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == _LEFT
