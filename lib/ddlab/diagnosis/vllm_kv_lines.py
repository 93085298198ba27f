"""vLLM's KV cache services: the lines they write only while requests are served.

Contract: :data:`KV_SERVING` is a regular expression (an alternation, no anchors) that matches a line a KV
connector or an external KV cache (round 77: LMCache's lookups and stores) writes only for a request the scheduler
admitted or a batch the model ran, or V0's scheduler writes only when the KV cache is short for the requests it runs;
:mod:`.vllm_log` reads it as the ``serving`` phase's marker. Split from :mod:`.vllm_log` (the phases' table)
so that each cache service's lines, and the source each rests on, live in one place.
"""

from __future__ import annotations

__all__ = ["KV_SERVING"]

KV_SERVING = (
    # (round 55) a KV connector told of a request the scheduler admitted (only in schedule(): v1/core/sched/
    # scheduler.py:164, :466; nixl_connector.py:292 (0.10.1.1)), (round 62) or one it holds waiting on remote KV
    # (schedule(): scheduler.py:345 (0.10.1.1)); (round 60) NIXL freeing blocks no decode worker read
    # (nixl_connector.py:409, :1048 (0.10.2)), (round 65) told of a read of blocks it no longer holds
    # (_get_new_notifs, :1068 (0.10.1.1))
    r"\w+Connector update_state_after_alloc: |Releasing expired KV blocks for request "
    r"|is still in WAITING_FOR_REMOTE_KVS|Potentially invalid KV blocks for unrecognized request "
    # (round 67) aibrix's vineyard KV cache (V0 fork, aibrix/vllm edb0709 vllm/worker/vineyard_llm_cache.py):
    # its prefetch and update run on the prompts of a batch the model runs and return at once in the profile
    # run (:621, :879 "# profile run", before any KV cache exists), logging "prefetch_kv_caches: matched="
    # (:646) and "update kv cache: #prefix=" (:685-695) only for a request's tokens
    r"|prefetch_kv_caches: matched=\{|update kv cache: #prefix=\d+, #tokens=\d+, updated="
    # (round 70) V0's scheduler preempting a running sequence group for KV space: _preempt's warning (core/
    # scheduler.py:1755 (0.7.3), :1482 (0.6.4.post1)), called only from _schedule_running (:763) and the priority
    # preemption (:1005) on groups already running; the profile run never goes through the scheduler
    r"|Sequence group \S+ is preempted by PreemptionMode\.(?:RECOMPUTE|SWAP) mode because there is not enough KV cache"
    # (round 77) LMCache's connector (lmcache 0.3.1 lmcache/integration/vllm/vllm_v1_adapter.py): the scheduler's
    # lookup for a waiting request (get_num_new_matched_tokens, :834 "Reqid: ..., Total tokens N, LMCache hit tokens:
    # N, need to load: N", called only from schedule(): vllm 0.10.1.1 v1/core/sched/scheduler.py:385) and a request's
    # tokens stored (save_kv_layer :678, wait_for_save :763, "... for request %s", a loop over the step's requests).
    # Not its "attn_metadata is None" warning (start_load_kv, :494): the profile run's dummy batch has none too
    r"|LMCache hit tokens: \d+, need to load: -?\d+"
    r"|Storing KV cache for \d+ out of \d+ tokens \(skip_leading_tokens=\d+\) for request "
    # (round 82) NIXL's handshake with a remote prefill engine failed: the handshake runs in a background thread
    # started only by start_load_kv for a request whose KV is to be read from that engine (_background_nixl_handshake,
    # nixl_connector.py:532-557, called at :911 from start_load_kv's loop over metadata.reqs_to_recv (0.10.0)), its
    # done_callback logging "Handshake with %s failed" (:548 (0.10.0), :534 (0.9.2), :1099 (0.11.1), :1156 (0.13.0));
    # the profile run's dummy batch asks no remote KV
    r"|\bHandshake with [\w.:-]+ failed\b"
)
