"""The engine: requests, the batching scheduler, and SGLang's serving log lines.

Contract:

- ``Engine(args)`` builds the model runner (startup phases logged as SGLang
  logs them) and owns the requests. ``submit(req)`` queues a ``Req`` from any
  thread; the scheduler admits queued requests while KV slots are free
  (``--max-running-requests``), prefills them (a ``Prefill batch`` line), then
  runs one decode step over *all* running requests at once: their draft
  trees are verified in one batched target forward. Every
  ``--decode-log-interval`` steps it logs a ``Decode batch`` line with the
  figures of that interval: accept len = tokens gained (accepted drafts + the
  bonus) / request-steps, accept rate = accepted drafts / (request-steps x
  (block size - 1)), as SGLang 0.5.23 computes them; both lines worded for
  ``--log-format`` (``log_lines``).
- ``run_forever(on_crash)`` is the scheduler loop for the server's thread; an
  exception logs ``Scheduler hit an exception: <traceback>`` and calls
  ``on_crash`` (the server then exits non-zero, as SGLang's does).
- ``generate(prompts, max_new_tokens)`` runs requests to completion in the
  calling thread: the benchmark and the tests use it.
- ``validate(req)`` raises ``ValueError`` with a user-facing message when a
  request cannot be served (too long for the context).

Request state is plain Python (slot, seq_len = tokens in the KV cache,
bonus = the pending token); tensors are built per step in ``spec``.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
import traceback

from ddlab.target.metrics import Metrics
from ddlab.target.model_runner import ModelRunner
from ddlab.target.spec import SpecConfig, decode_step

__all__ = ["Engine", "Req"]

logger = logging.getLogger("ddlab.target")
_ids = itertools.count()


class Req:
    def __init__(self, input_ids, max_new_tokens=128, stop=(), stop_token_ids=(), rid=None,
                 on_event=None):
        self.rid = rid or f"{next(_ids):x}{time.time_ns() & 0xffffffff:08x}"
        self.input_ids, self.max_new_tokens = list(input_ids), max_new_tokens
        self.stop = [s.encode() if isinstance(s, str) else s for s in stop]
        self.stop_token_ids = set(stop_token_ids)
        self.on_event = on_event  # called (req, new_ids) from the scheduler; finished when req.finish_reason
        self.output_ids, self.finish_reason, self.aborted = [], None, False
        self.slot = self.seq_len = self.bonus = None
        self.verify_ct = self.correct_drafts = 0
        self.correct_drafts_histogram = []  # [k]: verify steps that accepted k drafts (SGLang's)
        self.created, self.first_token_at, self.finished_at = time.perf_counter(), None, None
        self.token_times = []
        self.last_ids = []  # the ids of its last update, told with its end

    def meta_info(self, block_size=None) -> dict:
        done = self.finished_at or time.perf_counter()
        meta = {"id": self.rid, "finish_reason": self.finish_reason,
                "prompt_tokens": len(self.input_ids), "completion_tokens": len(self.output_ids),
                "cached_tokens": 0, "e2e_latency": round(done - self.created, 6)}
        if block_size and self.finish_reason is not None:
            proposed = self.verify_ct * (block_size - 1)
            meta.update(spec_verify_ct=self.verify_ct,
                        spec_accept_length=len(self.output_ids) / max(1, self.verify_ct),
                        spec_accept_rate=self.correct_drafts / proposed if proposed else 0.0,
                        spec_num_correct_drafts=self.correct_drafts, spec_num_proposed_drafts=proposed)
            if self.correct_drafts_histogram:  # 0.5.23 tokenizer_manager.py:3193-3201
                meta["spec_correct_drafts_histogram"] = list(self.correct_drafts_histogram)
        return meta


def _count(histogram: list, k: int) -> None:
    """One step that accepted ``k`` drafts (0.5.23 schedule_batch.py:1566-1572)."""
    histogram.extend([0] * (k + 1 - len(histogram)))
    histogram[k] += 1


class Engine:
    def __init__(self, args):
        self.args = args
        self.spec = SpecConfig(args)
        self.runner = ModelRunner(args, self.spec)
        self.pool = self.runner.pool
        self.max_running_requests = self.runner.max_running_requests
        self.context_len = self.runner.context_len
        self.words = self.runner.words
        said = self.words.max_total(tokens=self.pool.capacity_tokens, chunked=args.chunked_prefill_size,
                                    max_prefill=args.max_prefill_tokens, running=self.max_running_requests,
                                    context_len=self.context_len, avail_gb=self.runner.memory.avail_gb())
        if said:
            logger.info(said)
        self.waiting, self.running = collections.deque(), []
        self.cond = threading.Condition()
        self.metrics = Metrics()
        self.forward_ct = 0
        self._interval = {"steps": 0, "tokens": 0, "verifies": 0, "accepted": 0, "t0": time.perf_counter()}
        self._last_prefill_log = time.perf_counter()

    # --- requests -----------------------------------------------------------

    def validate(self, req: Req) -> None:
        n_in, total = len(req.input_ids), len(req.input_ids) + req.max_new_tokens
        if n_in == 0:
            raise ValueError("The input is empty: give a non-empty text or input_ids")
        if total > self.context_len:
            raise ValueError(f"Requested token count exceeds the model's maximum context length of "
                             f"{self.context_len} tokens. You requested a total of {total} tokens: "
                             f"{n_in} tokens from the input and {req.max_new_tokens} tokens for the "
                             "completion. Please reduce the number of tokens in the input or the "
                             "completion.")

    def submit(self, req: Req) -> None:
        self.submit_all([req])

    def submit_all(self, reqs) -> None:
        """Queue ``reqs`` in one step: the scheduler takes them in together (one prefill
        when the pool has room), as SGLang's scheduler does a batch request's requests
        that its tokenizer manager dispatched back to back."""
        with self.cond:
            self.waiting.extend(reqs)
            self.cond.notify()

    def abort(self, req: Req) -> None:
        req.aborted = True

    def in_flight(self) -> list[str]:
        """The rids of the requests not finished yet (queued or running)."""
        with self.cond:
            reqs = [*self.waiting, *self.running]
        return [r.rid for r in reqs if r.finish_reason is None]

    # --- the scheduler ------------------------------------------------------

    def step(self) -> bool:
        """One scheduler iteration: admit + prefill, then one decode step. -> did any work."""
        with self.cond:
            n_new = min(len(self.waiting), len(self.pool.free))
            new = [self.waiting.popleft() for _ in range(n_new)]
        if new:
            self._prefill(new)
        self.running = [r for r in self.running if not self._reap(r)]
        if self.running:
            self._decode()
            self.running = [r for r in self.running if not self._reap(r)]
        return bool(new or self.running)

    def _prefill(self, reqs):
        self._log_prefill(reqs)  # SGLang logs the batch when it schedules it, before its forward
        for req in reqs:
            req.slot = self.pool.alloc()
            req.bonus = self.runner.forward_extend(req.slot, req.input_ids)
            req.seq_len = len(req.input_ids)
            self.metrics.prompt_tokens += len(req.input_ids)
            self.running.append(req)
            self._emit(req, [req.bonus])

    def _log_prefill(self, reqs):
        now, n_new = time.perf_counter(), sum(len(r.input_ids) for r in reqs)
        input_tok_s = n_new / max(now - self._last_prefill_log, 1e-9)
        self._last_prefill_log = now
        said = self.words.prefill(len(reqs), n_new, self._token_usage(), len(self.running),
                                  len(self.waiting), input_tok_s)
        if said:
            logger.info(said)

    def _decode(self):
        results = decode_step(self.runner, self.spec, self.running)
        iv = self._interval
        m = self.metrics
        for req, (tokens, accept_len, drafted) in zip(self.running, results):
            if drafted:  # vLLM's SpecDecodingStats.observe_draft (a request with no draft: none)
                m.observe_draft(drafted, accept_len - 1)
            req.seq_len += accept_len
            req.bonus = tokens[-1]
            req.verify_ct += 1
            req.correct_drafts += accept_len - 1
            _count(req.correct_drafts_histogram, accept_len - 1)
            n = self._emit(req, tokens)
            iv["tokens"] += n
            iv["accepted"] += accept_len
        iv["verifies"] += len(results)
        iv["steps"] += 1
        self.metrics.verify_calls += len(results) if self.spec.algorithm else 0
        self.forward_ct += 1
        if self.forward_ct % self.args.decode_log_interval == 0:
            self._log_decode()

    def _emit(self, req, tokens) -> int:
        """Append tokens up to the request's limits; set finish_reason; notify. -> tokens kept."""
        room = req.max_new_tokens - len(req.output_ids)
        kept = tokens[:room]
        for i, t in enumerate(kept):
            if t in req.stop_token_ids:
                kept = kept[:i + 1]
                req.finish_reason = {"type": "stop", "matched": t}
                break
        req.output_ids.extend(kept)
        now = time.perf_counter()
        req.first_token_at = req.first_token_at or now
        req.token_times.append((now, len(kept)))
        if req.finish_reason is None:
            self._check_stop_strings(req)
        if req.finish_reason is None and len(req.output_ids) >= req.max_new_tokens:
            req.finish_reason = {"type": "length", "length": req.max_new_tokens}
        if req.aborted and req.finish_reason is None:
            req.finish_reason = {"type": "abort", "message": "aborted by the client"}
        self.metrics.generation_tokens += len(kept)
        if req.finish_reason is not None:  # told once reaped and counted (_reap)
            req.last_ids = kept
        elif req.on_event:
            req.on_event(req, kept)
        return len(kept)

    def _check_stop_strings(self, req):
        if not req.stop:
            return
        tail = bytes(req.output_ids[-(max(map(len, req.stop)) + 64):])
        for s in req.stop:
            if s in tail:
                full = bytes(req.output_ids)
                req.output_ids = req.output_ids[:full.find(s) + len(s)]
                req.finish_reason = {"type": "stop", "matched": s.decode(errors="replace")}
                return

    def _reap(self, req) -> bool:
        if req.finish_reason is None:
            return False
        req.finished_at = time.perf_counter()
        self.pool.release(req.slot)
        self.metrics.observe_finished(req)
        # the client hears its request finished only now, counted: SGLang's tokenizer manager counts
        # a finished request (collect_metrics, 0.5.23 managers/tokenizer_manager.py:2788-2789) before
        # it wakes its batch's handlers (:2797-2798; sooner only past batch_notify_size, :2782-2786),
        # so a /metrics read right after the answer counts it
        if req.on_event:
            req.on_event(req, req.last_ids)
        return True

    def _token_usage(self) -> float:
        return sum(r.seq_len for r in self.running) / self.pool.capacity_tokens

    def _log_decode(self):
        iv, now, m = self._interval, time.perf_counter(), self.metrics
        m.gen_throughput = iv["tokens"] / max(now - iv["t0"], 1e-9)
        accept = None
        if self.spec.algorithm:
            verifies = max(1, iv["verifies"])
            correct = iv["accepted"] - iv["verifies"]
            accept = (iv["accepted"] / verifies, correct / (verifies * (self.spec.block_size - 1)))
            m.spec_accept_length, m.spec_accept_rate = accept
            m.accepted_total += iv["accepted"]
            m.verifies_total += iv["verifies"]
        said = self.words.decode(len(self.running), sum(r.seq_len for r in self.running),
                                 self._token_usage(), accept, self.runner.last_used_graph,
                                 m.gen_throughput, len(self.waiting))
        if said:
            logger.info(said)
        self._interval = {"steps": 0, "tokens": 0, "verifies": 0, "accepted": 0, "t0": now}

    def run_forever(self, on_crash) -> None:
        """The scheduler thread's loop; never returns unless it crashes."""
        try:
            while True:
                with self.cond:
                    if not self.waiting and not self.running:
                        while not self.waiting:
                            self.cond.wait()
                        self._interval["t0"] = time.perf_counter()  # idle time is no decode time
                self.step()
                self.metrics.num_running, self.metrics.num_queue = len(self.running), len(self.waiting)
                self.metrics.token_usage = self._token_usage()
        except BaseException:
            self.words.log_scheduler_crash(logger, traceback.format_exc())
            on_crash()

    def generate(self, prompts, max_new_tokens=128, **kw) -> list[Req]:
        """Serve ``prompts`` (lists of ids) to completion in this thread."""
        reqs = [Req(p, max_new_tokens, **kw) for p in prompts]
        for r in reqs:
            self.validate(r)
            self.submit(r)
        while self.step():
            pass
        return reqs
