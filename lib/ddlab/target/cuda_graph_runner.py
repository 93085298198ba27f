"""Static-buffer verify graphs, shaped like SGLang's ``cuda_graph_runner.py``.

Contract: at startup ``CudaGraphRunner`` allocates static buffers for batch
sizes up to ``--cuda-graph-max-bs`` and ``tokens_per_req`` tokens per request
(budget+1 for DDTree, the block size for DFlash, 1 without speculation), and
on CUDA captures one ``torch.cuda.CUDAGraph`` of the verify forward per batch
size; on CPU the same static-buffer forward runs without capture. At every
verify, ``replay(forward_batch)`` runs ``replay_prepare``, which pads the
batch to a captured size and calls ``populate_from_forward_batch``, which
copies the live batch's fields (``input_ids``, ``req_pool_indices``,
``seq_lens``, ``out_cache_loc``, ``positions``, ``num_token_non_padded``)
into the static buffers with ``_grouped_foreach_copy_``, as SGLang does.
That copy is where the field's two replay crashes happen, and they happen
here for the same reasons: a field the batch was built without is None
(``TypeError ... NoneType``), or the buffers were sized for another number
of tokens per request (size mismatch). Only this path reads
``num_token_non_padded``: it keeps the padded rows' KV writes in the padding
slot, so the eager path never notices the field is missing.

If the buffers do not fit what is left of the device budget, startup fails
with SGLang's ``Capture cuda graph failed`` text and its list of solutions.
"""

from __future__ import annotations

import logging
import time

import torch

from ddlab.target.memory import GB

__all__ = ["CudaGraphRunner", "DraftGraphRunner", "ForwardBatch", "CAPTURE_FAILED_MSG",
           "_grouped_foreach_copy_"]

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

CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
)


class ForwardBatch:
    """One verify (or decode) step's inputs, flattened over (request, token)."""

    __slots__ = ("batch_size", "tokens_per_req", "input_ids", "req_pool_indices", "seq_lens",
                 "out_cache_loc", "positions", "num_token_non_padded", "custom_mask")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))


def _grouped_foreach_copy_(dsts, srcs):
    """Copy each src into its dst, one ``torch._foreach_copy_`` per (device, dtype) group."""
    groups = {}
    for dst, src in zip(dsts, srcs):
        ds, ss = groups.setdefault((dst.device, dst.dtype), ([], []))
        ds.append(dst)
        ss.append(src)
    for ds, ss in groups.values():
        torch._foreach_copy_(ds, ss)


