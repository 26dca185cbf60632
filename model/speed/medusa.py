"""Medusa decoding (Cai et al. 2024), greedy: the heads guess several tokens ahead, a tree of their guesses is verified
in one pass with a tree attention mask, and the longest path the model agrees with is kept.

A round, on a text whose last token (the root) is chosen but not yet in the cache:
1. the heads read the hidden state of the token before the root and guess: head k the token k positions after the
   root (t + k + 1 for that hidden state's position t; the model's own LM head gave the root, t + 1);
2. the tree: the candidates most likely to be right (medusa_heads.tree_paths: a few guesses of head 1, a few of head
   2 after each of those, ...);
3. ONE pass runs [root] + candidates on the cache, each at its own position (root's + its depth) and with the tree
   attention mask: a candidate attends to the text, to the root and to its own ancestors in the tree, never to a
   sibling or a cousin, so each row computes exactly what a plain pass over its own path would;
4. the model's greedy token at every node comes out of that one pass; walking from the root, a candidate is
   accepted when it is the greedy token of its parent; the round writes the accepted candidates and then the greedy
   token after the last of them (always one token of the model's own: a round never writes less than a plain step);
5. the cache keeps the root and the accepted candidates (their keys and values were computed on the right path at
   the right positions), moved into place; the rest of the tree is dropped.

Greedy verification makes the output exactly the model's greedy output; Medusa's "typical acceptance", which takes
a guess that is merely plausible, would change it and is not done here.

How the mask reaches the model (transformers 5.23, pinned): a 4D float mask (batch, 1, queries, keys) of 0 and the
dtype's minimum is taken as given by create_causal_mask (masking_utils._preprocess_mask_arguments returns a 4D mask
as is) and added to the scores by the eager attention this app loads; position_ids give each candidate its position.
No batched pass over root-to-leaf paths is needed.
"""
from __future__ import annotations

import time

import numpy as np
import torch
from transformers import DynamicCache

from model.decoding.core import computation
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.decoding.loading import LoadedModel, end_ids
from model.errors import SessionError
from model.parse import whole_in_range
from model.speed.medusa_heads import (DEFAULT_TREE, MAX_TREE, TOP_GUESSES, Heads, heads_for, tree_mask,
                                        tree_parents, tree_paths)
from model.speed.medusa_records import Beside, Guess, MedusaRound, MedusaRun
from model.speed.speculative import GREEDY, plain_greedy, speculative_decode

__all__ = ["MedusaDecoder", "compute", "medusa_decode", "MAX_NEW_TOKENS", "LOOKUP_DRAFT"]

MAX_NEW_TOKENS = 64  # tokens one run may write (x 3 ways: Medusa, prompt lookup, plain)
LOOKUP_DRAFT = 4  # prompt lookup's draft length beside it (the Speculative decoding tab's default)


