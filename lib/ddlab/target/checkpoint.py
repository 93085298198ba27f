"""Checkpoints of the target and drafter: built-in names or a directory.

A model is a safetensors file (stored in fp16) plus a small json config. The
built-in ones live in this package's ``weights/`` folder as ``NAME.safetensors``
+ ``NAME.json``; a directory holds ``model.safetensors`` + ``config.json``.
Loaded weights are cast to fp32: greedy decoding must match token for token,
and bf16 arithmetic breaks that.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ddlab.target.model import Drafter, DrafterConfig, Target, TargetConfig, pack_for_cpu

__all__ = ["BUILTIN", "WEIGHTS_DIR", "resolve", "read_config", "load_model", "save_model"]

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
BUILTIN = ("ddlab-tiny", "ddlab-tiny-drafter")
DEFAULT_DRAFTER = {"ddlab-tiny": "ddlab-tiny-drafter"}


def resolve(path: str) -> tuple[Path, Path]:
    """(weights file, config file) of a built-in name or a weights directory; else the
    error SGLang's launcher meets through transformers: a path that cannot be a Hugging
    Face repo id (two or more ``/``) is huggingface_hub's ``Repo id must be in the form
    ...`` (0.5.23's real run: tests/fixtures/logs/sglang/model_not_found__0.5.23__local-model-dir-missing.log)."""
    if path in BUILTIN:
        return WEIGHTS_DIR / f"{path}.safetensors", WEIGHTS_DIR / f"{path}.json"
    d = Path(path)
    if d.is_dir() and (d / "model.safetensors").is_file() and (d / "config.json").is_file():
        return d / "model.safetensors", d / "config.json"
    if path.count("/") > 1:
        raise OSError(f"Repo id must be in the form 'repo_name' or 'namespace/repo_name': '{path}'. "
                      "Use `repo_type` argument if needed.")
    raise OSError(f"{path} is not a local folder and is not a valid model identifier: ddlab's target "
                  f"loads a built-in name ({', '.join(BUILTIN)}) or a folder holding model.safetensors "
                  "and config.json")  # the first half is Hugging Face's text, as SGLang prints it


def read_config(path: str) -> dict:
    """The config of a built-in name or a weights directory (SGLang's launcher reads the
    model's config before anything else: a wrong path fails there, with no weights read)."""
    return json.loads(resolve(path)[1].read_text())


def load_model(path: str, device="cpu", pack=True):
    """Build the Target or Drafter that ``path`` names, in fp32, in eval mode.

    On CPU its Linears run through FBGEMM (``model.pack_for_cpu``) unless ``pack`` is False.
    """
    wfile, cfile = resolve(path)
    raw = json.loads(cfile.read_text())
    kind = raw.pop("kind")
    model = Target(TargetConfig(**raw)) if kind == "target" else Drafter(DrafterConfig(**raw))
    state = {k: t.float() for k, t in load_file(str(wfile)).items()}
    model.load_state_dict(state)
    model = model.to(device).eval().requires_grad_(False)
    return pack_for_cpu(model) if pack and torch.device(device).type == "cpu" else model


def save_model(model, weights_file: Path, config_file: Path) -> int:
    """Write fp16 safetensors + json config; returns the weights file's size in bytes."""
    kind = "target" if isinstance(model, Target) else "drafter"
    state = {k: t.detach().to(torch.float16).contiguous() for k, t in model.state_dict().items()}
    weights_file.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(weights_file))
    config_file.write_text(json.dumps({"kind": kind, **model.cfg.to_dict()}, indent=2) + "\n")
    return weights_file.stat().st_size
