"""Held-out round 25 (issue 24): folded into ``work``, ddlab's two misses fixed by general rules read from the source.

Round 25 (h25001-h25008) was measured once on main at bbba5ae (with the round's logs, b0d89a4: crashed 8/8,
kind 6/8, phase 4/4) and folded into ``work``; docs/diagnosis.md, "Held-out round 25", explains the two
misses, both ddlab's. h25003: the launcher's warmup request read-timing out after 600 s, with no warmup frame
or header left in the paste (a signature now: a read timeout of 600 s on a request to the server's own
address). h25007: a PD prefill scheduler's traceback cut inside the Mooncake sender's poll, on its call of
the KV manager's check_status (a lookup of the room's transfer status, which can raise only KeyError: a
signature now). No label was disputed. A rule's test reads the corpus log (work split since the fold), a
text written from the same source texts, and a near miss that must not read the same way; the positive
tests fail on bbba5ae (the near misses hold on both). A text cited from a wheel is checked there where the
wheel is unpacked (skipped elsewhere).
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (REAL_MANIFEST, assert_in_library_wheel, assert_in_sglang_wheel, assert_reads_as_labelled,
                      reading, real)

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 25}


def test_round25_is_folded_into_work():
    assert sorted(_ROUND) == [f"h2500{i}" for i in range(1, 9)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())


# --- h25003: the warmup request's read timed out, its frames and header above the paste -----------------------
# the launcher posts one request to server_args.url() with timeout=600 (0.4.4.post1 entrypoints/
# http_server.py:722-728, logged at :734 "Initialization failed. warmup error: {last_traceback}"; 0.5.23
# :2494-2498); urllib3 words the timeout "HTTPConnectionPool(host=H, port=P): Read timed out. (read timeout=600)"

_URLLIB3 = ('  File "/opt/conda/lib/python3.10/site-packages/urllib3/connectionpool.py", line 336, in _raise_timeout\n'
            "    raise ReadTimeoutError(\n")
_CHAINED = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _timed_out(host: str, seconds: str, pool: str = "HTTPConnectionPool", port: int = 30000) -> str:
    return (_URLLIB3 + f"urllib3.exceptions.ReadTimeoutError: {pool}(host='{host}', port={port}): "
            f"Read timed out. (read timeout={seconds})\n" + _CHAINED)


def test_a_600_s_read_timeout_on_the_servers_own_address_is_the_warmup():
    assert_reads_as_labelled("h25003", "warmup_read_timeout")
    assert real("h25003").phase == "ready"  # the warmup's phase (the labelled one, not in the log)
    for host in ("0.0.0.0", "127.0.0.1", "localhost"):
        written = diagnose(_timed_out(host, "600"))
        assert reading(written) == (True, "health_check", "ready") and written.signature == "warmup_read_timeout"
    # requests wraps it and keeps the text (the warmup posts through requests)
    wrapped = diagnose(_timed_out("0.0.0.0", "600") + "Traceback (most recent call last):\n"
                       '  File "/opt/conda/lib/python3.10/site-packages/requests/adapters.py", line 532, in send\n'
                       "    raise ReadTimeout(e, request=request)\n"
                       "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='0.0.0.0', port=30000): "
                       "Read timed out. (read timeout=600)\n")
    assert wrapped.signature == "warmup_read_timeout"


def test_another_hosts_or_another_timeouts_read_timeout_is_not_the_warmup():
    for text in (_timed_out("huggingface.co", "10", "HTTPSConnectionPool", 443), _timed_out("127.0.0.1", "60"),
                 _timed_out("10.0.0.7", "600")):
        near = diagnose(text)
        assert near.signature != "warmup_read_timeout" and near.kind != "health_check", text


def test_the_warmup_request_and_urllib3s_words_are_in_the_wheels():
    server = "sglang/srt/entrypoints/http_server.py"
    assert_in_sglang_wheel("0.4.4.post1", server,
                           "                headers=headers,\n                timeout=600,\n            )\n"
                           '            assert res.status_code == 200, f"{res}"\n    except Exception:\n'
                           "        last_traceback = get_exception_traceback()\n"
                           "        if pipe_finish_writer is not None:\n"
                           "            pipe_finish_writer.send(last_traceback)\n"
                           '        logger.error(f"Initialization failed. warmup error: {last_traceback}")\n')
    assert_in_sglang_wheel("0.4.4.post1", "sglang/srt/server_args.py",
                           '            return f"http://{self.host}:{self.port}"\n')
    assert_in_sglang_wheel("0.4.10.post2", server, "                timeout=600,\n")
    assert_in_sglang_wheel("0.5.23", server,
                           "                timeout=warmup_timeout if warmup_timeout > 0 else 600,\n")
    assert_in_library_wheel("urllib3", "1.26.5", "urllib3/connectionpool.py",
                            "            raise ReadTimeoutError(\n"
                            '                self, url, "Read timed out. (read timeout=%s)" % timeout_value\n')
    assert_in_library_wheel("urllib3", "1.26.5", "urllib3/connectionpool.py",
                            '        return "%s(host=%r, port=%r)" % (type(self).__name__, self.host, self.port)\n')
    assert_in_library_wheel("urllib3", "1.26.5", "urllib3/exceptions.py",
                            '        HTTPError.__init__(self, "%s: %s" % (pool, message))\n')


# --- h25007: a PD scheduler's traceback cut inside the Mooncake sender's status lookup ---------------------
# KVManager.check_status is `return self.request_status[bootstrap_room]` (0.4.10.post2 mooncake/conn.py:826-827,
# 0.5.13 common/conn.py:209-210, 0.5.23 common/conn.py:608-609), the sender's poll calls it first (0.4.10.post2
# mooncake/conn.py:970-972): a traceback cut inside that call is a KeyError on a room with no status

_LOOP = ("[2026-01-16 22:03:02 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
         '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2682, in run_scheduler_process\n'
         "    scheduler.event_loop_overlap_disagg_prefill()\n"
         '  File "/sgl/python/sglang/srt/disaggregation/prefill.py", line 518, '
         "in process_disagg_prefill_inflight_queue\n"
         "    polls = poll_and_all_reduce(\n"
         '  File "/sgl/python/sglang/srt/disaggregation/utils.py", line 49, in poll_and_all_reduce\n'
         "    polls = [int(poller.poll()) for poller in pollers]\n")
_POLL = ('  File "/sgl/python/sglang/srt/disaggregation/mooncake/conn.py", line 972, in poll\n'
         "    status = self.kv_mgr.check_status(self.bootstrap_room)\n")
_LOOKUP = ('  File "/sgl/python/sglang/srt/disaggregation/mooncake/conn.py", line 827, in check_status\n'
           "    return self.request_status[bootstrap_room]\n")


def test_a_traceback_cut_in_the_transfer_status_lookup_is_pd_transfer():
    assert_reads_as_labelled("h25007", "pd_status_lost")
    for text in (_LOOP + _POLL, _LOOP + _POLL + "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n", _LOOP + _POLL + _LOOKUP,
                 _LOOP + _POLL + _LOOKUP + "KeyError: 4155129346398722730\n"):
        written = diagnose(text)
        assert reading(written) == (True, "pd_transfer", "serving") and written.signature == "pd_status_lost", text


def test_another_error_or_another_cut_in_the_poll_is_not_the_status_lookup():
    nixl = _POLL.replace("mooncake", "nixl")  # NIXL's check_status reads with a default: it never raises KeyError
    for text in (_LOOP + _POLL + "RuntimeError: CUDA error: an illegal memory access was encountered\n",
                 _LOOP + nixl, _LOOP + _POLL + '  File "/sgl/python/sglang/srt/disaggregation/mooncake/conn.py", '
                                               "line 990, in record_failure\n    with self.failure_lock:\n"):
        near = diagnose(text)
        assert near.signature != "pd_status_lost", text


def test_the_status_lookup_and_its_callers_are_in_the_wheels():
    lookup = "    def check_status(self, bootstrap_room: int):\n        return self.request_status[bootstrap_room]\n"
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py", lookup)
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py",
                           "    def poll(self) -> KVPoll:\n        if self.conclude_state is None:\n"
                           "            status = self.kv_mgr.check_status(self.bootstrap_room)\n")
    assert_in_sglang_wheel("0.5.13", "sglang/srt/disaggregation/common/conn.py",
                           "    def check_status(self, bootstrap_room: int) -> KVPoll:\n"
                           "        return self.request_status[bootstrap_room]\n")
    assert_in_sglang_wheel("0.5.23", "sglang/srt/disaggregation/common/conn.py",
                           "    def check_status(self, bootstrap_room: int) -> KVPoll:\n"
                           "        return self.request_status[bootstrap_room]\n")
    assert_in_sglang_wheel("0.5.23", "sglang/srt/disaggregation/pp_consensus_store.py",
                           "    def __getitem__(self, key: Any) -> Any:\n        with self._cache_lock:\n"
                           "            return self._local_map[key]\n")
    assert_in_sglang_wheel("0.5.13", "sglang/srt/disaggregation/nixl/conn.py",
                           "        return self.request_status.get(bootstrap_room, KVPoll.WaitingForInput)\n")