class MedusaDecoder:
    """Greedy Medusa decoding of one text on the shared, read-only model; the cache, ids and guesses belong to it.

    The cache holds the text minus its last token (the root), as the speculative decoder's does; each round's one
    pass runs the root and the tree. Each pass is a turn at the model's scheduler, so the class's steps go between them.
    """

    def __init__(self, lm: LoadedModel, heads: Heads, prompt_ids: list[int], tree_size: int = DEFAULT_TREE,
                 max_new_tokens: int = 32):
        if not prompt_ids:
            raise SessionError("spec_no_prompt")
        self.lm, self.heads = lm, heads
        self.tree_size = whole_in_range(tree_size, 1, MAX_TREE, "medusa_tree_range")
        self.max_new_tokens = whole_in_range(max_new_tokens, 1, MAX_NEW_TOKENS, "medusa_new_tokens_range")
        self.paths = tree_paths([row[:TOP_GUESSES] for row in heads.rank_hits], self.tree_size)
        self.parents = tree_parents(self.paths)
        self.mask = tree_mask(self.parents)  # (n + 1, n + 1) over [root] + candidates
        self.prompt_ids = [int(i) for i in prompt_ids]
        self.ids = list(self.prompt_ids)
        self.rounds: list[MedusaRound] = []
        self.eos_ids = end_ids(lm)
        self.ms = 0.0
        self.cache, hidden = self._prefill(self.ids[:-1])
        self.guesses = None if hidden is None else self._guess(hidden)  # (ids (K, TOP), probs (K, TOP)) or None

    @property
    def generated(self) -> list[int]:
        return self.ids[len(self.prompt_ids):]

    @property
    def stopped(self) -> str | None:
        if self.generated and self.generated[-1] in self.eos_ids:
            return "eos"
        return "length" if len(self.generated) >= self.max_new_tokens else None

    def _prefill(self, ids: list[int]) -> tuple[DynamicCache, torch.Tensor | None]:
        """A cache holding `ids` (passes.prefill: in chunks if long) and the last one's final hidden state (d,)."""
        if not ids:
            return DynamicCache(config=self.lm.model.config), None
        done = prefill(self.lm.model, ids, hidden_from=len(ids) - 1)
        return done.cache, done.hidden[-1][-1]  # the last hidden state is after the final norm: what the heads read

    @torch.no_grad()
    def _guess(self, hidden: torch.Tensor) -> tuple[list[list[int]], list[list[float]]]:
        """Each head's TOP_GUESSES first guesses from one hidden state (d,): ids and probabilities, [K][TOP_GUESSES]."""
        logits = self.lm.model.get_output_embeddings()(self.heads.module(hidden))  # (K, V)
        top = torch.softmax(logits.float(), dim=-1).topk(TOP_GUESSES, dim=-1)
        return top.indices.tolist(), top.values.tolist()

    @torch.no_grad()
    def _verify(self, tokens: list[int], depth: list[int], mask: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """[root] + candidates through the model in one pass with the tree mask: (logits (n + 1, V), hidden (n + 1, d))."""
        past = self.cache.get_seq_length()
        n = len(tokens)
        allowed = np.concatenate([np.ones((n, past), dtype=bool), mask], axis=1)  # the text, then the tree
        blocked = torch.finfo(torch.float32).min
        attention = torch.where(torch.from_numpy(allowed), 0.0, blocked)[None, None]  # (1, 1, n, past + n)
        positions = torch.tensor([[past + d for d in depth]])  # (1, n): the root at `past`, a guess of head k at + k
        with model_pass(self.lm.model, cores=False):  # at most 33 tokens: a second thread mostly spins
            out = self.lm.model.model(input_ids=torch.tensor([tokens]), attention_mask=attention,
                                      position_ids=positions, past_key_values=self.cache, use_cache=True)
            hidden = out.last_hidden_state[0]  # (n, d), after the final norm
            logits = self.lm.model.get_output_embeddings()(hidden)  # (n, V)
        return logits, hidden

    @torch.no_grad()
    def round(self) -> MedusaRound:
        """One round: the tree from the heads' guesses, one pass, the accepted path, the cache put back in order."""
        if self.stopped:
            key = "spec_finished_eos" if self.stopped == "eos" else "spec_finished_length"
            raise SessionError(key, limit=self.max_new_tokens)
        t_round = time.perf_counter()
        info = self.lm.tokens.info
        budget = self.max_new_tokens - len(self.generated)
        if self.guesses is None:  # a one-token prompt: no hidden state read yet, the first round is a plain step
            paths, parents, mask, guess_ids, guess_probs = [], [], np.ones((1, 1), dtype=bool), [], []
        else:
            paths, parents, mask = self.paths, self.parents, self.mask
            guess_ids, guess_probs = self.guesses
        tokens = [self.ids[-1]] + [guess_ids[len(p) - 1][p[-1]] for p in paths]
        depth, rank = [0] + [len(p) for p in paths], [0] + [p[-1] for p in paths]
        past = self.cache.get_seq_length()  # the text before the root
        t0 = time.perf_counter()
        logits, hidden = self._verify(tokens, depth, mask)
        forward_ms = (time.perf_counter() - t0) * 1000
        greedy = logits.argmax(dim=-1).tolist()  # the model's own next token at every node
        path = accepted_path(tokens, parents, greedy)
        new = _cut([tokens[i] for i in path] + [greedy[path[-1] if path else 0]], budget, self.eos_ids)
        kept = path[: len(new) - 1]  # candidates whose keys and values stay: the new tokens but the last
        self._keep(past, kept)
        self.guesses = self._guess(hidden[kept[-1] if kept else 0])  # read where the new last token was chosen
        self.ids.extend(new)
        self.ms += (time.perf_counter() - t_round) * 1000
        record = MedusaRound(
            round=len(self.rounds) + 1, position=past, tokens=[info(t) for t in tokens],
            guesses=[[Guess(info(i), p) for i, p in zip(ids, probs)] for ids, probs in zip(guess_ids, guess_probs)],
            parents=list(parents), depth=depth, rank=rank, mask=mask.copy(), greedy=[info(g) for g in greedy],
            accepted=kept, new_tokens=[info(t) for t in new], pass_positions=len(tokens), forward_ms=forward_ms,
            tokens_so_far=len(self.generated), passes_so_far=len(self.rounds) + 1)
        self.rounds.append(record)
        return record

    def _keep(self, past: int, kept: list[int]) -> None:
        """Keep the text, the root and the accepted candidates (nodes `kept`) in the cache, in the text's order.

        A layer's update() replaces its tensors and never writes into them (model/decoding/cache_surgery.py), so
        putting new ones in their place is safe. Every layer here holds every token: the heads ship for models whose
        layers all attend fully (SmolLM2); a sliding-window layer within its window holds them all too."""
        order = torch.tensor(list(range(past + 1)) + [past + i for i in kept])
        for layer in self.cache.layers:
            if layer.is_initialized:
                layer.keys = layer.keys.index_select(-2, order)  # (1, kv_heads, past + 1 + kept, head_dim)
                layer.values = layer.values.index_select(-2, order)
                if hasattr(layer, "cumulative_length"):
                    layer.cumulative_length = len(order)

    def run(self) -> list[MedusaRound]:
        """Rounds until the text ends or max_new_tokens are written."""
        while not self.stopped:
            self.round()
        return self.rounds


def accepted_path(tokens: list[int], parents: list[int], greedy: list[int]) -> list[int]:
    """The longest path from the root whose every candidate is its parent's greedy token: its nodes, root excluded.
    A node's children are distinct guesses of one head, so at most one of them is the greedy token."""
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(parents, 1):
        children.setdefault(parent, []).append(i)
    path, node = [], 0
    while True:
        node = next((c for c in children.get(node, ()) if tokens[c] == greedy[node]), None)
        if node is None:
            return path
        path.append(node)


def _cut(new: list[int], budget: int, eos_ids: set[int]) -> list[int]:
    """A round's tokens cut to the budget left and after the first end-of-text token (as transformers does)."""
    new = new[:budget]
    end = next((j for j, t in enumerate(new) if t in eos_ids), None)
    return new if end is None else new[: end + 1]


def medusa_decode(lm: LoadedModel, prompt_ids: list[int], tree_size: int = DEFAULT_TREE,
                  max_new_tokens: int = 32) -> MedusaDecoder:
    """A whole greedy Medusa run from a text's ids (one prefill, then one verifying pass per round): the decoder,
    with its rounds, ids and time. Refused, saying so, on a model no heads were trained for."""
    heads = heads_for(lm)
    if heads is None:
        raise SessionError("medusa_no_heads", model=lm.name)
    decoder = MedusaDecoder(lm, heads, prompt_ids, tree_size, max_new_tokens)
    decoder.run()
    return decoder


@computation
def compute(lm: LoadedModel, ids: list[int], max_new_tokens: int = 32, tree_size: int = DEFAULT_TREE) -> MedusaRun:
    """The text `ids` continued greedily three ways: Medusa (the heads' tree, one verifying pass per round), prompt
    lookup (model/speed/speculative.py, LOOKUP_DRAFT drafted tokens) and plain decoding (one pass per token), each
    from the same text and for the same tokens; the Medusa run round by round, the other two as totals."""
    decoder = medusa_decode(lm, ids, tree_size, max_new_tokens)
    lookup = speculative_decode(lm, ids, GREEDY, LOOKUP_DRAFT, max_new_tokens=max_new_tokens)
    plain, plain_ms, plain_passes = plain_greedy(lm, ids, max_new_tokens)
    heads = decoder.heads
    return MedusaRun(
        model=lm.name, prompt_ids=list(ids), tree_size=decoder.tree_size, heads=heads.n_heads, top1=list(heads.top1),
        top5=list(heads.top5), rounds=list(decoder.rounds), generated=decoder.generated, stopped=decoder.stopped or "",
        text=lm.tokens.text(decoder.generated), medusa_ms=decoder.ms,
        lookup=Beside(list(lookup.generated), lookup.passes, sum(r.round_ms for r in lookup.rounds)),
        lookup_draft=LOOKUP_DRAFT, plain=Beside(list(plain), plain_passes, plain_ms),
        same_as_plain={"medusa": decoder.generated == plain, "lookup": list(lookup.generated) == plain},
        training=training_summary(heads))


def training_summary(heads: Heads) -> dict:
    """What the page says of the heads' training: the positions and texts they learned from, the minutes it took."""
    report = heads.report
    return {"positions": report["data"]["positions_train"], "texts": report["data"]["texts_train"],
            "minutes": report["seconds"]["total"] / 60}
