"""Lesson files: the files in assets/lessons/ (format in its README.md), read and checked field by field.

Pure: JSON in, a checked lesson (plain dicts) out, or a LessonError naming the first bad field, e.g.
"steps[2].predict.kind: must be one of next_token, kept_by_top_p, cache_size, order". No gradio, no model pass;
the refusals' words are in model/errors.py (the lesson_* keys), the lesson view is ui/views/lesson.py.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

from model.classroom.figures import known_placeholders, numbers_in, placeholders_in
from model.classroom.quiz import CURRENT_MODEL  # cache_size: the model the page runs
from model.decoding.kv import DTYPE_BYTES, PRESETS
from model.errors import SessionError, message
from model.parse import valid_text

LESSON_DIR = Path(__file__).resolve().parents[2] / "assets" / "lessons"
MAX_LESSON_BYTES = 64_000  # a lesson file (and the copy of an uploaded one the browser keeps)
MAX_STEPS = 20
MAX_TEXT = 800  # characters of one language's text
MAX_PROMPT = 500
MAX_GENERATE = 30  # tokens a step may write before it is shown
KINDS = ("next_token", "kept_by_top_p", "cache_size", "order", "step_time", "kept_count", "beam_vs_sample",
         "prefill_vs_decode", "top_attribution")
MODES = ("raw", "chat")
ORDER_CHOICES = ("transformers", "temperature_last", "same")
SETTING_TYPES = {"temperature": float, "top_k": int, "top_p": float, "min_p": float, "repetition_penalty": float,
                 "order": str, "seed": int}
LESSON_FIELDS = {"format", "id", "title", "summary", "models", "steps"}
STEP_FIELDS = {"prompt", "mode", "settings", "generate", "view", "text", "predict"}
PREDICT_FIELDS = {"next_token": {"kind", "question", "choices", "any"},
                  "kept_by_top_p": {"kind", "question", "token"},
                  "cache_size": {"kind", "question", "model", "tokens", "dtype", "myth_factor"},
                  "order": {"kind", "question"},
                  "step_time": {"kind", "question", "tokens"},
                  "kept_count": {"kind", "question"},
                  "beam_vs_sample": {"kind", "question", "width", "tokens"},
                  "prefill_vs_decode": {"kind", "question", "tokens"},
                  "top_attribution": {"kind", "question", "choices"}}
# the measured and searched questions' bounds (a lesson's reveal stays a few seconds on two cores)
STEP_TIME_TOKENS = (64, 512, 512)  # step_time.tokens: low, high, default (a session's MAX_TOKENS)
BEAM_WIDTH = (2, 8, 4)  # beam_vs_sample.width: low, high (model.strategies.beams.MAX_WIDTH), default
BEAM_TOKENS = (4, 32, 16)  # beam_vs_sample.tokens: low, high (model.strategies.beams.MAX_NEW_TOKENS), default
PREFILL_TOKENS = (16, 512, 128)  # prefill_vs_decode.tokens: low, high (the view's longest prefill), default
MYTH_FACTORS = (1 / 64, 64)  # cache_size.myth_factor: a wrong size's ratio to the right one, not 1


class LessonError(SessionError):
    """A lesson file refused: `field` is where (steps[2].predict.kind), the key (model/errors.py) says what is
    wrong. A parameter that is itself a refusal (a setting out of range) is said in the page's language too, and
    one named *_key is a key of the same table (lesson_kind_str: "a text")."""

    def __init__(self, key: str, **params):
        self.key, self.params = key, params
        ValueError.__init__(self, self.text("en"))  # a key MESSAGES lacks: a KeyError here, at once

    def text(self, lang: str = "en") -> str:
        def said(name, value):
            if isinstance(value, SessionError):
                return value.text(lang)
            if name.endswith("_key"):
                return message(value, lang)
            # a name from the file is shown as text: the page renders a message as (sanitised) HTML
            return html.escape(value, quote=False) if isinstance(value, str) else value

        params = {name.removesuffix("_key"): said(name, value) for name, value in self.params.items()}
        return message(self.key, lang, **params)


def read_lesson(raw: bytes | str, tabs) -> dict:
    """A lesson file's bytes, parsed and checked against the page's tabs; the lesson (defaults filled in)."""
    if len(raw) > MAX_LESSON_BYTES:
        raise LessonError("lesson_too_big", limit=f"{MAX_LESSON_BYTES:,}")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        raise LessonError("lesson_not_json", detail=str(err)[:120]) from None
    return check_lesson(data, tuple(tabs))


def check_lesson(data, tabs: tuple[str, ...]) -> dict:
    """The lesson `data` (parsed JSON) with every field checked, or a LessonError naming the first bad one."""
    _all_valid_text(data)
    lesson = _object(data, "lesson", LESSON_FIELDS, required=("id", "title", "steps"))
    if lesson.get("format", 1) != 1:
        raise LessonError("lesson_format", field="format", value=repr(lesson["format"]))
    lesson_id = lesson["id"]
    if not isinstance(lesson_id, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", lesson_id):
        raise LessonError("lesson_id", field="id", value=repr(lesson_id)[:60])
    steps = lesson["steps"]
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_STEPS:
        raise LessonError("lesson_steps", field="steps", most=MAX_STEPS)
    models = lesson.get("models", {})
    if not isinstance(models, dict) or set(models) - {"en", "zh"} or \
            not all(isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][\w.:-]{0,59}", name) for name in models.values()):
        raise LessonError("lesson_models", field="models")
    return {"format": 1, "id": lesson_id, "title": _read(lesson["title"], "title", ()),
            "summary": _read(lesson["summary"], "summary", ()) if "summary" in lesson else None, "models": dict(models),
            "steps": [_step(step, f"steps[{i}]", tabs) for i, step in enumerate(steps)]}


def _step(data, where: str, tabs) -> dict:
    step = _object(data, where, STEP_FIELDS, required=("prompt", "view", "text"))
    prompt = step["prompt"]
    if isinstance(prompt, str):
        prompt = {"en": prompt, "zh": prompt}
    prompt = _text(prompt, f"{where}.prompt", MAX_PROMPT)
    mode = step.get("mode", "raw")
    if mode not in MODES:
        raise LessonError("lesson_one_of", field=f"{where}.mode", choices=", ".join(MODES), value=repr(mode)[:60])
    if step["view"] not in tabs:
        raise LessonError("lesson_one_of", field=f"{where}.view", choices=", ".join(tabs),
                          value=repr(step["view"])[:60])
    generate = step.get("generate", 0)
    if isinstance(generate, bool) or not isinstance(generate, int) or not 0 <= generate <= MAX_GENERATE:
        raise LessonError("lesson_whole", field=f"{where}.generate", low=0, high=MAX_GENERATE)
    kind = step["predict"].get("kind") if isinstance(step.get("predict"), dict) else None
    return {"prompt": prompt, "mode": mode, "settings": _settings(step.get("settings", {}), f"{where}.settings"),
            "generate": generate, "view": step["view"],
            "text": _read(step["text"], f"{where}.text", known_placeholders(kind)),
            "predict": _predict(step["predict"], f"{where}.predict") if step.get("predict") is not None else None}


def _settings(data, where: str) -> dict:
    from model.decoding.records import SamplingConfig  # the engine's own range checks (a plain dataclass, no model)

    settings = _object(data, where, set(SETTING_TYPES), required=())
    for name, value in settings.items():
        kind = SETTING_TYPES[name]
        kind_key = {str: "lesson_kind_str", int: "lesson_kind_int", float: "lesson_kind_float"}[kind]
        number_ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (kind is float or value == int(value))
        if not (isinstance(value, str) if kind is str else number_ok):
            raise LessonError("lesson_type", field=f"{where}.{name}", kind_key=kind_key)
    try:
        SamplingConfig(**settings).validate()
    except SessionError as err:
        raise LessonError("lesson_setting", field=where, reason=err) from None
    return settings


def _predict(data, where: str) -> dict:
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in KINDS:
        if not isinstance(data, dict):
            raise LessonError("lesson_type", field=where, kind_key="lesson_kind_object")
        raise LessonError("lesson_one_of", field=f"{where}.kind", choices=", ".join(KINDS), value=repr(kind)[:60])
    fields = {"next_token": ("choices",), "kept_by_top_p": ("token",), "cache_size": ("model", "tokens"),
              "order": (), "step_time": (), "kept_count": (), "beam_vs_sample": (), "prefill_vs_decode": (),
              "top_attribution": ("choices",)}[kind]
    predict = _object(data, where, PREDICT_FIELDS[kind], required=("kind", "question", *fields))
    out = {"kind": kind, "question": _read(predict["question"], f"{where}.question", known_placeholders(kind))}
    if kind == "top_attribution":
        out["choices"] = _per_language(predict["choices"], f"{where}.choices", _choices)
    elif kind == "next_token":
        out.update(choices=_per_language(predict["choices"], f"{where}.choices", _choices),
                   any=predict.get("any", False))
        if not isinstance(out["any"], bool):
            raise LessonError("lesson_type", field=f"{where}.any", kind_key="lesson_kind_bool")
    elif kind == "kept_by_top_p":
        out["token"] = _per_language(predict["token"], f"{where}.token", _token_text)
    elif kind == "cache_size":
        model = predict["model"]
        if model not in (CURRENT_MODEL, *PRESETS):
            raise LessonError("lesson_one_of", field=f"{where}.model", choices=", ".join((CURRENT_MODEL, *PRESETS)),
                              value=repr(model)[:60])
        tokens, dtype = predict["tokens"], predict.get("dtype", "float16")
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= 1_000_000:
            raise LessonError("lesson_whole", field=f"{where}.tokens", low=1, high=1_000_000)
        if dtype not in DTYPE_BYTES:
            raise LessonError("lesson_one_of", field=f"{where}.dtype", choices=", ".join(DTYPE_BYTES),
                              value=repr(dtype)[:60])
        out.update(model=model, tokens=tokens, dtype=dtype)
        if "myth_factor" in predict:
            factor = predict["myth_factor"]
            if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor == 1 or \
                    not MYTH_FACTORS[0] <= factor <= MYTH_FACTORS[1]:
                raise LessonError("lesson_myth_factor", field=f"{where}.myth_factor", low="1/64", high=64)
            out["myth_factor"] = factor
    elif kind == "step_time":
        out["tokens"] = _bounded_field(predict.get("tokens", STEP_TIME_TOKENS[2]), f"{where}.tokens",
                                       *STEP_TIME_TOKENS[:2])
    elif kind == "prefill_vs_decode":
        out["tokens"] = _bounded_field(predict.get("tokens", PREFILL_TOKENS[2]), f"{where}.tokens", *PREFILL_TOKENS[:2])
    elif kind == "beam_vs_sample":
        out.update(width=_bounded_field(predict.get("width", BEAM_WIDTH[2]), f"{where}.width", *BEAM_WIDTH[:2]),
                   tokens=_bounded_field(predict.get("tokens", BEAM_TOKENS[2]), f"{where}.tokens", *BEAM_TOKENS[:2]))
    return out


def _bounded_field(value, where: str, low: int, high: int) -> int:
    """A whole number in [low, high] of a question's field, or a LessonError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise LessonError("lesson_whole", field=where, low=low, high=high)
    return value


