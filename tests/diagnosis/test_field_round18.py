"""Held-out round 18 (issue 24): folded into ``work``.

Round 18 (h18001-h18014) was measured once on main at 90facd8 (crashed 11/14, kind 7/14, phase 6/9)
and folded into ``work``; docs/diagnosis.md, "Held-out round 18", explains each miss. These tests keep
the round folded, its labels as collected, and the logs that 90facd8 already read as labelled reading
so.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import REAL_MANIFEST, assert_reads_as_labelled

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 18}


def test_round18_is_folded_into_work():
    assert sorted(_ROUND) == [f"h18{n:03d}" for n in range(1, 15)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert Counter(log["kind"] for log in _ROUND.values())["unknown"] == 5
    assert sum(not log["crashed"] for log in _ROUND.values()) == 1
    assert sum(log["phase_in_log"] for log in _ROUND.values()) == 9


# the logs 90facd8 read as labelled, and the signature each is read by (None: unknown or healthy)
@pytest.mark.parametrize(("log_id", "signature"), [
    ("h18001", None),             # a bare 'CUDA error: invalid argument' in the radix cache
    ("h18003", None),             # a PD decode worker's TypeError (an SGLang code bug)
    ("h18004", "cuda_oom"),       # torch.OutOfMemoryError with the NPU's text
    ("h18005", None),             # a DP7 scheduler exception cut before its exception line
    ("h18009", None),             # healthy: uvicorn up, the first prefill batch
    ("h18012", "import_error"),   # aiter's name missing at the launcher's import
])
def test_round18_logs_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)
