"""A client for a serving engine's OpenAI-compatible completions API (vLLM, or any server with log-probabilities).

One call asks for one token over the exact token ids of the text so far, greedy (temperature 0, max_tokens 1),
with the largest number of top log-probabilities the engine allows (TOP_N, or fewer if the engine says so), and
returns a plain EngineTop record. One other call scores every position of a text in one request (vLLM's
prompt_logprobs: EnginePromptLogprobs), the Training view's parallel pass on an engine. A third streams a greedy
continuation and reads the engine's own speculative-decoding counts per verifying step (EngineSpecRun), when the
operator started it with n-gram speculation. The engine's URL comes only from the server's command line or
environment (app.py), never from a page.

Every fault is one keyed SessionError (model/errors.py): down, slow, unknown model, context too long, rate
limited, anything else. After a failure the client refuses at once, with the same error, for a back-off that
doubles (1 s up to 16 s) while the engine keeps failing, so a class of clicking students does not hammer it.
"""
from __future__ import annotations

import contextlib
import json
import math
import re
import threading
import time
from dataclasses import dataclass

import httpx

from model.errors import SessionError

# Asked first: the most the app uses (an operator's `vllm serve --max-logprobs 100`). A server allowing fewer (vLLM's
# default is 20) refuses with "max allowed: N" and the client adopts N; the more it sends, the fewer cuts are approximate.
TOP_N = 100
TIMEOUT_S = 30.0  # one token of a small model takes well under a second; a loaded GPU box a few
BACKOFF_S = (1.0, 16.0)  # first and longest pause after a failure
PROCESSED_KEPT = 8  # processed answers remembered per client: a chart redrawn asks the engine once
_MAX_ALLOWED = re.compile(r"max(?:imum)? allowed:?\s*(\d+)", re.I)  # vLLM: "... greater than max allowed: 20"
_CONTEXT = re.compile(r"maximum (?:context|model) length is (\d+)", re.I)


@dataclass(frozen=True)
class EngineTop:
    """The engine's answer for the position after `length` tokens.

    ids / logprobs: the top N token ids and their natural log-probabilities at T = 1, most probable first
    (raw: before any of the engine's own sampling stages). tail_mass: 1 - sum(exp(logprobs)), the T = 1
    probability of every other token, of which nothing else is known. last_logprob / last_rank: the log-probability
    and rank (1 = most probable) of the text's last token at its own position, when asked for (a forced token
    outside the previous top N), else None.
    """

    length: int
    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    tail_mass: float
    last_logprob: float | None = None
    last_rank: int | None = None


@dataclass(frozen=True)
class EnginePromptLogprobs:
    """The engine's numbers for every position of a text, from one request (vLLM's prompt_logprobs).

    ids: the text's token ids. For t = 1 .. len(ids) - 1 (index t - 1 in each tuple): logprobs, the natural
    log-probability of ids[t] given ids[:t] at T = 1 (raw); ranks, its rank there (1 = most probable; vLLM counts
    the tokens at least as probable); top1_ids / top1_logprobs, the most probable token there and its
    log-probability. next: the engine's top N after the whole text (as a step asks it). ms: the request's wall
    time, answer read included.
    """

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    ranks: tuple[int, ...]
    top1_ids: tuple[int, ...]
    top1_logprobs: tuple[float, ...]
    next: EngineTop
    ms: float


@dataclass(frozen=True)
class EngineProcessed:
    """The engine's own post-sampler log-probabilities of the token after `length` tokens (an engine started with
    `--logprobs-mode processed_logprobs`), under the settings `settings` sent with the request.

    ids / logprobs: the tokens the engine's sampler kept (finite log-probabilities), most probable first, at most
    `asked` of them. cut: the other ids it returned, at -inf (vLLM sends them as -9999; which ones it picks is
    arbitrary). complete: fewer than `asked` were kept, so ids is the engine's whole kept set; else only its top.
    """

    length: int
    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    cut: tuple[int, ...]
    asked: int
    settings: dict

    @property
    def complete(self) -> bool:
        return len(self.ids) < self.asked


