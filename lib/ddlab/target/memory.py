"""Device memory accounting and the KV pool, divided the way SGLang divides them.

Contract:

- ``DeviceMemory``: the budget. On CUDA it reads the GPU's real free memory
  (``torch.cuda.mem_get_info``); on CPU it is the declared
  ``--device-memory-gb``, and every allocation made through it (weights, KV
  pool, static graph buffers) is charged against it. ``avail_gb()`` is what
  the startup lines print as ``avail mem``.
- ``KVPool``: per-layer K and V pools of shape (slots, slot_tokens, H, hd) in
  fp32, plus (when speculating) the drafter's keys and values of the target's
  hidden state at every position (``dk``, ``dv``), which it attends to. A
  slot holds one request: ``context_length`` tokens plus room for one verify
  step's tree. One extra slot takes the
  writes of padded rows of a static batch. ``plan_kv_pool`` sizes it as SGLang
  does: the static fraction of the budget minus the weights; if that cannot
  hold one full-context request, startup fails with SGLang's text.
"""

from __future__ import annotations

import torch

from ddlab.target.log_lines import NOT_ENOUGH_MEMORY

__all__ = ["DeviceMemory", "KVPool", "plan_kv_pool", "GB"]

GB = float(1 << 30)


class DeviceMemory:
    def __init__(self, device: torch.device, declared_gb: float):
        self.device = device
        self.cuda = device.type == "cuda"
        self.total_bytes = self._free() if self.cuda else int(declared_gb * GB)
        self.charged = 0  # bytes charged on CPU

    def _free(self) -> int:
        torch.cuda.synchronize(self.device)
        return torch.cuda.mem_get_info(self.device)[0]

    def avail_bytes(self) -> int:
        return self._free() if self.cuda else self.total_bytes - self.charged

    def avail_gb(self) -> float:
        return self.avail_bytes() / GB

    def used_gb(self) -> float:
        """What this budget has lost since it was taken (the weights, pool, graphs so far)."""
        return (self.total_bytes - self.avail_bytes()) / GB

    def charge(self, nbytes: int) -> None:
        """Account an allocation (CPU only: CUDA's free memory already moved)."""
        if not self.cuda:
            self.charged += nbytes


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def plan_kv_pool(memory: DeviceMemory, mem_fraction_static: float, slot_bytes: int,
                 max_running_requests: int, error=None) -> int:
    """How many request slots the KV pool gets (>= 1, plus the padding slot), or SGLang's error
    (``error(rest_bytes)``: the exception to raise instead, given what the pool could have)."""
    rest = memory.avail_bytes() - memory.total_bytes * (1 - mem_fraction_static)
    slots = int(rest // slot_bytes) - 1 if rest > 0 else 0
    if slots < 1:
        raise error(rest - slot_bytes) if error else RuntimeError(NOT_ENOUGH_MEMORY)
    return min(slots, max_running_requests)


class KVPool:
    """Preallocated K/V pools in one tensor; slot ``n_slots`` is the padding slot.

    ``k[i]``/``v[i]`` (layer i) and ``dk``/``dv`` (the drafter's) are views of
    one (n_pools, slots + 1, slot_tokens, H, hd) tensor, so moving accepted
    tokens is one gather and one scatter for every pool at once.
    """

    def __init__(self, n_layer, n_head, head_dim, d_model, n_slots, slot_tokens, device,
                 with_drafter: bool):
        n_pools = 2 * n_layer + (2 if with_drafter else 0)
        self.data = torch.zeros(n_pools, n_slots + 1, slot_tokens, n_head, head_dim, device=device)
        self.k = [self.data[2 * i] for i in range(n_layer)]
        self.v = [self.data[2 * i + 1] for i in range(n_layer)]
        self.dk, self.dv = (self.data[-2], self.data[-1]) if with_drafter else (None, None)
        self.n_slots, self.slot_tokens, self.device = n_slots, slot_tokens, device
        self.pad_slot = n_slots
        self.free = list(range(n_slots - 1, -1, -1))

    @staticmethod
    def slot_bytes(n_layer, d_model, slot_tokens, with_drafter) -> int:
        per_token = 4 * d_model * 2 * (n_layer + (1 if with_drafter else 0))
        return per_token * slot_tokens

    def kv_bytes(self) -> tuple[int, int]:
        return tensor_bytes(self.k), tensor_bytes(self.v)

    def nbytes(self) -> int:
        return tensor_bytes([self.data])

    @property
    def capacity_tokens(self) -> int:
        return self.n_slots * self.slot_tokens

    def alloc(self) -> int:
        return self.free.pop()

    def release(self, slot: int) -> None:
        self.free.append(slot)

    def move(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Copy tokens at flat locations ``src`` to ``dst`` in every pool (gather first)."""
        flat = self.data.view(self.data.shape[0], -1, *self.data.shape[3:])
        flat[:, dst] = flat[:, src]
