"""Train ddlab's built-in target and its block drafter: ``python -m ddlab.target.train``.

Contract: from the Python standard library's own sources (every machine that
runs ddlab has them; files sorted by path, every 25th held out) and a fixed
seed, train

1. the target, a 3.2 M-parameter byte-level transformer: AdamW under bf16
   autocast on random 320-byte windows; reports held-out bits/byte (fp32);
2. the drafter, by self-distillation, as real DFlash drafters are trained:
   the target greedily continues prompts cut from the corpus (fp32, through
   the serving KV path, so its hidden states are exactly what the server
   will feed the drafter), and the drafter learns to predict those greedy
   tokens from the target's hidden states and the bonus token. A drafter
   trained on raw corpus text accepted far less (prototype: 2-4 tokens).

Then writes fp16 safetensors + json configs (default: the package's
``weights/``) and prints a card ending in one JSON line. The whole run is
meant to take <= 15 minutes on 2 CPU cores; ``--quick`` is a smoke run.
"""

from __future__ import annotations

import argparse
import json
import math
import sysconfig
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from ddlab.target.checkpoint import WEIGHTS_DIR, save_model
from ddlab.target.model import Drafter, DrafterConfig, KVView, Target, TargetConfig

__all__ = ["load_corpus", "main"]

HOLDOUT_EVERY = 25


