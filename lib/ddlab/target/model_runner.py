"""The model runner: weights, memory pool, graphs, and the forward passes.

Contract: ``ModelRunner(args, spec)`` does SGLang's startup phases in SGLang's
order and in the words of the ``--log-format`` generation (``log_lines``):
init the device, load the weights (target, then drafter), allocate the KV
pools from the memory budget, capture the verify graphs; raising SGLang's
errors when they fail. Then:

- ``forward_extend(slot, ids)``: a prefill of one prompt into ``slot``;
  returns the first generated token.
- ``forward_verify(fb)``: one step for a whole batch, every request with the
  same number of tokens (its draft tree, padded): writes their keys, values
  and hidden states at ``fb.out_cache_loc`` and returns the target's argmax
  at every token, (R, T). Through the static graph buffers when graphs are
  on and the batch fits, else eagerly over just the keys it needs. The graph
  runner gets the batch without ``--debug-drop-verify-field``; the eager
  forward reads the whole batch (it never touches the static buffers).
- ``propose(slots, seq_lens, bonus)``: the drafter's proposal for the next
  block_size-1 positions of every request (argmax, or per-depth top-k),
  through a captured draft graph on CUDA.
"""

from __future__ import annotations

import logging
import os
import time

import torch
import torch.nn.functional as F

from ddlab.target.checkpoint import load_model
from ddlab.target.cuda_graph_runner import CudaGraphRunner, DraftGraphRunner
from ddlab.target.runner.decode_cuda_graph_runner import DecodeCudaGraphRunner
from ddlab.target.log_lines import generation
from ddlab.target.memory import GB, DeviceMemory, KVPool, plan_kv_pool, tensor_bytes
from ddlab.target.model import KVView
from ddlab.target.vllm_graphs import VllmGraphRunner

# The class each log generation's model runner builds (log_lines.py: graph_runner).
GRAPH_RUNNERS = {cls.__name__: cls for cls in (CudaGraphRunner, DecodeCudaGraphRunner, VllmGraphRunner)}

__all__ = ["ModelRunner", "attention_mask", "context_length"]

logger = logging.getLogger("ddlab.target")


def attention_mask(seq_lens, custom_mask, n_keys):
    """(R, 1, T, n_keys) bool: every past token, plus the new tokens ``custom_mask`` allows."""
    R, T, _ = custom_mask.shape
    rel = torch.arange(n_keys, device=seq_lens.device) - seq_lens[:, None]
    idx = rel.clamp(0, T).unsqueeze(1).expand(R, T, n_keys)
    mask = F.pad(custom_mask, (0, 1)).gather(2, idx) | (rel < 0).unsqueeze(1)
    return mask.unsqueeze(1)


def context_length(asked: int | None, derived: int, words) -> int:
    """``--context-length`` as SGLang's ModelConfig takes it (0.5.23
    configs/model_config.py:1291-1316): longer than the model's only when
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN allows (off by default in 0.5.23, on in 0.4),
    with SGLang's warning; else its ValueError. SGLang's launcher builds the ModelConfig
    first (so the error comes before any scheduler line) and the scheduler again (so the
    warning is logged by both)."""
    if not asked or asked <= derived:
        return asked or derived
    warning, error = words.longer_context(asked, derived)
    allowed = os.environ.get(words.longer_context_env, words.longer_context_default)
    if allowed.lower() not in words.truthy:
        raise ValueError(error)
    logger.warning(warning)
    return asked


def pick_device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