# vLLM's answer for a token its sampler cut (-inf, clamped by its OpenAI server so the JSON stays valid)
CUT_LOGPROB = -9999.0


def processed_settings(temperature: float, top_k: int, top_p: float, min_p: float,
                       repetition_penalty: float) -> dict:
    """The session's settings as vLLM's SamplingParams mean them: top_k 0 is off in both, top_p 1, min_p 0 and a
    repetition penalty of 1 too, and a temperature below vLLM's 1e-5 is its greedy path (as 0 is the app's)."""
    return {"temperature": float(temperature), "top_k": int(top_k), "top_p": float(top_p), "min_p": float(min_p),
            "repetition_penalty": float(repetition_penalty)}


@dataclass(frozen=True)
class EngineSpecRun:
    """A greedy continuation streamed by the engine, with its own speculative-decoding counts (vLLM's
    `--per-request-spec-decode-metrics detailed`: vllm/v1/metrics/stats.py RequestSpecDecodeMetrics).

    ids: the text continued. generated: the token ids it wrote. chunks: tokens per streamed piece, in order (the
    first from the prompt's pass; then one per engine step, unless the stream merged two steps for a slow reader).
    drafted / accepted: per verifying step (a step the n-gram lookup proposed drafts for), the drafts proposed and
    the longest prefix of them the model kept; None when the engine was started without speculation. A step without
    drafts (no n-gram match) is not counted by vLLM: it writes one token, as plain decoding does. num_spec_tokens:
    the operator's k (None: no speculation). from_draft: per generated token, True when an accepted draft wrote it,
    False when the model's own pick did (the first token, a plain step's, or the one each verifying step adds);
    None when the stream's pieces do not line up with the counts (merged pieces), or without speculation.
    finish: the engine's finish_reason ("length", "stop"). ms: the request's wall time, stream read included.
    """

    ids: tuple[int, ...]
    generated: tuple[int, ...]
    chunks: tuple[int, ...]
    drafted: tuple[int, ...] | None
    accepted: tuple[int, ...] | None
    num_spec_tokens: int | None
    from_draft: tuple[bool, ...] | None
    finish: str
    ms: float

    @property
    def speculating(self) -> bool:
        """True when the engine returned per-step counts (started with speculation and detailed metrics)."""
        return self.drafted is not None

    @property
    def steps(self) -> int:
        """Verifying steps: engine passes that checked drafts (0 without speculation)."""
        return len(self.accepted or ())

    @property
    def tokens_per_pass(self) -> float:
        """Tokens each verifying pass wrote on average: mean(accepted + 1), vLLM's mean_acceptance_length (before
        a last step's surplus is cut at the length limit); 1.0 when no step verified anything."""
        return 1.0 + sum(self.accepted) / self.steps if self.steps else 1.0

    @property
    def acceptance_rate(self) -> float:
        """Accepted drafts / drafted tokens, over the request (0 when nothing was drafted)."""
        drafted = sum(self.drafted or ())
        return sum(self.accepted) / drafted if drafted else 0.0

    @property
    def passes(self) -> int | None:
        """Engine passes that wrote tokens, the prompt's included: one per streamed piece when they line up with
        the counts (from_draft known), else None."""
        return len(self.chunks) if self.from_draft is not None else None


@dataclass(frozen=True)
class EngineCard:
    """What the engine says about a model it serves (GET /v1/models): its id and context length, if given."""

    model: str
    context: int | None


