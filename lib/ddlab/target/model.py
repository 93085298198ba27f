"""The two networks of ddlab's target: a byte-level causal transformer and its block drafter.

Contract:

- ``Target``: 256-byte vocabulary, pre-norm transformer with RoPE and tied
  embeddings. ``forward(idx)`` is the training path (causal, full sequence).
  ``step(ids, pos, kv)`` is the serving path: it appends the new tokens' keys
  and values to the KV pool through ``kv`` (see ``KVView``) and attends under
  ``kv.mask``, so one call runs a prefill, an autoregressive step or a whole
  draft tree under a tree attention mask. It returns the final normed hidden
  states; logits are ``hidden @ wte.T``.
- ``Drafter``: a DFlash-like block drafter. From the target's hidden states
  at the last ``ctx_window`` positions (the last one is the state that
  predicted the pending bonus token) and the bonus token, one pass over the
  block ``[bonus, MASK x (block_size-1)]`` gives the marginals of the next
  ``block_size-1`` tokens. It owns no vocabulary matrices: it reads the
  target's embedding and LM head, as DFlash drafters share the target's.

Why so small: the target must train in minutes on two CPU cores and decode
fast enough on a CPU that speculation pays; everything else about it (tree
verification, KV bookkeeping, memory, graphs) is the real thing.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["TargetConfig", "DrafterConfig", "Target", "Drafter", "KVView", "pack_for_cpu"]


@dataclass
class TargetConfig:
    vocab_size: int = 256
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 256
    d_ff: int = 1024
    context_length: int = 320
    rope_theta: float = 10000.0
    architecture: str = "DdlabTinyForCausalLM"

    def to_dict(self):
        return asdict(self)


@dataclass
class DrafterConfig:
    vocab_size: int = 256
    n_head: int = 4
    d_model: int = 256
    d_ff: int = 1024
    block_size: int = 16  # bonus + block_size-1 drafted positions
    ctx_window: int = 64  # target hidden states the block attends to
    rope_theta: float = 10000.0
    architecture: str = "DdlabTinyDFlashDrafter"

    def to_dict(self):
        return asdict(self)


class Rope(nn.Module):
    """RoPE cos/sin tables for every position below ``max_pos``, looked up per token."""

    def __init__(self, head_dim, theta, max_pos=4096):
        super().__init__()
        inv = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        ang = torch.arange(max_pos, dtype=torch.float32).unsqueeze(-1) * inv
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, positions):
        """(B, T) positions -> cos, sin of shape (B, T, 1, 1, hd/2): broadcast over (q|k, heads)."""
        return self.cos[positions][:, :, None, None], self.sin[positions][:, :, None, None]


def apply_rope(x, cos, sin):
    """x: (B, T, ..., hd), rotated by position in halves."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


@dataclass
class KVView:
    """Where one serving step reads and writes the KV pool.

    ``k``/``v``: per-layer pools of shape (slots, slot_tokens, H, hd).
    ``write_loc``: flat token index (slot * slot_tokens + position) of every
    new token, row-major over (request, token). ``slots``: the pool slot of
    each request (a tensor; or a slice, which reads a view, no copy).
    ``n_keys``: how many leading positions of each slot to attend over.
    ``mask``: (R, 1, T, n_keys) bool, True where a query may look.
    """

    k: list
    v: list
    write_loc: torch.Tensor
    slots: object
    n_keys: int
    mask: torch.Tensor

    def attend(self, layer, q, k, v):
        """q, k, v: (R, T, H, hd) -> (R, H, T, hd), after writing k and v to the pool."""
        H, hd = q.shape[2:]
        kp, vp = self.k[layer], self.v[layer]
        kp.view(-1, H, hd).index_copy_(0, self.write_loc, k.reshape(-1, H, hd))
        vp.view(-1, H, hd).index_copy_(0, self.write_loc, v.reshape(-1, H, hd))
        keys, vals = kp[self.slots, :self.n_keys], vp[self.slots, :self.n_keys]
        return F.scaled_dot_product_attention(q.transpose(1, 2), keys.transpose(1, 2),
                                              vals.transpose(1, 2), attn_mask=self.mask)


class Block(nn.Module):
    """Pre-norm attention + MLP. ``kv`` None: causal self-attention (training)."""

    def __init__(self, d, n_head, d_ff):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d, bias=False)

    def qkv_heads(self, x, cos, sin):
        """(B, T, D) -> q, k (rotated), v, each (B, T, H, hd)."""
        B, T, D = x.shape
        qkv = self.qkv(self.ln1(x)).view(B, T, 3, self.n_head, D // self.n_head)
        qk = apply_rope(qkv[:, :, :2], cos, sin)
        return qk[:, :, 0], qk[:, :, 1], qkv[:, :, 2]

    def mlp(self, x):
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))

    def forward(self, x, cos, sin, layer=0, kv=None):
        B, T, D = x.shape
        q, k, v = self.qkv_heads(x, cos, sin)
        if kv is None:
            y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True)
        else:
            y = kv.attend(layer, q, k, v)
        return self.mlp(x + self.proj(y.transpose(1, 2).reshape(B, T, D)))


