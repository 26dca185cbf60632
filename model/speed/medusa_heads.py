"""Medusa heads (Cai et al. 2024): K small blocks on the model's last hidden state, each guessing a token further ahead.

Head k (1..K) reads the final (normed) hidden state at position t and guesses the token at t + k + 1: the model's
own LM head already gives t + 1. Each head is Medusa-1's residual block, h + SiLU(W h + b) (W: hidden x hidden),
fed to the model's own frozen LM head (SmolLM2 ties it to its embeddings): 576 x 577 numbers a head for SmolLM2,
about 0.66 MB in float16, where a head with an LM head of its own would be 49,152 x 576 more.

The heads were trained here (model/speed/medusa_training.py) and ship in assets/medusa/, one file per model:
<name>.safetensors (float16 weights; metadata: the model's shape and a fingerprint of its LM head, so heads are
never put on a model they were not trained on) and <name>.json (how they were trained: data, time, loss curve, each
head's accuracy on held-out text). The tree of candidates a verifying pass checks is built from those accuracies,
as Medusa builds its sparse trees (tree_paths).
"""
from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "medusa"
FORMAT = 1
TOP_GUESSES = 5  # guesses of each head kept per step (the tree takes its candidates among them)
MAX_TREE = 32  # candidates a tree may hold (one verifying pass runs them and the last accepted token)
DEFAULT_TREE = 12


class ResBlock(nn.Module):
    """Medusa-1's block: x + SiLU(W x + b). W starts at zero, so an untrained head repeats the model's own next token."""

    def __init__(self, hidden: int):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        nn.init.zeros_(self.linear.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + nn.functional.silu(self.linear(x))


class MedusaHeads(nn.Module):
    """K residual blocks over one hidden state; the LM head they feed is the model's own (not part of this module)."""

    def __init__(self, hidden: int, n_heads: int):
        super().__init__()
        self.blocks = nn.ModuleList(ResBlock(hidden) for _ in range(n_heads))

    @property
    def n_heads(self) -> int:
        return len(self.blocks)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h (..., d) -> (..., K, d): each head's state, to go through the model's LM head."""
        return torch.stack([block(h) for block in self.blocks], dim=-2)


@dataclass(frozen=True)
class Heads:
    """Heads ready for one model: the module (read-only), and what the training measured on held-out text."""

    model: str  # the model they were trained on (its name in the app)
    module: MedusaHeads
    top1: tuple[float, ...]  # per head: its first guess is the model's greedy token there, in [0, 1]
    top5: tuple[float, ...]  # per head: the greedy token is among its five first guesses
    rank_hits: tuple[tuple[float, ...], ...]  # [head][r]: the greedy token is its guess of rank r (0: the first)
    report: dict  # the training's record (assets/medusa/<name>.json), for the page and the docs

    @property
    def n_heads(self) -> int:
        return self.module.n_heads


# ---- the tree ----------------------------------------------------------------------------------------------------
def tree_paths(rank_hits, size: int) -> list[tuple[int, ...]]:
    """The `size` candidates most likely to be accepted, as paths of ranks from the root: (0,) is head 1's first
    guess, (0, 1) head 2's second guess after it, ... Medusa's sparse tree: a path's chance is taken as the product
    of each head's measured chance that its guess of that rank is right (rank_hits[head][rank]); the `size` paths of
    highest chance. A path never beats its own prefix (each factor is at most 1), so the set is a tree: every
    candidate's parent is in it (ties: shorter first, then by ranks)."""
    depth, width = len(rank_hits), len(rank_hits[0]) if rank_hits else 0
    scored, frontier = [], [((), 1.0)]
    while frontier:  # every path, its chance (K <= 5 heads of 5 guesses: at most 3,905)
        path, chance = frontier.pop()
        if len(path) == depth:
            continue
        for r in range(width):
            child = (path + (r,), chance * float(rank_hits[len(path)][r]))
            scored.append(child)
            frontier.append(child)
    scored.sort(key=lambda pc: (-pc[1], len(pc[0]), pc[0]))
    chosen = [path for path, _ in scored[:size]]
    return sorted(chosen, key=lambda p: (len(p), p))


def tree_parents(paths: list[tuple[int, ...]]) -> list[int]:
    """Each candidate's parent as an index into [root] + candidates (0: the root). `paths` sorted by depth."""
    index = {(): 0, **{p: i + 1 for i, p in enumerate(paths)}}
    return [index[p[:-1]] for p in paths]


def tree_mask(parents: list[int]) -> np.ndarray:
    """(n + 1, n + 1) bool over [root] + candidates: row i may attend to column j iff j is i itself or one of its
    ancestors in the tree. Every row may also attend to the whole text before the root (the cache): not drawn here."""
    n = len(parents) + 1
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        j = i
        while True:
            mask[i, j] = True
            if j == 0:
                break
            j = parents[j - 1]
    return mask


# ---- the file ------------------------------------------------------------------------------------------------------
def lm_fingerprint(model) -> float:
    """A number that tells one model's LM head from another's: the sum of its first 64 rows (float64)."""
    return float(model.get_output_embeddings().weight[:64].double().sum())


def heads_files(name: str, folder: Path | None = None) -> tuple[Path, Path]:
    """The weights and the report of the heads of the model called `name` (a packaged model's name, never a path)."""
    folder = folder or ASSETS
    return folder / f"{name}.safetensors", folder / f"{name}.json"


def heads_report(name: str, folder: Path | None = None) -> dict | None:
    """The training report of the heads shipped for the model called `name` (no weights read), or None."""
    record = (folder or ASSETS) / f"{name}.json"
    return json.loads(record.read_text(encoding="utf-8")) if record.is_file() else None


def save_heads(module: MedusaHeads, model, name: str, report: dict, folder: Path | None = None) -> tuple[Path, Path]:
    """Write the heads (float16) and their report; the metadata pins the model they belong to."""
    from safetensors.torch import save_file

    weights, record = heads_files(name, folder)
    weights.parent.mkdir(parents=True, exist_ok=True)
    config = model.config
    meta = {"format": str(FORMAT), "model": name, "heads": str(module.n_heads), "hidden": str(config.hidden_size),
            "vocab": str(config.vocab_size), "fingerprint": repr(lm_fingerprint(model))}
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in module.state_dict().items()}
    save_file(state, str(weights), metadata=meta)
    record.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return weights, record