def _all_valid_text(data) -> None:
    """Refuse a file with a lone surrogate anywhere (a JSON escape such as \\ud800), in a name or a value, read or
    not: its text would reach the room's students and break their pages (issue 32). Checked first, so no other
    refusal quotes it; iterative, so a file nested as deep as json.loads reads is walked without a RecursionError."""
    stack = [(data, "lesson")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            valid_text(value, "lesson_invalid_text", LessonError, field=where)
        elif isinstance(value, dict):
            for name in value:
                valid_text(name, "lesson_invalid_text", LessonError, field=where)
            stack.extend((item, name if where == "lesson" else f"{where}.{name}")
                         for name, item in reversed(value.items()))  # (reversed: the first in the file is said)
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]") for i, item in reversed(list(enumerate(value))))


def _object(data, where: str, allowed: set[str], required) -> dict:
    if not isinstance(data, dict):
        raise LessonError("lesson_type", field=where, kind_key="lesson_kind_object")
    for name in data:
        if name not in allowed:
            raise LessonError("lesson_unknown", field=f"{where}.{name}" if where != "lesson" else str(name)[:60],
                              allowed=", ".join(sorted(allowed)))
    for name in required:
        if name not in data:
            raise LessonError("lesson_missing", field=f"{where}.{name}" if where != "lesson" else name)
    return data


