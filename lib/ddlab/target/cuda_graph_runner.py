"""Static-buffer verify graphs, shaped like SGLang's graph runners of both generations.

Contract: at startup a graph runner allocates static input buffers for batch
sizes up to ``--cuda-graph-max-bs-decode`` and ``tokens_per_req`` tokens per
request (budget+1 for DDTree, the block size for DFlash, 1 without
speculation), and on CUDA captures one ``torch.cuda.CUDAGraph`` of the verify
forward per batch size; on CPU the same static-buffer forward runs without
capture (it reads the same buffers a graph would). ``execute(fb)`` copies the
live batch into the buffers, pads it to a captured size and runs the forward.

The copy is where the field bugs happen, so it is SGLang's own, per
``--log-format``:

- ``CudaGraphRunner`` (0.4): ``replay`` -> ``replay_prepare``, one
  ``Tensor.copy_`` per field. A None field: ``TypeError: copy_(): argument
  'src' (position 1) must be Tensor, not NoneType``; buffers sized for another
  number of tokens per request: ``The size of tensor a (N) must match ...``.
- ``DecodeCudaGraphRunner`` (0.5.23): ``execute`` -> ``load_batch`` ->
  ``fill_from`` (a grouped copy of every registry slot) and
  ``_copy_replay_inputs`` (``input_ids`` and ``positions`` again, with a plain
  ``copy_``). ``fill_from`` skips a None field, as 0.5.23's does, and the
  graph then runs on whatever the field's buffer held before: no error,
  wrong tokens. A batch wider than the graph fails ``can_run`` (0.5.23's
  width guard) and runs eagerly instead.

``skip_none`` (``--debug-drop-verify-mode``) decides what a None does in
either copy: skip it, leaving the buffer stale, or hand it to the copy, which
raises (0.5.23's ``_grouped_foreach_copy_``: ``AttributeError: 'NoneType'
object has no attribute 'dtype'``). ``input_ids`` / ``positions`` in 0.5.23
raise either way, in ``_copy_replay_inputs``, as they do in 0.5.23. Only the
static path reads ``num_token_non_padded``: it keeps padded rows' KV writes in
the padding slot, so the eager path never misses it.

If the buffers do not fit what is left of the device budget, startup fails
with SGLang's ``Capture cuda graph failed`` text and its list of solutions.
"""

from __future__ import annotations

import logging
import time

import torch

from ddlab.target.memory import GB

__all__ = ["CudaGraphRunner", "DraftGraphRunner", "ForwardBatch", "StaticInputs", "_grouped_foreach_copy_"]

logger = logging.getLogger("ddlab.target")


def capture_graph(forward, pool=None):
    """``forward()`` run twice on a side stream (warm-up, as SGLang does), then
    captured into a ``torch.cuda.CUDAGraph`` sharing memory ``pool``; returns
    (the graph, the output tensors it replays into)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            forward()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):
        output = forward()
    return graph, output



def _log(said) -> None:
    """Log a line the dialect says (None: it says nothing there)."""
    if said:
        logger.info(said)

class ForwardBatch:
    """One verify (or decode) step's inputs, flattened over (request, token)."""

    __slots__ = ("batch_size", "tokens_per_req", "input_ids", "req_pool_indices", "seq_lens",
                 "out_cache_loc", "positions", "num_token_non_padded", "custom_mask")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))

    def without(self, field: str | None) -> ForwardBatch:
        """This batch with ``field`` None (the batch itself when ``field`` is None)."""
        if field is None:
            return self
        return ForwardBatch(**{n: getattr(self, n) for n in self.__slots__ if n != field})


def _grouped_foreach_copy_(dsts, srcs):
    """SGLang 0.5.x's: one ``torch._foreach_copy_`` per (dst dtype, src dtype) group."""
    groups = {}
    for dst, src in zip(dsts, srcs):
        key = (dst.dtype, src.dtype)
        if key not in groups:
            groups[key] = ([], [])
        groups[key][0].append(dst)
        groups[key][1].append(src)
    for group_dsts, group_srcs in groups.values():
        torch._foreach_copy_(group_dsts, group_srcs)


