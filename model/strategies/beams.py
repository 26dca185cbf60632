"""Beam search, one step at a time: every live beam, the candidates it extended, the ones kept and pruned.

It follows transformers 5.23's `GenerationMixin._beam_search` (generation/utils.py) operation for operation, so
its finished beams and their scores are `generate(num_beams=B, do_sample=False, num_return_sequences=B, ...)`'s
(tests/test_beams.py proves it), while keeping each step as a record the Beams tab draws:

1. log p of every next token for each of the B live beams (log_softmax of the logits: no processor is active
   without sampling) plus the beam's cumulative log P: B x V sums;
2. the K = max(2, 1 + number of end tokens) x B largest of them (so B can go on even if the best ones end);
3. of those, the B best that did not end (an end-of-text token, or the length limit) are the next live beams;
4. of the first B, the ones that ended are finished hypotheses, scored log P / length ** length_penalty
   (length = generated tokens, the end token included), kept if among the B best finished so far;
5. the search stops when no live beam can beat the worst of B finished ones (transformers' heuristic for
   early_stopping=False: the best live beam's log P over its current length), or at max_new_tokens.

Also here: the text the page's own settings would write from the same prompt (sampled_continuation), to set
beside the beams, and the repeated n-grams of each text (model.decoding.branches.repeated_ngrams).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from model.decoding.branches import repeated_ngrams
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.errors import SessionError
from model.decoding.loading import LoadedModel
from model.decoding.records import SamplingConfig
from model.decoding.sampling import derive
from model.decoding.core import computation

MAX_WIDTH = 8  # beams: each step runs one pass over B sequences
MAX_NEW_TOKENS = 32  # steps of one search (and of the greedy and sampled texts beside it)
MAX_LENGTH_PENALTY = 3.0  # |length_penalty|: past that, the length alone decides
NEG = -1.0e9  # transformers' "impossible" score, added where a candidate may not be chosen


@dataclass
class BeamCandidate:
    """One extension of a live beam among the K best of a step, in rank order (best cumulative log P first)."""

    rank: int  # 0 = highest cumulative log P of the step
    parent: int  # the live beam (its slot, 0..B-1) it extends
    token: int  # the token id it appends
    logprob: float  # natural log p of that token after the parent (T = 1)
    score: float  # cumulative log P of the parent's generated tokens plus this one
    ended: bool  # it hit a stop: an end-of-text token, or the last allowed step
    fate: str  # "kept" (a live beam of the next step), "finished" (entered the finished list), "pruned"
    slot: int | None  # its slot among the next step's live beams, when kept
    display: str = ""  # the token as the page shows it ("␣the", "↵")


@dataclass
class Hypothesis:
    """A finished beam: its generated tokens, their log P, and the score that ranks it."""

    tokens: list[int]  # generated ids, the end token included if it ended on one
    logprob: float  # sum of its tokens' natural log p (T = 1)
    score: float  # logprob / len(tokens) ** length_penalty: generate's sequences_scores
    step: int  # the step at which it finished
    rank: int  # its candidate's rank at that step (where the tree draws it)

    @property
    def length(self) -> int:
        return len(self.tokens)


@dataclass
class BeamStep:
    """One step of the search: the live beams it extended, its K candidates, and the finished list after it."""

    step: int  # 1-based: the generated token this step chooses
    live: list[tuple[list[int], float]]  # per slot: (generated ids so far, cumulative log P); only real beams
    candidates: list[BeamCandidate]  # the K best extensions, best first
    finished: list[Hypothesis]  # the finished list after this step, best first


@dataclass
class BeamRun:
    """A whole search: its settings, its steps, and its finished beams (best first, as generate returns them)."""

    prompt_ids: list[int]
    width: int  # B
    length_penalty: float
    max_new_tokens: int
    eos_ids: list[int]
    steps: list[BeamStep]
    finished: list[Hypothesis]  # B hypotheses, best score first
    stopped: str  # "limit" (max_new_tokens reached), "no_better" (no live beam could beat the finished ones)
    ms: float  # wall time of the search (its passes and the choices between them)


def eos_list(lm: LoadedModel) -> list[int]:
    """The end-of-text ids generate() stops on: the generation config's, in its order (the tokenizer's if none)."""
    eos = lm.model.generation_config.eos_token_id
    if eos is None:
        eos = lm.tokenizer.eos_token_id
    return [] if eos is None else list(eos) if isinstance(eos, (list, tuple)) else [int(eos)]


def check_bounds(width, length_penalty, max_new_tokens) -> tuple[int, float, int]:
    """The search's knobs, or SessionError naming the one out of bounds."""
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_WIDTH:
        raise SessionError("beams_width_range", value=width, high=MAX_WIDTH)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise SessionError("beams_tokens_range", value=max_new_tokens, high=MAX_NEW_TOKENS)
    ok = isinstance(length_penalty, (int, float)) and not isinstance(length_penalty, bool)
    if not ok or not abs(float(length_penalty)) <= MAX_LENGTH_PENALTY:  # NaN fails this too
        raise SessionError("beams_penalty_range", value=length_penalty, high=MAX_LENGTH_PENALTY)
    return width, float(length_penalty), max_new_tokens