def _text(data, where: str, limit: int = MAX_TEXT) -> dict:
    """A text the student reads: {"en": ..., "zh": ...}, both there, neither empty nor too long."""
    if not isinstance(data, dict):
        raise LessonError("lesson_languages", field=where)
    for lang in ("en", "zh"):
        if lang not in data:
            raise LessonError("lesson_missing", field=f"{where}.{lang}")
        if not isinstance(data[lang], str) or not data[lang].strip():
            raise LessonError("lesson_type", field=f"{where}.{lang}", kind_key="lesson_kind_str")
        if len(data[lang]) > limit:
            raise LessonError("lesson_too_long", field=f"{where}.{lang}", limit=limit)
    extra = set(data) - {"en", "zh"}
    if extra:
        raise LessonError("lesson_unknown", field=f"{where}.{sorted(extra)[0]}"[:80], allowed="en, zh")
    return {"en": data["en"], "zh": data["zh"]}


def _read(data, where: str, placeholders: tuple[str, ...]) -> dict:
    """A text the student reads (title, summary, a step's text, a question), checked as _text does, and against the
    numbers rule: it states no number (every figure a lesson states is the app's, computed for the model it runs
    on: a `{placeholder}` of `placeholders`, filled when it is shown, model/classroom/figures.py), and names no
    other placeholder. A title and a summary take none (the lesson list shows them before any model runs)."""
    text = _text(data, where)
    for lang in ("en", "zh"):
        said = numbers_in(text[lang])
        if said:
            raise LessonError("lesson_number", field=f"{where}.{lang}", number=said[0][:40])
        for name in placeholders_in(text[lang]):
            if name not in placeholders:
                if not placeholders:
                    raise LessonError("lesson_placeholder_none", field=f"{where}.{lang}", name="{%s}" % name[:40])
                raise LessonError("lesson_placeholder", field=f"{where}.{lang}", name="{%s}" % name[:40],
                                  allowed=", ".join("{%s}" % known for known in placeholders))
    return text