class StaticInputs:
    """The static buffers a graph reads (SGLang: the runner's ``buffers``)."""

    def __init__(self, max_bs, tokens_per_req, pool, device):
        n, T = max_bs * tokens_per_req, tokens_per_req
        self.input_ids = torch.zeros(n, dtype=torch.long, device=device)
        self.positions = torch.zeros(n, dtype=torch.long, device=device)
        self.req_pool_indices = torch.full((max_bs,), pool.pad_slot, dtype=torch.long, device=device)
        self.seq_lens = torch.zeros(max_bs, dtype=torch.long, device=device)
        self.num_token_non_padded = torch.zeros((), dtype=torch.long, device=device)
        self.custom_mask = torch.eye(T, dtype=torch.bool, device=device).repeat(max_bs, 1, 1)
        self.token_index = torch.arange(n, device=device)
        self.pad_loc = pool.pad_slot * pool.slot_tokens + self.token_index % T
        self.out_cache_loc = self.pad_loc.clone()


class CudaGraphRunner:
    """SGLang 0.4.x's runner: ``replay`` -> ``replay_prepare`` (one ``copy_`` per field)."""

    FIELDS = ("input_ids", "req_pool_indices", "seq_lens", "out_cache_loc", "positions",
              "num_token_non_padded")

    def __init__(self, runner, bs_list, tokens_per_req, words, padding=True, skip_none=False):
        self.runner, self.pool, self.words = runner, runner.pool, words
        self.bs_list, self.T, self.padding = sorted(bs_list), tokens_per_req, padding
        self.max_bs, self.skip_none = self.bs_list[-1], skip_none
        self.graphs, self.outputs = {}, {}
        self.cuda = runner.device.type == "cuda"
        self.raw_bs = self.raw_num_token = self.bs = 0

    def static_bytes(self) -> int:
        """Static inputs + the largest batch's activations (all graphs share one pool)."""
        n, cfg, S = self.max_bs * self.T, self.runner.target.cfg, self.pool.slot_tokens
        inputs = n * 8 * 4 + self.max_bs * (8 * 2 + self.T * self.T)
        act = n * 4 * (6 * cfg.d_model + cfg.d_ff + 2 * cfg.n_head * S + cfg.vocab_size)
        keys = self.max_bs * S * cfg.d_model * 4 * 2
        return inputs + act + keys

    def capture(self, memory, backend="full") -> float:
        """Allocate the static buffers and capture (CUDA) or dry-run (CPU) each batch size."""
        need, spec = self.static_bytes(), self.runner.spec.algorithm is not None
        _log(self.words.capture_begin("target", spec, self.T, backend, memory.avail_gb()))
        t0, before = time.perf_counter(), memory.avail_bytes()
        if need > memory.avail_bytes() and (
                oom := self.words.capture_error(need, memory.avail_bytes(), memory.total_bytes)):
            raise oom  # a dialect whose server does not wrap the allocator's error (vLLM)
        try:
            if need > memory.avail_bytes():
                raise RuntimeError(f"static verify buffers for bs {self.bs_list} x {self.T} tokens/req "
                                   f"need {need / GB:.4f} GB, only {memory.avail_gb():.4f} GB is left")
            self.buffers = StaticInputs(self.max_bs, self.T, self.pool, self.runner.device)
            for bs in reversed(self.bs_list):
                self._capture_one(bs)
        except RuntimeError as e:  # SGLang's wrapper: raised inside the except, no "from"
            raise Exception(f"Capture cuda graph failed: {e}\n{self.words.capture_failed_msg}")
        memory.charge(need)
        used = (before - memory.avail_bytes()) / GB
        if not self.cuda:
            _log(self.words.cpu_static_buffers(self.bs_list, self.T))
        _log(self.words.capture_end("target", spec, self.bs_list, time.perf_counter() - t0, used,
                                    memory.avail_gb()))
        return used

    def _forward(self, bs):
        n, T, b = bs * self.T, self.T, self.buffers
        loc = torch.where(b.token_index[:n] < b.num_token_non_padded, b.out_cache_loc[:n], b.pad_loc[:n])
        return self.runner.forward_tokens(b.input_ids[:n].view(bs, T), b.positions[:n].view(bs, T),
                                          b.seq_lens[:bs], b.custom_mask[:bs], loc,
                                          b.req_pool_indices[:bs], self.pool.slot_tokens)

    def _capture_one(self, bs):
        self.buffers.num_token_non_padded.fill_(bs * self.T)  # as SGLang's capture sets it
        if not self.cuda:
            self.outputs[bs] = self._forward(bs)  # a dry run: shapes and memory checked
            return
        pool = next(iter(self.graphs.values())).pool() if self.graphs else None
        self.graphs[bs], self.outputs[bs] = capture_graph(lambda: self._forward(bs), pool)

    def can_run(self, fb) -> bool:
        if fb.batch_size > self.max_bs:
            return False
        return self.padding or fb.batch_size in self.bs_list

    def _pad(self, fb) -> None:
        """Pick the captured size; padded rows read and write the padding slot."""
        self.raw_bs, self.raw_num_token = fb.batch_size, fb.batch_size * self.T
        self.bs = next(b for b in self.bs_list if b >= self.raw_bs)
        if self.bs != self.raw_bs:
            self.buffers.req_pool_indices[self.raw_bs:self.bs].fill_(self.pool.pad_slot)

    def _run(self):
        """The forward over the static buffers; -> argmax ids of the live rows (raw_bs, T)."""
        if self.cuda:
            self.graphs[self.bs].replay()
            out = self.outputs[self.bs]
        else:
            out = self._forward(self.bs)
        return out[:self.raw_bs]

    def replay(self, forward_batch):
        """Run the verify forward from the static buffers; -> argmax ids (raw_bs, T)."""
        self.replay_prepare(forward_batch)
        return self._run()

    execute = replay  # the entry model_runner calls, whatever the generation

    def replay_prepare(self, forward_batch):
        self._pad(forward_batch)
        for name in self.FIELDS:
            src = getattr(forward_batch, name)
            if src is None and self.skip_none:
                continue
            self._dst(name).copy_(src)
        self.buffers.custom_mask[:self.raw_bs].copy_(forward_batch.custom_mask)

    def _dst(self, name):
        """The live part of field ``name``'s static buffer."""
        buf = getattr(self.buffers, name)
        if name == "num_token_non_padded":
            return buf
        return buf[:self.raw_bs] if name in ("req_pool_indices", "seq_lens") else buf[:self.raw_num_token]