def load_corpus() -> tuple[torch.Tensor, torch.Tensor]:
    """(train bytes, held-out bytes) of the stdlib's .py files, uint8 tensors."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    train, held = bytearray(), bytearray()
    for i, p in enumerate(files):
        (held if i % HOLDOUT_EVERY == 0 else train).extend(p.read_bytes() + b"\n")
    return torch.frombuffer(train, dtype=torch.uint8), torch.frombuffer(held, dtype=torch.uint8)


def windows(data, n, length, gen):
    """n random windows of ``length`` bytes, as int64 (n, length)."""
    starts = torch.randint(0, len(data) - length, (n,), generator=gen)
    return torch.stack([data[s:s + length] for s in starts.tolist()]).long()


def lr_at(step, total, peak, warmup=50):
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))


def train_target(data, cfg, steps, batch, gen, log):
    model = Target(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.1)
    T = cfg.context_length
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, 2e-3)
        x = windows(data, batch, T + 1, gen)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits, _ = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == steps - 1:
            log(f"target step {step:4d}/{steps}  loss {loss.item() / math.log(2):.3f} bits/byte")
    return model.eval().requires_grad_(False)


@torch.inference_mode()
def bits_per_byte(model, data, n=64, seed=1):
    x = windows(data, n, model.cfg.context_length + 1, torch.Generator().manual_seed(seed))
    logits, _ = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, model.cfg.vocab_size), x[:, 1:].reshape(-1))
    return loss.item() / math.log(2)


@torch.inference_mode()
def greedy_rollouts(model, prompts, n_new):
    """Greedy continuations through the serving KV path.

    prompts (R, P) -> tokens (R, P + n_new) and the final hidden state at
    every position (R, P + n_new, D): exactly what the server computes.
    """
    cfg = model.cfg
    R, P = prompts.shape
    S, H, hd = P + n_new, cfg.n_head, cfg.d_model // cfg.n_head
    k = [torch.zeros(R, S, H, hd) for _ in range(cfg.n_layer)]
    v = [torch.zeros(R, S, H, hd) for _ in range(cfg.n_layer)]
    toks = torch.zeros(R, S, dtype=torch.long)
    feats = torch.zeros(R, S, cfg.d_model)
    toks[:, :P] = prompts
    base = torch.arange(R) * S
    causal = torch.ones(P, P, dtype=torch.bool).tril()[None, None]
    kv = KVView(k, v, (base[:, None] + torch.arange(P)).reshape(-1), slice(None), P, causal)
    feats[:, :P] = model.step(prompts, torch.arange(P).expand(R, -1), kv)
    for t in range(P, S - 1):
        toks[:, t] = model.logits(feats[:, t - 1]).argmax(-1)
        kv = KVView(k, v, base + t, slice(None), t + 1, None)
        feats[:, t] = model.step(toks[:, t:t + 1], torch.full((R, 1), t), kv)[:, 0]
    toks[:, S - 1] = model.logits(feats[:, S - 2]).argmax(-1)
    return toks, feats


def distill_set(model, data, n_seq, gen, log, n_new=128, batch=128):
    """Rollouts from prompts of assorted lengths: list of (P, tokens, feats)."""
    sets = []
    for i in range(0, n_seq, batch):
        P = [16, 48, 96, 128, 160, 192][(i // batch) % 6]
        toks, feats = greedy_rollouts(model, windows(data, batch, P, gen), n_new)
        sets.append((P, toks, feats.half()))
        log(f"rollouts {i + batch}/{n_seq} (prompt {P} bytes + {n_new} greedy)")
    return sets


def anchors(sets, n, L, W, gen):
    """A batch for the drafter: context states, validity, bonus ids, targets."""
    P, toks, feats = sets[torch.randint(len(sets), (1,), generator=gen).item()]
    R, S = toks.shape
    rows = torch.randint(R, (n,), generator=gen)
    p = torch.randint(P - 1, S - L, (n,), generator=gen)  # the state that predicted the bonus
    idx = p[:, None] + torch.arange(-W + 1, 1)
    valid = idx >= 0
    ctx = feats[rows[:, None], idx.clamp(min=0)].float()
    bonus = toks[rows, p + 1]
    targets = toks[rows[:, None], p[:, None] + 2 + torch.arange(L - 1)]
    return ctx, valid, bonus, targets


def train_drafter(target, sets, cfg, steps, batch, gen, log):
    model = Drafter(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.01)
    wte = target.wte.weight.detach()
    L = cfg.block_size
    weight = torch.exp(-torch.arange(L - 1) / 7.0)
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, 2e-3, warmup=30)
        ctx, valid, bonus, targets = anchors(sets, batch, L, cfg.ctx_window, gen)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(ctx, valid, bonus, wte)
        ce = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), targets.reshape(-1),
                             reduction="none").view(batch, L - 1)
        loss = (ce * weight).sum() / (weight.sum() * batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == steps - 1:
            log(f"drafter step {step:4d}/{steps}  weighted loss {loss.item():.3f}")
    return model.eval().requires_grad_(False)


@torch.inference_mode()
def chain_accept(drafter, target, sets, n=2048, seed=2):
    """Mean accept length of a full chain (drafts matched in a row + the bonus) on held-out rollouts."""
    cfg = drafter.cfg
    ctx, valid, bonus, targets = anchors(sets, n, cfg.block_size, cfg.ctx_window,
                                         torch.Generator().manual_seed(seed))
    hit = drafter(ctx, valid, bonus, target.wte.weight).argmax(-1) == targets
    run = hit.long().cumprod(dim=1).sum(dim=1)
    return 1.0 + run.float().mean().item(), hit.float().mean(0).tolist()


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m ddlab.target.train", description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", type=Path, default=WEIGHTS_DIR, help="where to write the weights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target-steps", type=int, default=900)
    p.add_argument("--drafter-steps", type=int, default=2000)
    p.add_argument("--rollouts", type=int, default=2048, help="greedy sequences for distillation")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--quick", action="store_true", help="a smoke run: a few steps of each")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.target_steps, args.drafter_steps, args.rollouts = 20, 20, 256
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    t0 = time.monotonic()
    log = lambda msg: print(f"[{time.monotonic() - t0:7.1f}s] {msg}", flush=True)
    train, held = load_corpus()
    log(f"corpus: {len(train) / 1e6:.1f} MB train, {len(held) / 1e6:.1f} MB held out")
    tcfg, dcfg = TargetConfig(), DrafterConfig()
    target = train_target(train, tcfg, args.target_steps, 16, gen, log)
    t_target = time.monotonic() - t0
    bpb = bits_per_byte(target, held)
    log(f"target held-out: {bpb:.3f} bits/byte")
    sets = distill_set(target, train, args.rollouts, gen, log)
    held_sets = distill_set(target, held, 256, torch.Generator().manual_seed(args.seed + 1), log)
    t_data = time.monotonic() - t0 - t_target
    drafter = train_drafter(target, sets, dcfg, args.drafter_steps, 128, gen, log)
    accept, per_pos = chain_accept(drafter, target, held_sets)
    wall = time.monotonic() - t0
    sizes = [save_model(target, args.out_dir / "ddlab-tiny.safetensors", args.out_dir / "ddlab-tiny.json"),
             save_model(drafter, args.out_dir / "ddlab-tiny-drafter.safetensors",
                        args.out_dir / "ddlab-tiny-drafter.json")]
    n_t = sum(p.numel() for p in target.parameters())
    n_d = sum(p.numel() for p in drafter.parameters())
    print(f"\n== ddlab target training ({torch.get_num_threads()} threads) ==\n"
          f"target   {n_t / 1e6:.2f} M params  {bpb:.3f} bits/byte held out  ({t_target:.0f} s)\n"
          f"rollouts {args.rollouts} x 128 greedy bytes  ({t_data:.0f} s)\n"
          f"drafter  {n_d / 1e6:.2f} M params  chain-of-15 accept length {accept:.2f} held out\n"
          f"         top-1 by position: {' '.join(f'{h:.2f}' for h in per_pos)}\n"
          f"weights  {sum(sizes) / 1e6:.2f} MB fp16 in {args.out_dir}\n"
          f"wall     {wall:.0f} s")
    print(json.dumps({"target_params": n_t, "drafter_params": n_d, "bits_per_byte": round(bpb, 4),
                      "chain_accept_length": round(accept, 3), "weights_bytes": sum(sizes),
                      "target_s": round(t_target, 1), "wall_s": round(wall, 1),
                      "threads": torch.get_num_threads(), "seed": args.seed}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
