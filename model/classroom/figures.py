"""A lesson's figures: the numbers a lesson text may state, computed by the app for the step's model and settings.

A lesson file states no number (model/classroom/lessons.py refuses one, NUMBER below): it writes `{layers}`,
`{top_p}`, `{tokens}`... and the page fills them when it shows the text, from the loaded model's config, the step's
settings and its question. So a lesson is right on whatever model it runs on, by construction. Pure: no gradio,
no words; the model's own figures come in as its ModelInfo (and, for a token's rank or a prompt's length, its
started session).
"""
from __future__ import annotations

import re

from model.decoding.records import SETTING_NAMES, ModelInfo, SamplingConfig

# A number in a text a student reads: a run of digits not glued to an ASCII letter or hyphen (100, 2,048, 0.9,
# 30 layers, 18 层, 50%); Llama-2-7B, fp16, 7B, 270M, top-k pass. "O(1)" (a complexity, not a figure) is exempt.
NUMBER = re.compile(r"(?<![A-Za-z0-9.,\-])\d[\d,.]*(?![A-Za-z0-9\-])")
EXEMPT = ("O(1)",)
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

MODEL_FIGURES = ("model", "layers", "heads", "kv_heads", "group", "head_dim", "dtype", "vocab")
STEP_FIGURES = (*(n for n in SETTING_NAMES if n != "order"), "generate", "prompt_tokens")
KIND_FIGURES = {"cache_size": ("tokens", "predict_model", "predict_layers", "predict_kv_heads", "predict_head_dim"),
                "kept_by_top_p": ("rank",)}


def numbers_in(text: str) -> list[str]:
    """The numbers `text` states (NUMBER), the exempt forms and the placeholders left out."""
    for exempt in EXEMPT:
        text = text.replace(exempt, " ")
    return [m.group(0).rstrip(".,") for m in NUMBER.finditer(PLACEHOLDER.sub(" ", text))]


def placeholders_in(text: str) -> list[str]:
    """The names of the `{placeholders}` in `text`, in order."""
    return PLACEHOLDER.findall(text)


def known_placeholders(kind: str | None) -> tuple[str, ...]:
    """The placeholders a step's text and question may use: the model's, the step's, its question kind's."""
    return (*MODEL_FIGURES, *STEP_FIGURES, *KIND_FIGURES.get(kind, ()))


def number(value) -> str:
    """A figure as the page writes it: whole numbers with thousands separators, others in their shortest form."""
    if isinstance(value, float) and value != int(value):
        return f"{value:g}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{int(value):,}"
    return str(value)


def step_figures(step: dict, info: ModelInfo, model_name: str, session=None, lang: str = "en") -> dict[str, str]:
    """Every figure a step's texts may name, formatted (number): the model's (`info`, shown as `model_name`), the
    step's settings (the engine's defaults where the lesson sets none), its question's. `session`: the step's
    started DecodeSession, for `{prompt_tokens}` (the step's prompt in `lang`, cut by the model's tokenizer) and a
    kept_by_top_p question's `{rank}` (without one they are left out, and fill() leaves them as written)."""
    cfg = SamplingConfig(**step["settings"])
    figures = {"model": model_name, "layers": info.layers, "heads": info.heads, "kv_heads": info.kv_heads,
               "group": info.heads // info.kv_heads, "head_dim": info.head_dim, "dtype": info.dtype,
               "vocab": info.vocab, "generate": step["generate"],
               **{name: getattr(cfg, name) for name in SETTING_NAMES if name != "order"}}
    predict = step.get("predict") or {}
    if predict.get("kind") == "cache_size":
        from model.classroom.quiz import CURRENT_MODEL, cache_shape

        layers, kv_heads, head_dim = cache_shape(predict, info)
        figures.update(tokens=predict["tokens"], dtype=predict["dtype"],  # the question's dtype, not the model's
                       predict_model=model_name if predict["model"] == CURRENT_MODEL else predict["model"],
                       predict_layers=layers, predict_kv_heads=kv_heads, predict_head_dim=head_dim)
    if session is not None:
        prompt = step["prompt"]["zh" if lang == "zh" else "en"]  # as the tokenizer cuts it (no special tokens)
        figures["prompt_tokens"] = len(session.lm.tokenizer.encode(prompt, add_special_tokens=False))
        if predict.get("kind") == "kept_by_top_p":
            from model.classroom.quiz import token_rank

            figures["rank"] = token_rank(session, predict["token"]["zh" if lang == "zh" else "en"], cfg)
    return {name: number(value) for name, value in figures.items()}


def fill(text: str, figures: dict[str, str]) -> str:
    """`text` with each `{placeholder}` it names replaced by its figure (one not in `figures` left as written)."""
    return PLACEHOLDER.sub(lambda m: figures.get(m.group(1), m.group(0)), text)