def _per_language(data, where: str, check) -> dict:
    """A question's tokens, one for both languages or {"en": ..., "zh": ...} (each language's model has its own
    vocabulary), checked by `check`; always as {"en", "zh"}."""
    if isinstance(data, dict):
        _object(data, where, {"en", "zh"}, required=("en", "zh"))
        return {lang: check(data[lang], f"{where}.{lang}") for lang in ("en", "zh")}
    value = check(data, where)
    return {"en": value, "zh": value}


def _choices(choices, where: str) -> list[str]:
    if not isinstance(choices, list) or not 2 <= len(choices) <= 6:
        raise LessonError("lesson_choices", field=where, low=2, high=6)
    for j, choice in enumerate(choices):
        _token_text(choice, f"{where}[{j}]")
    if len(set(choices)) != len(choices):
        raise LessonError("lesson_choices_twice", field=where)
    return list(choices)


def _token_text(value, where: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 40:
        raise LessonError("lesson_token", field=where)
    return value


def builtin_lessons(tabs) -> tuple[dict[str, dict], dict[str, LessonError]]:
    """Every lesson file in assets/lessons/ checked against the page's tabs, by id, in file-name order
    (01-..., 02-...); and the files refused, by name (a lesson naming a tab this page does not have)."""
    lessons, refused = {}, {}
    for path in sorted(LESSON_DIR.glob("*.json")):
        try:
            lesson = read_lesson(path.read_bytes(), tabs)
        except LessonError as err:
            refused[path.name] = err
            continue
        lessons[lesson["id"]] = lesson
    return lessons, refused


def lesson_model(lesson: dict, lang: str, available) -> str | None:
    """The model a lesson runs on in `lang`: the one its file names for that language (its questions were checked
    on that model: SmolLM2 for English, Gemma 3 270M for Chinese in the built-in lessons), if this server offers
    it (`available`: model names); None for a lesson naming none, or one not offered: the page's model then."""
    name = lesson.get("models", {}).get("zh" if lang == "zh" else "en")
    return name if name in available else None


def say(text: dict, lang: str) -> str:
    """One of a lesson's texts in the page's language."""
    return text["zh" if lang == "zh" else "en"]