class BeamSearch:
    """The search's state between steps (tensors shaped as in transformers, batch 1), advanced by step()."""

    def __init__(self, lm: LoadedModel, prompt_ids: list[int], width: int, length_penalty: float = 1.0,
                 max_new_tokens: int = 16):
        self.lm = lm
        self.width, self.length_penalty, self.max_new_tokens = check_bounds(width, length_penalty, max_new_tokens)
        self.prompt_ids = list(prompt_ids)
        self.eos = eos_list(lm)
        self.keep = max(2, 1 + len(self.eos)) * self.width  # K: candidates looked at per step
        B = self.width
        self.prompt_len = len(self.prompt_ids)
        self.cur_len = self.prompt_len
        self.max_length = self.prompt_len + self.max_new_tokens
        self.running = [[] for _ in range(B)]  # generated ids per live slot
        self.running_scores = torch.zeros(B)  # (B,) cumulative log P; only slot 0 is real before step 1
        self.running_scores[1:] = NEG
        self.finished: list[Hypothesis | None] = [None] * B  # the finished list's slots (None: nothing yet)
        self.finished_scores = torch.full((B,), NEG)  # (B,) their scores
        self.finished_real = torch.zeros(B, dtype=torch.bool)  # is_sent_finished
        self.can_improve = True  # transformers' is_early_stop_heuristic_unsatisfied
        self.steps: list[BeamStep] = []
        self.done = False
        self.stopped = ""
        self._cache: DynamicCache | None = None
        self._logits: torch.Tensor | None = None  # (B, V) logits for the live beams' next token
        self._ms = 0.0

    # ---- the model ------------------------------------------------------------------------------------
    @torch.no_grad()
    def _prefill(self) -> None:
        """The prompt once, its cache copied for each of the B beams (generate runs B identical copies)."""
        done = prefill(self.lm.model, self.prompt_ids)
        done.cache.batch_repeat_interleave(self.width)
        self._cache = done.cache
        self._logits = done.logits[-1:].float().expand(self.width, -1)  # (B, V)

    @torch.no_grad()
    def _advance(self, last_tokens: list[int]) -> None:
        """Each live beam's last token through the model: the next logits, (B, V)."""
        with model_pass(self.lm.model, cores=False):
            out = self.lm.model(input_ids=torch.tensor(last_tokens).view(-1, 1), past_key_values=self._cache,
                                use_cache=True)
        self._logits = out.logits[:, -1, :].float()

    # ---- one step -------------------------------------------------------------------------------------
    @torch.no_grad()
    def step(self) -> BeamStep:
        """Choose this step's live beams and finished hypotheses; run the next pass unless the search stopped."""
        if self.done:
            raise SessionError("beams_search_over")
        t0 = time.perf_counter()
        if self._cache is None:
            self._prefill()
        B, K = self.width, self.keep
        log_probs = torch.log_softmax(self._logits, dim=-1)  # (B, V), T = 1
        vocab = log_probs.shape[-1]
        totals = (log_probs + self.running_scores[:, None]).reshape(1, -1)  # (1, B * V)
        top_scores, top_index = torch.topk(totals, k=K)  # (1, K) each, best first
        top_scores, top_index = top_scores[0], top_index[0]
        parents, tokens = top_index // vocab, top_index % vocab  # (K,) each
        length = self.cur_len + 1 - self.prompt_len  # generated tokens of every candidate

        # Which candidates stop: an end token, or the length limit (generate's stopping criteria)
        at_limit = self.cur_len + 1 >= self.max_length
        ended = torch.tensor([at_limit or int(t) in self.eos for t in tokens])  # (K,)

        # 3. the next live beams: the B best that did not stop
        running_pick = torch.topk(top_scores + ended.float() * NEG, k=B)[1]  # (B,)
        # 4. the finished list: candidates among the first B that stopped, scored with the length penalty
        first_b = torch.arange(K) < B
        just_finished = ended & first_b
        scored = top_scores / (length ** self.length_penalty)
        scored = scored + (~torch.tensor(self.can_improve)).float() * NEG
        scored = scored + (~just_finished).float() * NEG
        merged = torch.cat((self.finished_scores, scored))  # (B + K,)
        merged_real = torch.cat((self.finished_real, just_finished))
        pick = torch.topk(merged, k=B)[1]  # (B,) best first

        live_before = [(list(self.running[i]), float(self.running_scores[i])) for i in range(B)
                       if float(self.running_scores[i]) > NEG / 2]
        new_finished = []
        for j in pick.tolist():
            if j < B:
                new_finished.append(self.finished[j])
            else:
                c = j - B
                seq = self.running[int(parents[c])] + [int(tokens[c])]
                new_finished.append(Hypothesis(seq, float(top_scores[c]), float(scored[c]), len(self.steps) + 1, c)
                                    if bool(just_finished[c]) else None)
        entered = {j - B for j in pick.tolist() if j >= B and bool(merged_real[j])}
        slot_of = {int(c): s for s, c in enumerate(running_pick.tolist()) if float(top_scores[c]) > NEG / 2 and not bool(ended[c])}

        candidates = []
        for c in range(K):
            fate = "kept" if c in slot_of else "finished" if c in entered else "pruned"
            parent = int(parents[c])
            token = int(tokens[c])
            candidates.append(BeamCandidate(c, parent, token, float(log_probs[parent, token]), float(top_scores[c]),
                                            bool(ended[c]), fate, slot_of.get(c), self.lm.tokens.info(token).display))

        # the state for the next step (generate's tensors, gathered the same way)
        self.running = [self.running[int(parents[c])] + [int(tokens[c])] for c in running_pick.tolist()]
        self.running_scores = (top_scores + ended.float() * NEG)[running_pick]
        self.finished = new_finished
        self.finished_scores = merged[pick]
        self.finished_real = merged_real[pick]
        self.cur_len += 1

        # 5. can a live beam still beat the worst finished one? (generate's heuristic, early_stopping=False)
        best_possible = self.running_scores[:1] / ((self.cur_len - self.prompt_len) ** self.length_penalty)  # (1,)
        worst = torch.where(self.finished_real, self.finished_scores.min(), NEG)  # (B,): NEG where a slot is empty
        self.can_improve = self.can_improve and bool((best_possible > worst).any())
        record = BeamStep(len(self.steps) + 1, live_before, candidates, self.finished_list())
        self.steps.append(record)
        if not self.can_improve or bool(ended.all()):
            self.done, self.stopped = True, "limit" if bool(ended.all()) else "no_better"
        else:
            self._cache.reorder_cache(parents[running_pick])
            self._advance([seq[-1] for seq in self.running])
        self._ms += (time.perf_counter() - t0) * 1000
        return record

    def finished_list(self) -> list[Hypothesis]:
        """The finished hypotheses so far, best score first (the list's empty slots left out)."""
        return [h for h, real in zip(self.finished, self.finished_real.tolist()) if real and h is not None]

    def run(self) -> BeamRun:
        """Step until the search stops; the whole run as a record (the cache freed)."""
        while not self.done:
            self.step()
        self._cache = self._logits = None
        return BeamRun(self.prompt_ids, self.width, self.length_penalty, self.max_new_tokens, self.eos,
                       list(self.steps), self.finished_list(), self.stopped, self._ms)