class EngineClient:
    """The completions API of one engine, for one of its models. Thread-safe; shared by every session on it."""

    def __init__(self, url: str, model: str, timeout: float = TIMEOUT_S, top_n: int = TOP_N,
                 transport: httpx.BaseTransport | None = None, clock=time.monotonic):
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.top_n = top_n
        self.clock = clock
        self._http = httpx.Client(base_url=self.url, timeout=timeout, transport=transport, trust_env=False)
        self._lock = threading.Lock()
        self._failed: SessionError | None = None  # the last failure, repeated during the back-off
        self._retry_at = 0.0
        self._pause = BACKOFF_S[0]
        self._processed: list[tuple[tuple, EngineProcessed]] = []  # the last few processed answers (processed_next)

    # ---- the calls -----------------------------------------------------------------------------------
    def card(self) -> EngineCard:
        """The engine's card of this model (context length: vLLM's max_model_len); unknown_model if not served."""
        body = self._call("GET", "/models")
        for entry in body.get("data", []):
            if entry.get("id") == self.model:
                return EngineCard(self.model, entry.get("max_model_len"))
        raise self._fail(SessionError("engine_model_unknown", model=self.model))

    def next_token(self, ids: list[int], last_logprob: bool = False) -> EngineTop:
        """The top log-probabilities of the token after `ids` (asked as token ids, never as text)."""
        # prompt_logprobs 0: vLLM's the prompt tokens' own log-probabilities (and ranks), the last one read
        return parse_top(self._complete(ids, prompt_logprobs=0 if last_logprob else None), ids, last_logprob)

    def prompt_logprobs(self, ids: list[int]) -> EnginePromptLogprobs:
        """Every position of `ids` scored in ONE request (vLLM's prompt_logprobs: the whole text in one parallel
        pass, its prefix cache not read), with the top N after the last token; the request's wall time in ms."""
        t0 = time.perf_counter()
        body = self._complete(ids, prompt_logprobs=1)  # each token's own number and rank, and the top-1 beside it
        return parse_prompt_logprobs(body, ids, (time.perf_counter() - t0) * 1000)

    def processed_next(self, ids: list[int], settings: dict) -> EngineProcessed:
        """The engine's post-sampler log-probabilities of the token after `ids` under `settings`
        (processed_settings()): meaningful only from an engine started with --logprobs-mode processed_logprobs."""
        key = (tuple(ids), tuple(sorted(settings.items())), self.top_n)
        with self._lock:  # one chart is drawn more than once (its page, the presenter's, another language's)
            known = next((answer for k, answer in self._processed if k == key), None)
        if known is not None:
            return known
        body = self._complete(ids, settings=settings)  # (top_n may have become the engine's smaller maximum)
        answer = parse_processed(body, ids, self.top_n, settings)
        with self._lock:
            self._processed = [((key[0], key[1], self.top_n), answer), *self._processed[:PROCESSED_KEPT - 1]]
        return answer

    def speculative_completion(self, ids: list[int], max_tokens: int) -> EngineSpecRun:
        """A greedy continuation of `max_tokens` tokens after `ids` (token ids in and out), streamed so that each
        engine step's tokens arrive as one piece, with the engine's per-step drafted / accepted counts (None when
        the engine was started without speculation); the request's wall time in ms."""
        payload = {
            "model": self.model,
            "prompt": list(ids),
            "max_tokens": int(max_tokens),
            "temperature": 0.0,
            "logprobs": 0,  # the written token's own entry only: its id, as "token_id:123"
            "return_tokens_as_token_ids": True,
            "stream": True,
            "stream_options": {"include_usage": True},  # vLLM sends the per-request metrics with the usage
        }
        t0 = time.perf_counter()
        events = self._stream("/completions", payload)
        return parse_spec_stream(events, ids, (time.perf_counter() - t0) * 1000)

    def _complete(self, ids: list[int], prompt_logprobs: int | None = None, settings: dict | None = None) -> dict:
        """One completions request for one greedy token after `ids`, with the top N log-probabilities (and the
        prompt's own, when asked); a smaller maximum the engine states is adopted and asked once more."""
        payload = {
            "model": self.model,
            "prompt": list(ids),
            "max_tokens": 1,  # vLLM refuses 0
            "temperature": 0.0,
            "logprobs": self.top_n,
            "return_tokens_as_token_ids": True,  # "token_id:123" keys: two ids that decode alike stay two
        }
        if prompt_logprobs is not None:
            payload["prompt_logprobs"] = prompt_logprobs
        if settings is not None:  # the sampler's settings (processed_next): its log-probabilities are taken after them
            payload.update(settings)
        try:
            return self._call("POST", "/completions", payload)
        except SessionError as err:
            allowed = _MAX_ALLOWED.search(str(err.params.get("detail", "")))
            if err.key != "engine_refused" or not allowed or int(allowed.group(1)) >= self.top_n:
                raise
            with self._lock:  # the engine allows fewer: adopt its maximum and ask once more
                self.top_n, self._failed, self._retry_at = max(1, int(allowed.group(1))), None, 0.0
            return self._complete(ids, prompt_logprobs, settings)

    # ---- transport, faults and the back-off ------------------------------------------------------------
    def _refuse_while_failing(self) -> None:
        with self._lock:
            if self._failed is not None and self.clock() < self._retry_at:
                raise self._failed

    def _stream(self, path: str, payload: dict) -> list[dict]:
        """A streamed POST (server-sent events): every `data:` JSON object, in order, up to [DONE]; the same faults
        and back-off as _call. An error sent inside the stream is the engine's failure on this request."""
        self._refuse_while_failing()
        lines, status, detail = [], 0, ""
        with self._transport():
            with self._http.stream("POST", path, json=payload) as response:
                status = response.status_code
                if status >= 400:
                    response.read()
                    detail = _detail(response)
                else:
                    lines = list(response.iter_lines())
        if status >= 400:
            raise self._fail(fault(status, detail, self.model))
        events = []
        try:
            for line in lines:
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                events.append(json.loads(data))
        except ValueError:
            raise self._fail(SessionError("engine_bad_answer")) from None
        for event in events:
            error = event.get("error") if isinstance(event, dict) else None
            if error:
                status = int(error.get("code") or 500) if isinstance(error, dict) else 500
                message = str(error.get("message", error) if isinstance(error, dict) else error)[:300]
                raise self._fail(fault(status if status >= 400 else 500, message, self.model))
        self._answered()
        return events

    def _call(self, method: str, path: str, payload: dict | None = None) -> dict:
        self._refuse_while_failing()
        with self._transport():
            response = self._http.request(method, path, json=payload)
        if response.status_code >= 400:
            raise self._fail(fault(response.status_code, _detail(response), self.model))
        self._answered()
        try:
            return response.json()
        except ValueError:
            raise self._fail(SessionError("engine_bad_answer")) from None

    @contextlib.contextmanager
    def _transport(self):
        """httpx's failures to reach the engine as its keyed faults, remembered for the back-off."""
        try:
            yield
        except httpx.TimeoutException:
            raise self._fail(SessionError("engine_slow", seconds=round(self.timeout))) from None
        except httpx.HTTPError:
            raise self._fail(SessionError("engine_down")) from None

    def _answered(self) -> None:
        """The engine answered: the back-off starts again from its shortest pause."""
        with self._lock:
            self._failed, self._pause = None, BACKOFF_S[0]

    def _fail(self, err: SessionError) -> SessionError:
        """Remember a failure: the same error is raised at once until the back-off has passed (refusals of the
        request itself, a context too long, are the user's text, not the engine's health: no back-off)."""
        if err.key in ("engine_context",) or (err.key == "engine_refused" and _MAX_ALLOWED.search(err.params["detail"])):
            return err
        with self._lock:
            self._failed, self._retry_at = err, self.clock() + self._pause
            self._pause = min(self._pause * 2, BACKOFF_S[1])
        return err

    def close(self) -> None:
        self._http.close()


