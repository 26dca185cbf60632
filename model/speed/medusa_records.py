"""The records of a Medusa run (model/speed/medusa.py): plain numbers, numpy arrays and TokenInfo, never torch."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from model.decoding.records import TokenInfo


@dataclass
class Guess:
    """One of a head's guesses for one position."""

    token: TokenInfo
    prob: float  # the head's probability of it (softmax of its logits through the model's LM head), in [0, 1]


@dataclass
class MedusaRound:
    """One verifying pass: the heads' guesses, the tree built from them, the model's own greedy token at every node of
    the tree (from that one pass), and the path it accepted.

    Node 0 is the root: the text's last token, already chosen (the previous pass's own token), not yet in the cache.
    Nodes 1..n are the candidates, sorted by depth; node i's token is head depth[i]'s guess of rank rank[i]."""

    round: int  # 1-based
    position: int  # index in the text of the root (the last token so far); candidate i sits at position + depth[i]
    guesses: list[list[Guess]]  # [head k - 1][rank]: head k's first guesses for position + k (t + k + 1, t = position - 1)
    tokens: list[TokenInfo]  # [root] + candidates
    parents: list[int]  # per candidate (1..n): its parent's node index
    depth: list[int]  # per node: 0 for the root, k for a guess of head k
    rank: list[int]  # per node: the guess's rank in its head (0: first); the root's is 0
    mask: np.ndarray  # (n + 1, n + 1) bool: node i attends to node j (its ancestors and itself); all attend the text
    greedy: list[TokenInfo]  # per node: the model's most likely next token there, from this pass
    accepted: list[int]  # the nodes of the accepted path after the root, in order (empty: no guess was right)
    new_tokens: list[TokenInfo]  # what the pass appended: the accepted guesses, then the model's own token after them
    pass_positions: int  # tokens the one pass ran: n + 1
    forward_ms: float  # wall time of the pass
    tokens_so_far: int  # tokens generated after this round
    passes_so_far: int  # verifying passes so far (one per round)

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens_so_far / self.passes_so_far


@dataclass
class Beside:
    """Another way over the same text, for comparison: tokens, passes, wall time."""

    generated: list[int]
    passes: int
    ms: float  # wall time of its passes (its prefill not counted)

    @property
    def tokens_per_pass(self) -> float:
        return len(self.generated) / self.passes if self.passes else 0.0

    @property
    def ms_per_token(self) -> float:
        return self.ms / len(self.generated) if self.generated else 0.0


@dataclass
class MedusaRun:
    """A whole Medusa run on a text, with prompt lookup and plain greedy decoding on the same text beside it.

    Greedy throughout: Medusa and prompt lookup keep a guess only when it is the model's own argmax, so all three
    write the same tokens (same_as_plain says whether they did)."""

    model: str
    prompt_ids: list[int]  # the text the run continued
    tree_size: int  # candidates per pass
    heads: int  # K
    top1: list[float]  # each head's top-1 accuracy on held-out text (the training's measurement)
    top5: list[float]
    rounds: list[MedusaRound]
    generated: list[int]
    stopped: str  # "eos" or "length"
    text: str  # the generated text, decoded
    medusa_ms: float  # wall time of Medusa's verifying passes
    lookup: Beside  # prompt lookup decoding (model/speed/speculative.py), greedy, on the same text
    lookup_draft: int  # its draft length
    plain: Beside  # one pass per token
    same_as_plain: dict = field(default_factory=dict)  # {"medusa": bool, "lookup": bool}
    training: dict = field(default_factory=dict)  # how the heads were trained: positions, texts, minutes

    @property
    def passes(self) -> int:
        return len(self.rounds)

    @property
    def tokens_per_pass(self) -> float:
        return len(self.generated) / self.passes if self.rounds else 0.0

    @property
    def ms_per_token(self) -> float:
        return self.medusa_ms / len(self.generated) if self.generated else 0.0

    @property
    def accepted(self) -> int:
        """Guesses accepted over the run (tokens beyond the one a pass always writes)."""
        return sum(len(r.accepted) for r in self.rounds)