@computation
def beam_search(lm: LoadedModel, prompt_ids: list[int], width: int, length_penalty: float = 1.0,
                max_new_tokens: int = 16) -> BeamRun:
    """The whole search at once (each pass a turn at the model's scheduler): see BeamSearch."""
    return BeamSearch(lm, prompt_ids, width, length_penalty, max_new_tokens).run()


@computation
@torch.no_grad()
def sampled_continuation(lm: LoadedModel, prompt_ids: list[int], cfg: SamplingConfig,
                         max_new_tokens: int) -> tuple[list[int], float]:
    """What Next token would write from the prompt under cfg, up to max_new_tokens or an end token: (generated
    ids, their log P at T = 1). Each draw is derive()'s, fixed by (seed, position) as in a session."""
    eos, ids, logprob = set(eos_list(lm)), list(prompt_ids), 0.0
    done = prefill(lm.model, ids)
    cache, logits = done.cache, done.logits[-1]
    for _ in range(max_new_tokens):
        dist = derive(logits, torch.tensor([ids]), cfg, len(ids), lm.tokens, top_n=1)
        ids.append(dist.chosen.id)
        logprob += dist.chosen_logprob_t1
        if dist.chosen.id in eos or len(ids) - len(prompt_ids) >= max_new_tokens:
            break
        with model_pass(lm.model, cores=False):
            logits = lm.model(input_ids=torch.tensor([[dist.chosen.id]]), past_key_values=cache,
                              use_cache=True).logits[0, -1]
    return ids[len(prompt_ids):], logprob