def _detail(response: httpx.Response) -> str:
    """The engine's own words about an error (OpenAI style {"error": {"message"}}, or FastAPI's {"detail"})."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    error = body.get("error", body) if isinstance(body, dict) else body
    text = error.get("message") or error.get("detail") if isinstance(error, dict) else error
    return str(text)[:300]


def fault(status: int, detail: str, model: str) -> SessionError:
    """One keyed sentence for an engine's error answer."""
    context = _CONTEXT.search(detail)
    if context:
        return SessionError("engine_context", limit=int(context.group(1)))
    if status == 404 or (status == 400 and "does not exist" in detail):
        return SessionError("engine_model_unknown", model=model)
    if status == 429:
        return SessionError("engine_rate_limited")
    if status >= 500:
        return SessionError("engine_error", status=status)
    return SessionError("engine_refused", status=status, detail=detail)


def _token_id(key: str) -> int:
    """"token_id:123" -> 123 (vLLM's return_tokens_as_token_ids)."""
    return int(key.rsplit(":", 1)[1])


def parse_top(body: dict, ids: list[int], last_logprob: bool = False) -> EngineTop:
    """An EngineTop from a completions answer; engine_bad_answer if it holds no log-probabilities."""
    try:
        choice = body["choices"][0]
        top = choice["logprobs"]["top_logprobs"][0]  # {"token_id:123": logprob, ...} for the one generated token
        pairs = sorted(((_token_id(k), float(v)) for k, v in top.items()), key=lambda p: (-p[1], p[0]))
        last_lp = last_rank = None
        if last_logprob:
            entry = choice["prompt_logprobs"][-1]  # {"123": {"logprob", "rank", "decoded_token"}} at the last token
            last = entry[str(ids[-1])]
            last_lp, last_rank = float(last["logprob"]), int(last["rank"])
    except (KeyError, IndexError, TypeError, ValueError):
        raise SessionError("engine_bad_answer") from None
    logprobs = tuple(lp for _, lp in pairs)
    tail = max(0.0, 1.0 - math.fsum(math.exp(lp) for lp in logprobs))
    return EngineTop(len(ids), tuple(i for i, _ in pairs), logprobs, tail, last_lp, last_rank)