def read_heads(model, name: str, folder: Path | None = None) -> Heads | None:
    """The heads trained for `name`, checked against `model` (its shape and LM head); None when none were trained
    for it, or the file's do not fit this model."""
    from safetensors import safe_open

    weights, record = heads_files(name, folder)
    if not (weights.is_file() and record.is_file()):
        return None
    with safe_open(str(weights), framework="pt") as f:
        meta = f.metadata() or {}
        state = {k: f.get_tensor(k).to(torch.float32) for k in f.keys()}
    config = model.config
    fits = (meta.get("format") == str(FORMAT) and meta.get("hidden") == str(config.hidden_size)
            and meta.get("vocab") == str(config.vocab_size)
            and abs(float(meta.get("fingerprint", "nan")) - lm_fingerprint(model)) < 1e-3)
    if not fits:
        return None
    module = MedusaHeads(config.hidden_size, int(meta["heads"]))
    module.load_state_dict(state)
    module.eval().requires_grad_(False)
    report = json.loads(record.read_text(encoding="utf-8"))
    acc = report["accuracy"]
    return Heads(name, module, tuple(acc["top1"]), tuple(acc["top5"]),
                 tuple(tuple(row) for row in acc["rank_hits"]), report)


_LOADED: "weakref.WeakKeyDictionary[nn.Module, Heads | None]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def heads_for(lm) -> Heads | None:
    """The Medusa heads of a loaded model (read once, then shared read-only), or None when none were trained for it."""
    with _LOCK:
        if lm.model not in _LOADED:
            _LOADED[lm.model] = read_heads(lm.model, lm.name)
        return _LOADED[lm.model]