class CudaGraphRunner:
    FIELDS = ("input_ids", "req_pool_indices", "seq_lens", "out_cache_loc", "positions")

    def __init__(self, runner, bs_list, tokens_per_req, padding=True):
        self.runner, self.pool = runner, runner.pool
        self.bs_list, self.T, self.padding = sorted(bs_list), tokens_per_req, padding
        self.max_bs = self.bs_list[-1]
        self.graphs, self.outputs = {}, {}
        self.cuda = runner.device.type == "cuda"

    def static_bytes(self) -> int:
        """Static inputs + the largest batch's activations (all graphs share one pool)."""
        n, cfg, S = self.max_bs * self.T, self.runner.target.cfg, self.pool.slot_tokens
        inputs = n * 8 * 4 + self.max_bs * (8 * 2 + self.T * self.T)
        act = n * 4 * (6 * cfg.d_model + cfg.d_ff + 2 * cfg.n_head * S + cfg.vocab_size)
        keys = self.max_bs * S * cfg.d_model * 4 * 2
        return inputs + act + keys

    def capture(self, memory):
        """Allocate the static buffers and capture (CUDA) or dry-run (CPU) each batch size."""
        need = self.static_bytes()
        logger.info(f"Capture cuda graph begin. This can take up to several minutes. "
                    f"avail mem={memory.avail_gb():.2f} GB")
        t0, before = time.perf_counter(), memory.avail_bytes()
        try:
            if need > memory.avail_bytes():
                raise RuntimeError(f"static verify buffers for bs {self.bs_list} x {self.T} tokens/req "
                                   f"need {need / GB:.4f} GB, only {memory.avail_gb():.4f} GB is left")
            self._allocate()
            for bs in reversed(self.bs_list):
                self._capture_one(bs)
        except Exception as e:
            raise Exception(f"Capture cuda graph failed: {e}\n{CAPTURE_FAILED_MSG}") from e
        memory.charge(need)
        used = (before - memory.avail_bytes()) / GB
        if not self.cuda:
            logger.info(f"CPU device: static buffers allocated for bs {self.bs_list} x {self.T} "
                        f"tokens/req; the forward runs from them without CUDA graph capture")
        logger.info(f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. "
                    f"mem usage={used:.2f} GB. avail mem={memory.avail_gb():.2f} GB.")
        return used

    def _allocate(self):
        n, dev, pool = self.max_bs * self.T, self.runner.device, self.pool
        self.input_ids = torch.zeros(n, dtype=torch.long, device=dev)
        self.positions = torch.zeros(n, dtype=torch.long, device=dev)
        self.req_pool_indices = torch.full((self.max_bs,), pool.pad_slot, dtype=torch.long, device=dev)
        self.seq_lens = torch.zeros(self.max_bs, dtype=torch.long, device=dev)
        self.num_token_non_padded = torch.zeros((), dtype=torch.long, device=dev)
        self.custom_mask = torch.eye(self.T, dtype=torch.bool, device=dev).repeat(self.max_bs, 1, 1)
        self.token_index = torch.arange(n, device=dev)
        self.pad_loc = pool.pad_slot * pool.slot_tokens + self.token_index % self.T
        self.out_cache_loc = self.pad_loc.clone()

    def _forward(self, bs):
        n, T = bs * self.T, self.T
        loc = torch.where(self.token_index[:n] < self.num_token_non_padded,
                          self.out_cache_loc[:n], self.pad_loc[:n])
        return self.runner.forward_tokens(self.input_ids[:n].view(bs, T), self.positions[:n].view(bs, T),
                                          self.seq_lens[:bs], self.custom_mask[:bs], loc,
                                          self.req_pool_indices[:bs], self.pool.slot_tokens)

    def _capture_one(self, bs):
        if not self.cuda:
            self.outputs[bs] = self._forward(bs)  # a dry run: shapes and memory checked
            return
        pool = next(iter(self.graphs.values())).pool() if self.graphs else None
        self.graphs[bs], self.outputs[bs] = capture_graph(lambda: self._forward(bs), pool)

    def can_run(self, fb) -> bool:
        if fb.batch_size > self.max_bs:
            return False
        return self.padding or fb.batch_size in self.bs_list

    def populate_from_forward_batch(self, fb, raw_bs, raw_num_token):
        dsts = [self.input_ids[:raw_num_token], self.req_pool_indices[:raw_bs], self.seq_lens[:raw_bs],
                self.out_cache_loc[:raw_num_token], self.positions[:raw_num_token],
                self.num_token_non_padded]
        srcs = [fb.input_ids, fb.req_pool_indices, fb.seq_lens, fb.out_cache_loc, fb.positions,
                fb.num_token_non_padded]
        _grouped_foreach_copy_(dsts, srcs)
        self.custom_mask[:raw_bs].copy_(fb.custom_mask)

    def replay_prepare(self, fb) -> int:
        raw_bs = fb.batch_size
        bs = next(b for b in self.bs_list if b >= raw_bs)
        if bs != raw_bs:
            self.req_pool_indices[raw_bs:bs].fill_(self.pool.pad_slot)
        self.populate_from_forward_batch(fb, raw_bs, raw_bs * self.T)
        return bs

    def replay(self, fb):
        """Run the verify forward from the static buffers; -> argmax ids (raw_bs, T)."""
        bs = self.replay_prepare(fb)
        if self.cuda:
            self.graphs[bs].replay()
            out = self.outputs[bs]
        else:
            out = self._forward(bs)
        return out[:fb.batch_size]


class DraftGraphRunner:
    """CUDA graphs of the drafter's proposal (slots, seq_lens, bonus -> argmax or top-k), per batch size.

    CUDA only: the drafter is a few dozen small kernels whose launches cost
    more than their work; replaying them as one graph is what makes DDTree
    pay on a GPU. Padded rows read the padding slot with no valid context.
    """

    def __init__(self, runner, bs_list):
        self.runner, self.bs_list, self.max_bs = runner, sorted(bs_list), max(bs_list)
        self.graphs, self.outputs = {}, {}

    def capture(self, memory) -> float:
        logger.info(f"Capture draft cuda graph begin. This can take up to several minutes. "
                    f"avail mem={memory.avail_gb():.2f} GB")
        t0, before, dev = time.perf_counter(), memory.avail_bytes(), self.runner.device
        try:
            self.inputs = torch.zeros(3, self.max_bs, dtype=torch.long, device=dev)
            self.inputs[0].fill_(self.runner.pool.pad_slot)
            pool = None
            for bs in reversed(self.bs_list):
                graph, self.outputs[bs] = capture_graph(lambda: self._forward(bs), pool)
                pool, self.graphs[bs] = graph.pool(), graph
        except Exception as e:
            raise Exception(f"Capture cuda graph failed: {e}\n{CAPTURE_FAILED_MSG}") from e
        used = (before - memory.avail_bytes()) / GB
        logger.info(f"Capture draft cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. "
                    f"mem usage={used:.2f} GB. avail mem={memory.avail_gb():.2f} GB.")
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