class DraftGraphRunner:
    """CUDA graphs of the drafter's proposal (slots, seq_lens, bonus -> argmax or top-k), per batch size.

    CUDA only: the drafter is a few dozen small kernels whose launches cost
    more than their work; replaying them as one graph is what makes DDTree
    pay on a GPU. Padded rows read the padding slot with no valid context.
    """

    def __init__(self, runner, bs_list, words):
        self.runner, self.bs_list, self.max_bs = runner, sorted(bs_list), max(bs_list)
        self.words = words
        self.graphs, self.outputs = {}, {}

    def capture(self, memory, backend="full") -> float:
        block = self.runner.spec.block_size
        _log(self.words.capture_begin("draft", True, block, backend, memory.avail_gb()))
        t0, before, dev = time.perf_counter(), memory.avail_bytes(), self.runner.device
        try:
            self.inputs = torch.zeros(3, self.max_bs, dtype=torch.long, device=dev)
            self.inputs[0].fill_(self.runner.pool.pad_slot)
            pool = None
            for bs in reversed(self.bs_list):
                graph, self.outputs[bs] = capture_graph(lambda: self._forward(bs), pool)
                pool, self.graphs[bs] = graph.pool(), graph
        except RuntimeError as e:  # SGLang's wrapper: raised inside the except, no "from"
            raise Exception(f"Capture cuda graph failed: {e}\n{self.words.capture_failed_msg}")
        used = (before - memory.avail_bytes()) / GB
        _log(self.words.capture_end("draft", True, self.bs_list, time.perf_counter() - t0, used,
                                    memory.avail_gb()))
        return used

    def _forward(self, bs):
        slots, seq_lens, bonus = self.inputs[:, :bs]
        return self.runner.proposal(slots, seq_lens, bonus)

    def can_run(self, bs) -> bool:
        return bs <= self.max_bs

    def run(self, slots, seq_lens, bonus):
        raw = slots.shape[0]
        bs = next(b for b in self.bs_list if b >= raw)
        self.inputs[0, raw:bs].fill_(self.runner.pool.pad_slot)
        self.inputs[1:, raw:bs].zero_()
        self.inputs[:, :raw].copy_(torch.stack([slots, seq_lens, bonus]))
        self.graphs[bs].replay()
        return tuple(t[:raw] for t in self.outputs[bs])
