"""Every work-split log of both corpora reads as labelled, but for its known misses.

The floors (test_field.py's WORK_FLOOR, test_vllm_corpus.py's FLOORS) count what the work split
reaches; a count lets a rule that fixes one log and breaks another pass. This reads each log against
its own labels: a field it misses must be one tests/fixtures/logs/known_misses.json names for it, and a
known miss that now reads right must leave that list (so the list, and the floors it implies, stay
exact). A fix helper folding a round adds the misses it leaves and removes the ones it fixes. A vLLM
work log's advice is judged from the same reading (fieldkit.vllm_advice_problems: no SGLang words,
every proposed flag taken by each tabled release's parser), so the corpus is read once.

Each corpus is read a quarter at a time: make check reads one quarter, make test all four.
"""

from __future__ import annotations

import pytest

from fieldkit import (FIELDS, KNOWN_MISSES, VLLM_RELEASES, corpus_tool, quarter, quarters,
                      vllm_advice_problems, work_logs)

CORPORA = ("real", "vllm-real")


@pytest.mark.parametrize("q", quarters())
@pytest.mark.parametrize("corpus", CORPORA)
def test_each_work_log_reads_as_labelled_but_for_its_known_misses(corpus, q):
    tool, known = corpus_tool(corpus), KNOWN_MISSES[corpus]
    new, gone, advice, proposed = {}, {}, [], dict.fromkeys(VLLM_RELEASES, 0)
    for log in quarter(work_logs(corpus), q):
        text = tool.text_of(log)
        row = tool.judged(log, text)
        if corpus == "vllm-real":  # its advice, judged from the same reading (read_vllm keeps its last readings)
            found, counts = vllm_advice_problems(log["id"], text)
            advice += found
            proposed = {release: proposed[release] + counts[release] for release in proposed}
        got = {field for field in FIELDS if row[field] is False}
        want = set(known.get(log["id"], []))
        if got - want:
            new[log["id"]] = f"misses {sorted(got - want)}: said {row['said']}, labelled {row['want']}"
        if want - got:
            gone[log["id"]] = sorted(want - got)
    assert not new, f"{corpus}: work logs that read worse than labelled, not known misses: {new}"
    assert not gone, (f"{corpus}: known misses that now read as labelled: take them out of "
                      f"tests/fixtures/logs/known_misses.json: {gone}")
    assert not advice, "\n".join(advice)
    assert corpus != "vllm-real" or min(proposed.values()) > 600, proposed  # each quarter: 732-796 per release


def test_the_known_misses_are_work_logs_and_measured_fields():
    for corpus in CORPORA:
        work = {log["id"]: log for log in work_logs(corpus)}
        for log_id, fields in KNOWN_MISSES[corpus].items():
            assert log_id in work, f"{corpus}: {log_id} is no work-split log (a held-out log is read by no test)"
            assert fields and set(fields) <= set(FIELDS) and len(set(fields)) == len(fields), (log_id, fields)
            log = work[log_id]
            assert "kind" not in fields or not log.get("kind_disputed"), f"{log_id}: a disputed kind is not measured"
            assert "phase" not in fields or (log["phase_in_log"] and not log.get("phase_disputed")), (
                f"{log_id}: its phase is not measured")
