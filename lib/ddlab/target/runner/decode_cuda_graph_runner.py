"""SGLang 0.5.23's decode/verify graph runner, where 0.5.23 keeps it.

``sglang/srt/model_executor/runner/decode_cuda_graph_runner.py`` holds
``DecodeCudaGraphRunner`` (class at line 251 in 0.5.23); so does this file, so a
traceback of the target names the same file, class and methods, and a probe
written for one (``--probe-fn ...runner.decode_cuda_graph_runner.DecodeCudaGraphRunner.fill_from``)
reads the same on the other.
"""

from __future__ import annotations

from ddlab.target.cuda_graph_runner import CudaGraphRunner, _grouped_foreach_copy_

__all__ = ["DecodeCudaGraphRunner"]


class DecodeCudaGraphRunner(CudaGraphRunner):
    """SGLang 0.5.23's runner: ``execute`` -> ``load_batch`` -> ``fill_from`` + ``_copy_replay_inputs``.

    0.5.23 loads a DFLASH verify batch at plan time (``fill_from``, which skips
    None slots) and copies ``input_ids`` and ``positions`` again at execute
    (``_copy_replay_inputs``, a plain ``copy_`` that does not); the target does
    both in one ``load_batch``.
    """

    def can_run(self, fb) -> bool:
        """0.5.23's width guard: a batch wider than the graph runs eagerly."""
        return fb.tokens_per_req == self.T and super().can_run(fb)

    def execute(self, forward_batch):
        self.load_batch(forward_batch)
        return self._run()

    def load_batch(self, forward_batch):
        self._pad(forward_batch)
        self.fill_from(forward_batch)
        self._copy_replay_inputs(forward_batch)
        self.buffers.custom_mask[:self.raw_bs].copy_(forward_batch.custom_mask)

    def fill_from(self, forward_batch):
        """Every registry slot in one grouped copy; a None slot is skipped when ``skip_none``."""
        dsts, srcs = [], []
        for name in self.FIELDS:
            src = getattr(forward_batch, name, None)
            if src is None and self.skip_none:
                continue
            dsts.append(self._dst(name))
            srcs.append(src)
        if dsts:
            _grouped_foreach_copy_(dsts, srcs)

    def _copy_replay_inputs(self, forward_batch) -> None:
        self.buffers.input_ids[: self.raw_num_token].copy_(forward_batch.input_ids)
        self.buffers.positions[: self.raw_num_token].copy_(forward_batch.positions)