class ModelRunner:
    def __init__(self, args, spec):
        self.args, self.spec, self.words = args, spec, generation(args.log_format)
        self._init_device()
        t_load = time.perf_counter()
        self.target = self._load(args.model_path, delay_s=args.debug_load_delay_s)
        self.drafter = self._load(spec.draft_path) if spec.uses_drafter else None
        self._log(self.words.model_loaded(self.weight_gb * GB, time.perf_counter() - t_load))
        spec.resolve(self.drafter)
        if self.drafter is not None:
            self._log(spec.describe(self.words, self.drafter.cfg.architecture),
                      self.words.draft_runner_ready(spec.algorithm))
        self.context_len = context_length(args.context_length, self.target.cfg.context_length, self.words)
        self._init_memory_pool()
        self.graph_runner, self.draft_graph, self.graph_mem_gb = None, None, 0.0
        self._init_graphs()
        self.last_used_graph = False

    @staticmethod
    def _log(*lines):
        for line in lines:
            if line:
                logger.info(line)

    def _init_device(self):
        a, t0 = self.args, time.perf_counter()
        self._log(*self.words.init_begin())
        self.device = pick_device(a.device)
        if self.device.type == "cpu":
            torch.set_num_threads(a.cpu_threads or 1)  # tiny ops: a 2nd thread mostly waits
        torch.manual_seed(a.random_seed)
        self.memory = DeviceMemory(self.device, a.device_memory_gb)
        self._log(*self.words.init_end(self.device.type, self.device.index or 0, time.perf_counter() - t0,
                                       self.memory.used_gb()))

    def _load(self, path, *, delay_s: float = 0.0):
        self._log(self.words.load_begin(self.memory.avail_gb()))
        t0, before = time.perf_counter(), self.memory.avail_bytes()
        model = load_model(path, self.device)
        time.sleep(delay_s)  # --debug-load-delay-s: a GPU host's minutes of weight loading
        params = list(model.parameters())
        self.memory.charge(tensor_bytes(params))
        used = (before - self.memory.avail_bytes()) / GB
        self._log(self.words.load_end(time.perf_counter() - t0, model.cfg.architecture, str(params[0].dtype),
                                      self.memory.avail_gb(), used))
        self.weight_gb = getattr(self, "weight_gb", 0.0) + used
        return model

    def _init_memory_pool(self):
        cfg, spec = self.target.cfg, self.spec
        self.slot_tokens = self.context_len + spec.tokens_per_req
        with_drafter = self.drafter is not None
        slot_bytes = KVPool.slot_bytes(cfg.n_layer, cfg.d_model, self.slot_tokens, with_drafter)
        want = self.args.max_running_requests or 48
        slots = plan_kv_pool(self.memory, self.args.mem_fraction_static, slot_bytes, want,
                             error=lambda rest: self.words.kv_pool_error(
                                 rest, slot_bytes, self.context_len,
                                 int(rest // (slot_bytes // self.slot_tokens)) - spec.tokens_per_req))
        self._log(self.words.kv_available(slots * slot_bytes),
                  self.words.kv_capacity(self.device.type, slots * self.slot_tokens, self.context_len,
                                         slots * self.slot_tokens / self.context_len))
        self.pool = KVPool(cfg.n_layer, cfg.n_head, cfg.d_model // cfg.n_head, cfg.d_model, slots,
                           self.slot_tokens, self.device, with_drafter)
        self.max_running_requests = slots
        # SGLang's request pool: --max-running-requests capped at half the token capacity
        # (0.5.23 kv_cache_configurator.py:3126-3132); the graph batch sizes are clamped to it
        # (base_cuda_graph_runner.py:77-101), not to the slots a full context fills here
        self.req_pool_size = min(want, self.pool.capacity_tokens // 2)
        # the target's pool, then the drafter's (SGLang: each worker logs its own)
        self._charge_pool(self.pool.k, self.pool.v)
        if with_drafter:
            self._charge_pool([self.pool.dk], [self.pool.dv])
        self.kv_gb = self.pool.nbytes() / GB

    def _charge_pool(self, k, v):
        k_bytes, v_bytes = tensor_bytes(k), tensor_bytes(v)
        self.memory.charge(k_bytes + v_bytes)
        self._log(self.words.kv_allocated(str(k[0].dtype), self.pool.capacity_tokens, k_bytes / GB,
                                          v_bytes / GB),
                  self.words.memory_pool_end(self.memory.avail_gb()))

    def _init_graphs(self):
        """SGLang's ``capture_cuda_graphs`` per worker, target then drafter (0.5.23
        scheduler.py:1122-1126): the prefill graph first (always disabled here: the line
        says so, graphs on or off), then the decode/verify graphs when they are on."""
        a = self.args
        self._log(self.words.prefill_graph_disabled())
        if not a.disable_cuda_graph:
            self._init_verify_graphs()
        if self.drafter is not None:
            self._log(self.words.prefill_graph_disabled())
            if not a.disable_cuda_graph and self.device.type == "cuda":  # on CPU a graph saves nothing
                self.draft_graph = DraftGraphRunner(self, self.graph_runner.bs_list, self.words)
                self.graph_mem_gb += self.draft_graph.capture(self.memory, a.cuda_graph_backend_decode)

    def _init_verify_graphs(self):
        a = self.args
        max_bs = min(a.cuda_graph_max_bs_decode, self.req_pool_size)
        bs_list = a.cuda_graph_bs_decode or [b for b in (1, 2, 4, 8, 12, 16, 24, 32) if b < max_bs] + [max_bs]
        bs_list = sorted({b for b in bs_list if b <= self.req_pool_size})
        tokens = a.debug_graph_tokens_per_req or self.spec.tokens_per_req
        runner_cls = GRAPH_RUNNERS[self.words.graph_runner]
        self.graph_runner = runner_cls(self, bs_list, tokens, self.words,
                                       padding=not a.disable_cuda_graph_padding,
                                       skip_none=a.debug_drop_verify_mode == "skip")
        self.graph_mem_gb = self.graph_runner.capture(self.memory, a.cuda_graph_backend_decode)

    @torch.inference_mode()
    def forward_tokens(self, ids, positions, seq_lens, custom_mask, loc, slots, n_keys):
        """The one forward every path runs: -> the target's argmax at every token (R, T).

        ``custom_mask`` None: every token sees all ``n_keys`` keys (one new token, eagerly).
        """
        mask = None if custom_mask is None else attention_mask(seq_lens, custom_mask, n_keys)
        kv = KVView(self.pool.k, self.pool.v, loc, slots, n_keys, mask)
        h = self.target.step(ids, positions, kv)
        if self.drafter is not None:  # the drafter's keys/values of these states, cached as DFlash does
            dk, dv = self.drafter.ctx_kv(h, positions)
            pool = self.pool
            pool.dk.view(-1, *dk.shape[2:]).index_copy_(0, loc, dk.reshape(-1, *dk.shape[2:]))
            pool.dv.view(-1, *dv.shape[2:]).index_copy_(0, loc, dv.reshape(-1, *dv.shape[2:]))
        return self.target.logits(h).argmax(-1)

    def forward_extend(self, slot: int, ids: list[int]) -> int:
        P, dev = len(ids), self.device
        pos = torch.arange(P, device=dev)
        causal = torch.ones(P, P, dtype=torch.bool, device=dev).tril()[None]
        out = self.forward_tokens(torch.tensor([ids], device=dev), pos[None],
                                  torch.zeros(1, dtype=torch.long, device=dev), causal,
                                  slot * self.slot_tokens + pos, slice(slot, slot + 1), P)
        return int(out[0, -1])

    def forward_verify(self, fb, max_seq_len: int, slots: list[int]):
        gr = self.graph_runner
        self.last_used_graph = gr is not None and gr.can_run(fb)
        if self.last_used_graph:
            return gr.execute(fb.without(self.args.debug_drop_verify_field))
        R, T = fb.batch_size, fb.tokens_per_req
        index = slice(slots[0], slots[0] + 1) if R == 1 else fb.req_pool_indices  # a view for one
        mask = None if T == 1 and R == 1 else fb.custom_mask  # one token sees every key: no mask
        return self.forward_tokens(fb.input_ids.view(R, T), fb.positions.view(R, T), fb.seq_lens,
                                   mask, fb.out_cache_loc, index, max_seq_len + T)

    def propose(self, slots, seq_lens, bonus):
        """The drafter's proposal as lists: argmax ids (DFLASH) or top-k (log-probs, ids) (DDTREE)."""
        dg = self.draft_graph
        out = dg.run(slots, seq_lens, bonus) if dg is not None and dg.can_run(len(slots)) else \
            self.proposal(slots, seq_lens, bonus)
        if len(out) == 1:
            return out[0].tolist()
        k = out[0].shape[-1]  # one device-to-host copy for both: ids < 256 are exact as floats
        both = torch.cat([out[0], out[1].to(out[0].dtype)], dim=-1).tolist()
        return ([[r[:k] for r in row] for row in both],
                [[[int(i) for i in r[k:]] for r in row] for row in both])

    @torch.inference_mode()
    def proposal(self, slots, seq_lens, bonus):
        logits = self.draft(slots, seq_lens, bonus)
        if self.spec.algorithm == "DFLASH":
            return (logits.argmax(-1),)
        k = min(self.spec.topk_cap, self.spec.budget, logits.shape[-1])
        return tuple(logits.log_softmax(-1).topk(k, dim=-1))

    @torch.inference_mode()
    def draft(self, slots, seq_lens, bonus):
        """Drafter logits (R, L, V) over each request's last ctx_window cached states."""
        cfg, dev = self.drafter.cfg, self.device
        idx = seq_lens[:, None] + torch.arange(-cfg.ctx_window, 0, device=dev)
        flat = slots[:, None] * self.slot_tokens + idx.clamp(min=0)
        pool = self.pool
        ctx_k = pool.dk.view(-1, *pool.dk.shape[2:])[flat]
        ctx_v = pool.dv.view(-1, *pool.dv.shape[2:])[flat]
        positions = seq_lens[:, None] + torch.arange(cfg.block_size, device=dev)  # as trained
        logits = self.drafter.draft(ctx_k, ctx_v, idx >= 0, bonus, positions, self.target.wte.weight,
                                    self.target.logits)
        return logits[:, :self.spec.block_size - 1]