@dataclass
class TextSummary:
    """One text set beside the others: what it is, its tokens, its log P, and how much of it repeats itself."""

    kind: str  # "beam", "greedy" or "sampled"
    index: int  # the beam's rank (1 = best score); 0 for greedy and sampled
    tokens: list[int]  # generated ids
    logprob: float  # natural log P at T = 1
    score: float | None  # the beam's length-penalised score (None for greedy and sampled)
    repeated: list[bool]  # per generated token: inside a stretch of 3+ tokens that appeared earlier (prompt too)
    displays: list[str]  # per generated token, as the page shows it
    text: str  # the generated text, decoded

    @property
    def length(self) -> int:
        return len(self.tokens)

    @property
    def repeated_tokens(self) -> int:
        return sum(self.repeated)


def summarize(lm: LoadedModel, kind: str, index: int, prompt_ids: list[int], tokens: list[int], logprob: float,
              score: float | None = None) -> TextSummary:
    """A text's summary, its repeats found in prompt + text (from the first generated token on)."""
    ids = list(prompt_ids) + list(tokens)
    marks = [False] * len(ids)
    for r in repeated_ngrams(ids, len(prompt_ids)):
        for i in range(r.start, r.end):
            marks[i] = True
    return TextSummary(kind, index, list(tokens), float(logprob), score, marks[len(prompt_ids):],
                       [lm.tokens.info(i).display for i in tokens], lm.tokens.text(list(tokens)))


def compare_texts(lm: LoadedModel, run: BeamRun, greedy: BeamRun, sampled: tuple[list[int], float]) -> list[TextSummary]:
    """The finished beams (best first), the greedy text (the search with B = 1), and the sampled text."""
    p = run.prompt_ids
    rows = [summarize(lm, "beam", i + 1, p, h.tokens, h.logprob, h.score) for i, h in enumerate(run.finished)]
    g = greedy.finished[0]
    rows.append(summarize(lm, "greedy", 0, p, g.tokens, g.logprob))
    rows.append(summarize(lm, "sampled", 0, p, *sampled))
    return rows