class Target(nn.Module):
    def __init__(self, cfg: TargetConfig):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_head, cfg.d_ff) for _ in range(cfg.n_layer))
        self.ln_f = nn.RMSNorm(cfg.d_model)
        self.rope = Rope(cfg.d_model // cfg.n_head, cfg.rope_theta)
        nn.init.normal_(self.wte.weight, std=0.02)
        for b in self.blocks:
            for lin in (b.proj, b.down):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def hidden(self, idx, positions, kv=None):
        cos, sin = self.rope(positions)
        x = self.wte(idx)
        for i, block in enumerate(self.blocks):
            x = block(x, cos, sin, i, kv)
        return self.ln_f(x)

    def logits(self, h):
        head = getattr(self, "packed_head", None)
        return head(h) if head is not None else F.linear(h, self.wte.weight)

    def forward(self, idx):
        """Training path: (B, T) bytes -> (logits (B, T, V), final hidden (B, T, D))."""
        pos = torch.arange(idx.shape[1], device=idx.device).expand(idx.shape[0], -1)
        h = self.hidden(idx, pos)
        return self.logits(h), h

    def step(self, ids, positions, kv: KVView):
        """Serving path: (R, T) ids at (R, T) positions -> final hidden (R, T, D)."""
        return self.hidden(ids, positions, kv)


class Drafter(nn.Module):
    """One non-causal block: [bonus, MASK...] queries over [projected target states ; block].

    The target states enter only as keys and values (``ctx_kv``), so a server
    computes them once per token and caches them, as DFlash does; ``draft``
    runs the block against such cached keys. ``forward`` is both, for training.
    """

    def __init__(self, cfg: DrafterConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.ctx_norm = nn.RMSNorm(d)
        self.ctx_proj = nn.Linear(d, d, bias=False)
        self.mask_emb = nn.Parameter(torch.randn(d) * 0.02)
        self.block = Block(d, cfg.n_head, cfg.d_ff)
        self.ln_f = nn.RMSNorm(d)
        self.rope = Rope(d // cfg.n_head, cfg.rope_theta)

    def ctx_kv(self, h, positions):
        """Target states (B, N, D) at positions (B, N) -> keys, values (B, N, H, hd), rotated."""
        x = self.ctx_proj(self.ctx_norm(h)).to(h.dtype)  # under autocast: back to fp32, as the block is
        _, k, v = self.block.qkv_heads(x, *self.rope(positions))
        return k, v

    def draft(self, ctx_k, ctx_v, valid, bonus, positions, wte, head):
        """ctx_k/v (R, W, H, hd) and valid (R, W) of the last W states; bonus (R,) at
        positions[:, 0]; wte, head: the target's embedding and LM head.
        -> logits (R, block_size-1, V) of the tokens after the bonus."""
        b, (R, L), D = self.block, positions.shape, wte.shape[1]
        x = torch.cat([wte[bonus].unsqueeze(1), self.mask_emb.expand(R, L - 1, D)], dim=1)
        q, k, v = b.qkv_heads(x, *self.rope(positions))
        keys = torch.cat([ctx_k, k], dim=1).transpose(1, 2)
        vals = torch.cat([ctx_v, v], dim=1).transpose(1, 2)
        mask = torch.cat([valid, valid.new_ones(R, L)], dim=1)[:, None, None, :]
        y = F.scaled_dot_product_attention(q.transpose(1, 2), keys, vals, attn_mask=mask)
        h = b.mlp(x + b.proj(y.transpose(1, 2).reshape(R, L, D)))
        return head(self.ln_f(h[:, 1:]))

    def forward(self, feats, valid, bonus, wte):
        """Training: feats (R, W, D) target states, oldest first; valid (R, W); bonus (R,)."""
        R, W, _ = feats.shape
        pos = torch.arange(W + self.cfg.block_size, device=feats.device).expand(R, -1)
        k, v = self.ctx_kv(feats, pos[:, :W])
        return self.draft(k, v, valid, bonus, pos[:, W:], wte, lambda h: F.linear(h, wte))


class PackedLinear(nn.Module):
    """A bias-free Linear through FBGEMM's GEMM on fp16 weights with fp32 activations.

    fp32 arithmetic; the weights are exactly the fp16 values the checkpoint
    stores. Why: on this class of CPU, MKL's fp32 GEMM is slow for the small
    row counts a verify step has (17 rows cost ~8x one row), and its result
    for a row depends on how many rows come with it; FBGEMM's is ~3x faster
    there and gives each row bitwise the same result alone or in a batch.
    """

    def __init__(self, weight):
        super().__init__()
        with warnings.catch_warnings():  # deprecated in torch, still the fastest here
            warnings.simplefilter("ignore")
            self.packed = torch.fbgemm_pack_gemm_matrix_fp16(weight.detach())
            self.out_features = weight.shape[0]
            self(torch.zeros(1, weight.shape[1]))  # its one-time warning, now

    def forward(self, x):
        return torch.fbgemm_linear_fp16_weight_fp32_activation(x, self.packed, None)


def pack_for_cpu(model):
    """Swap every Linear (and the tied LM head) for a PackedLinear, when torch has FBGEMM."""
    if not hasattr(torch, "fbgemm_pack_gemm_matrix_fp16"):
        return model
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear) and child.bias is None:
                setattr(module, name, PackedLinear(child.weight))
    if isinstance(model, Target):
        model.packed_head = PackedLinear(model.wte.weight)
    return model