def parse_prompt_logprobs(body: dict, ids: list[int], ms: float) -> EnginePromptLogprobs:
    """An EnginePromptLogprobs from a completions answer asked with prompt_logprobs >= 1; engine_bad_answer if
    it lacks a position's entry, the token's own number or its top-1.

    vLLM's choices[0].prompt_logprobs: None for the first token (nothing predicts it), then per position a dict
    "token id" -> {"logprob", "rank", "decoded_token"} holding the actual token and the top ones (a -inf clamped
    to -9999)."""
    try:
        entries = body["choices"][0]["prompt_logprobs"]
        if len(entries) != len(ids) or entries[0] is not None:
            raise ValueError("one entry per token, None first")
        logprobs, ranks, top1_ids, top1_lps = [], [], [], []
        for token, entry in zip(ids[1:], entries[1:]):
            own = entry[str(token)]
            top1 = min(entry.items(), key=lambda kv: (int(kv[1]["rank"]), -float(kv[1]["logprob"]), int(kv[0])))
            logprobs.append(float(own["logprob"]))
            ranks.append(int(own["rank"]))
            top1_ids.append(int(top1[0]))
            top1_lps.append(float(top1[1]["logprob"]))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise SessionError("engine_bad_answer") from None
    return EnginePromptLogprobs(tuple(ids), tuple(logprobs), tuple(ranks), tuple(top1_ids), tuple(top1_lps),
                                parse_top(body, ids), ms)


def parse_processed(body: dict, ids: list[int], asked: int, settings: dict) -> EngineProcessed:
    """An EngineProcessed from a completions answer of a processed_logprobs engine; engine_bad_answer if it holds
    no log-probabilities. The sampled token, merged into the top ones by vLLM, is one of them (kept or not)."""
    try:
        top = body["choices"][0]["logprobs"]["top_logprobs"][0]
        pairs = [(_token_id(k), float(v)) for k, v in top.items()]
    except (KeyError, IndexError, TypeError, ValueError):
        raise SessionError("engine_bad_answer") from None
    kept = sorted(((i, lp) for i, lp in pairs if lp > CUT_LOGPROB and math.isfinite(lp)), key=lambda p: (-p[1], p[0]))
    cut = tuple(sorted(i for i, lp in pairs if not (lp > CUT_LOGPROB and math.isfinite(lp))))
    return EngineProcessed(len(ids), tuple(i for i, _ in kept), tuple(lp for _, lp in kept), cut, asked, dict(settings))


