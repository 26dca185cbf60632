"""Constrained decoding: a grammar stage in the sampling pipeline that allows only the tokens a constraint can still
accept (a list of allowed words, a regular expression, or a small JSON shape); the token masks come from llguidance.

A Constraint becomes an llguidance grammar; a Grammar follows it token by token (llguidance's LLMatcher, the same
matcher vLLM and transformers' own integrations use) and says which tokens of the vocabulary may come next. The
mask enters model/decoding/sampling.py's derive() as its own stage ("grammar"), right after the repetition penalty, where
generate() puts PrefixConstrainedLogitsProcessor: before temperature and every cut, so top-k, top-p and min-p
choose among the allowed tokens. The end-of-text token is allowed once the constraint is satisfied, and is the only
token allowed once nothing more can follow.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from model.decoding.passes import prefill

from model.decoding.scheduler import model_pass
from model.errors import SessionError
from model.decoding.loading import LoadedModel, end_ids
from model.parse import valid_text, whole_in_range
from model.decoding.records import Distribution, SamplingConfig
from model.decoding.sampling import derive, run_stages
from model.decoding.core import computation

KINDS = ("words", "regex", "json")
MAX_WORDS = 24  # allowed words in one list
MAX_WORD_CHARS = 40
MAX_REGEX_CHARS = 200  # a pattern's length: bounds the grammar llguidance builds
MAX_SCHEMA_CHARS = 1000  # a JSON schema's length
MAX_NEW_TOKENS = 48  # tokens one constrained run may write (one forward pass each)
REGEX_META = set("\\.+*?()|[]{}^$#&-~")  # characters a regular expression needs escaped to mean themselves

_TOKENIZERS: dict[str, object] = {}  # per model name: llguidance's copy of the tokenizer (~4 s to build)
_TOKENIZERS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Constraint:
    """What the continuation must be: one of `words` (one per line or comma), a regular expression, a JSON schema."""

    kind: str  # one of KINDS
    text: str  # the words, the pattern, or the schema, as typed

    def grammar(self) -> str:
        """The llguidance grammar (a JSON string), or SessionError saying which bound or rule the text breaks."""
        from llguidance import LLMatcher

        if self.kind not in KINDS:
            raise SessionError("constrain_kind_unknown", kinds=", ".join(KINDS), value=self.kind)
        text = valid_text(self.text, "constrain_invalid_text") if isinstance(self.text, str) else ""
        if self.kind == "words":
            return without_forcing(LLMatcher.grammar_from_regex(words_regex(allowed_words(text))))
        if not text.strip():
            raise SessionError("constrain_empty")
        if self.kind == "regex":
            if len(text) > MAX_REGEX_CHARS:
                raise SessionError("constrain_regex_too_long", n=len(text), limit=MAX_REGEX_CHARS)
            return without_forcing(LLMatcher.grammar_from_regex(text))
        if len(text) > MAX_SCHEMA_CHARS:
            raise SessionError("constrain_schema_too_long", n=len(text), limit=MAX_SCHEMA_CHARS)
        try:
            schema = json.loads(text)
        except ValueError as err:
            raise SessionError("constrain_schema_not_json", detail=str(err)) from None
        if not isinstance(schema, dict):
            raise SessionError("constrain_schema_not_object")
        # Compact JSON (no whitespace between items): a small model given room for whitespace fills it with newlines
        return without_forcing(LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False}))


NO_FORCING = '%llguidance {"no_forcing": true}\n'


def without_forcing(grammar: str) -> str:
    """`grammar` (llguidance's JSON, one grammar) with every token that can continue a valid text allowed.

    By default, where the grammar forces the next bytes, llguidance allows only the first token of their canonical
    tokenization: after " may" in a word list only "be", not "b"; at a JSON object's start only '{"', not '{'. The
    page says the stage removes the tokens that cannot continue a valid text, so the mask is the full viable set:
    llguidance's no_forcing option, a %llguidance line of a Lark grammar (a JSON schema goes in as %json)."""
    from llguidance import LLMatcher

    (entry,) = json.loads(grammar)["grammars"]
    lark = entry.get("lark_grammar") or "start: %json " + json.dumps(entry["json_schema"])
    return LLMatcher.grammar_from_lark(NO_FORCING + lark)


def allowed_words(text: str) -> list[str]:
    """The words of a list typed one per line or separated by commas, in order, each once; bounded."""
    words = []
    for word in text.replace(",", "\n").splitlines():
        word = word.strip()
        if word and word not in words:
            words.append(word)
    if not words:
        raise SessionError("constrain_empty")
    if len(words) > MAX_WORDS:
        raise SessionError("constrain_too_many_words", n=len(words), limit=MAX_WORDS)
    longest = max(words, key=len)
    if len(longest) > MAX_WORD_CHARS:
        raise SessionError("constrain_word_too_long", word=longest[:MAX_WORD_CHARS] + "…", limit=MAX_WORD_CHARS)
    return words


def words_regex(words: list[str]) -> str:
    """The pattern of 'one of these words, after an optional space' (a word after a prompt usually starts with one)."""
    escaped = ["".join("\\" + ch if ch in REGEX_META else ch for ch in word) for word in words]
    return " ?(" + "|".join(escaped) + ")"


def ll_tokenizer(lm: LoadedModel):
    """llguidance's copy of the model's tokenizer, built once per model (it reads the tokenizer's JSON)."""
    import llguidance.hf

    with _TOKENIZERS_LOCK:
        if lm.name not in _TOKENIZERS:
            _TOKENIZERS[lm.name] = llguidance.hf.from_tokenizer(lm.tokenizer, n_vocab=lm.info.vocab)
        return _TOKENIZERS[lm.name]


class Grammar:
    """One constraint followed over one model's tokens: which tokens may come next, given those consumed so far."""

    def __init__(self, lm: LoadedModel, constraint: Constraint):
        from llguidance import LLMatcher

        grammar = constraint.grammar()
        tokenizer = ll_tokenizer(lm)
        self.vocab = lm.info.vocab
        self.matcher = LLMatcher(tokenizer, grammar, log_level=0)
        if self.matcher.is_error():  # a pattern or schema llguidance cannot read: its own words, first line
            raise SessionError("constrain_invalid", detail=_first_line(self.matcher.get_error()))

    def allowed(self) -> torch.Tensor:
        """(V,) bool: every token whose bytes keep the text inside the constraint, not only the canonical
        tokenization of bytes the grammar forces (without_forcing); the end of text once it is satisfied."""
        bits = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8)
        mask = np.unpackbits(bits, bitorder="little")[: self.vocab].astype(bool)  # bit i of the mask is token i
        return torch.from_numpy(mask)

    def consume(self, token: int) -> None:
        if not self.matcher.consume_token(int(token)):
            raise SessionError("constrain_invalid", detail=_first_line(self.matcher.get_error()))

    @property
    def done(self) -> bool:
        """Nothing more can follow (only the end of text is allowed)."""
        return self.matcher.is_stopped()


def _first_line(text: str) -> str:
    """llguidance's error, short: its first line, and the line saying what is wrong when it has one."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return "?"
    cause = next((line for line in lines[1:] if line.startswith("error:")), "")
    return f"{lines[0]} {cause}".strip()[:240]


@dataclass
class ConstrainedStep:
    """One token written under the constraint."""

    distribution: Distribution  # the candidates with the grammar stage (fate "grammar" for the ones it removed)
    allowed: int  # tokens the constraint allowed at this step
    removed_mass: float  # probability (entering the grammar stage: T = 1, after the repetition penalty) it removed


@dataclass
class ConstrainedRun:
    """A continuation written under a constraint."""

    constraint: Constraint
    prompt_ids: list[int]
    generated: list[int]  # the tokens written (the end-of-text token included when the model wrote it)
    text: str  # the generated text, decoded (special tokens left out)
    steps: list[ConstrainedStep]
    stopped: str  # "eos" (the text ended: the constraint was satisfied) or "length" (the token budget ran out)
    seconds: float  # wall time of the run (forward passes, masks and draws)


@computation
@torch.no_grad()
def constrained_decode(lm: LoadedModel, prompt_ids: list[int], constraint: Constraint, cfg: SamplingConfig,
                       max_new_tokens: int = 24) -> ConstrainedRun:
    """Continue `prompt_ids` under `constraint` and the settings `cfg`, one forward pass per token (a KV cache of
    its own; each pass a turn at the model's scheduler, so the class's steps go between them).

    Each step is derive() with the grammar's mask: the same stages and the same draw u = draw_u(seed, position)
    as a plain step, so at T = 0 the text is generate(prefix_allowed_tokens_fn=...)'s greedy text.
    """
    cfg.validate()
    if not prompt_ids:
        raise SessionError("constrain_no_prompt")
    n = whole_in_range(max_new_tokens, 1, MAX_NEW_TOKENS, "constrain_tokens_range")
    grammar = Grammar(lm, constraint)
    eos = end_ids(lm)
    ids, generated, steps, stopped = [int(i) for i in prompt_ids], [], [], "length"
    start = time.perf_counter()
    done = prefill(lm.model, ids)
    cache, logits = done.cache, done.logits[-1]  # (V,)
    for step in range(n):
        if step:  # the last token chosen through the model
            with model_pass(lm.model, cores=False):
                logits = lm.model(input_ids=torch.tensor([[ids[-1]]]), past_key_values=cache,
                                  use_cache=True).logits[0, -1]
        allowed = grammar.allowed()
        if not bool(allowed.any()):  # llguidance always allows something (at least the end); say so if not
            raise SessionError("constrain_dead_end")
        context = torch.tensor([ids])
        dist = derive(logits, context, cfg, len(ids), lm.tokens, allowed=allowed)
        entering = torch.softmax(run_stages(logits, context, cfg)[0][2].double(), -1).reshape(-1)  # after the penalty
        steps.append(ConstrainedStep(dist, int(allowed.sum()), float(entering[~allowed].sum())))
        token = dist.chosen.id
        ids.append(token)
        generated.append(token)
        if token in eos:
            stopped = "eos"
            break
        grammar.consume(token)
    text = lm.tokenizer.decode(generated, skip_special_tokens=True)
    return ConstrainedRun(constraint, [int(i) for i in prompt_ids], generated, text, steps, stopped,
                          time.perf_counter() - start)


def prefix_allowed_tokens_fn(lm: LoadedModel, constraint: Constraint, prompt_len: int):
    """For transformers' generate(prefix_allowed_tokens_fn=...): the allowed ids after a row's tokens, from a fresh
    matcher fed the row's generated tokens (no state carried between calls)."""
    def allowed_ids(batch_id: int, input_ids: torch.Tensor) -> list[int]:
        grammar = Grammar(lm, constraint)
        for token in input_ids[prompt_len:].tolist():
            grammar.consume(token)
        return grammar.allowed().nonzero().flatten().tolist()
    return allowed_ids