def draft_marks(chunks: list[int], accepted: list[int]) -> tuple[bool, ...] | None:
    """Which generated tokens accepted drafts wrote, from the streamed pieces' sizes and vLLM's per-step counts;
    None when the two do not line up (the stream merged pieces of two steps).

    How vLLM writes them (vllm/v1/core/sched/scheduler.py update_from_output): the prompt's pass writes one token;
    then each step writes its accepted drafts and one token of the model's own (accepted + 1), and vLLM counts the
    step only if the n-gram lookup proposed drafts for it; a step without drafts writes one token, uncounted. The
    request's last step is cut at max_tokens or an end-of-text token (vLLM does not shorten the drafts to what is
    left), so the last piece may hold fewer than accepted + 1. So: the first piece 1 token; a piece of m > 1 tokens
    is the next counted step, with accepted m - 1, whose first m - 1 tokens are the drafts'; a piece of 1 token is a
    counted step with accepted 0, or an uncounted one; the last piece may be the last counted step cut to m <=
    accepted tokens, all of them drafts.
    """
    if not chunks or chunks[0] != 1:
        return None
    step, last = 0, len(chunks) - 1
    marks = [False]
    for j, m in enumerate(chunks[1:], start=1):
        drafts = 0
        if step < len(accepted) and accepted[step] == m - 1:
            drafts = m - 1
            step += 1
        elif j == last and step == len(accepted) - 1 and accepted[step] >= m:  # the last step, cut
            drafts = m
            step += 1
        elif m > 1:  # pieces of more than one token come only from counted steps
            return None
        marks += [True] * drafts + [False] * (m - drafts)
    return tuple(marks) if step == len(accepted) else None


def parse_spec_stream(events: list[dict], ids: list[int], ms: float) -> EngineSpecRun:
    """An EngineSpecRun from a streamed completion's events (return_tokens_as_token_ids, logprobs 0, the usage
    chunk last with vLLM's metrics.speculative_decoding); engine_bad_answer if a piece holds no token ids."""
    chunks, generated, finish, spec = [], [], "", None
    try:
        for event in events:
            if event.get("choices"):
                choice = event["choices"][0]
                tokens = [_token_id(k) for k in (choice.get("logprobs") or {}).get("tokens") or []]
                if choice.get("text") and not tokens:
                    raise ValueError("a piece of text without its token ids")
                if tokens:
                    chunks.append(len(tokens))
                    generated += tokens
                finish = choice.get("finish_reason") or finish
            metrics = event.get("metrics") or {}
            spec = metrics.get("speculative_decoding") or spec
        drafted = accepted = k = None
        if spec:
            k = int(spec["num_spec_tokens"])
            if spec.get("per_step_accepted") is not None:
                drafted = tuple(int(x) for x in spec["per_step_drafted"])
                accepted = tuple(int(x) for x in spec["per_step_accepted"])
            elif not spec.get("num_spec_steps"):  # vLLM leaves the lists out when they are empty: no step drafted
                drafted = accepted = ()
            # else only vLLM's summary (--per-request-spec-decode-metrics summary): no steps to place
        if drafted is not None and (len(drafted) != len(accepted) or any(not 0 <= a <= d for a, d in
                                                                          zip(accepted, drafted))):
            raise ValueError("accepted within drafted, one pair per step")
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise SessionError("engine_bad_answer") from None
    marks = draft_marks(chunks, list(accepted)) if accepted is not None else None
    return EngineSpecRun(tuple(ids), tuple(generated), tuple(chunks), drafted, accepted, k, marks, finish, ms)
