"""What a lesson says, computed without the app: the figures its placeholders name (the model's transformers config,
the step as its JSON file holds it, published model shapes, a plain forward pass) and each reveal's answer (the cache
formula, a full forward pass's softmax, transformers' own logits processors in both orders); a step's session as the
Lesson tab starts it. Shared by tests/test_lessons.py, tests/test_lesson_grading.py and tests/test_lesson_views.py."""
import html
import json
import re

from model.classroom.lessons import LESSON_DIR

DISPLAY = {"smollm2": "SmolLM2-135M", "gemma3-270m": "Gemma 3 270M"}
LLAMA = {"Llama-2-7B": (32, 32, 128), "Llama-3-8B": (32, 8, 128), "Llama-2-70B": (80, 8, 128)}  # published configs
PLAIN = {"temperature": 1, "top_k": 0, "top_p": 1, "min_p": 0, "repetition_penalty": 1, "seed": 0}  # README: defaults


def lesson_lm(lesson: dict, lang: str, lesson_models: dict):
    """The loaded model a lesson runs on in `lang`: the one its file names for that language, among the tests' two
    (`lesson_models`: SmolLM2 for English, Gemma 3 270M for Chinese). Most lessons name those two; the Medusa lesson
    names SmolLM2 for both (its heads ship for SmolLM2 only)."""
    by_name = {lm.name: lm for lm in lesson_models.values()}
    return by_name[lesson["models"]["zh" if lang == "zh" else "en"]]


def started(lm, step: dict, lang: str = "en"):
    """The checked step's session, as the Lesson tab opens it: its prompt, then `generate` tokens under its settings."""
    from model.decoding.records import SamplingConfig
    from model.decoding.session import DecodeSession

    session = DecodeSession(lm)
    session.start(step["prompt"][lang], chat=step["mode"] == "chat")
    cfg = SamplingConfig(**step["settings"])
    for _ in range(step["generate"]):
        session.step(cfg)
    return session


def written(value) -> str:
    """A figure as a page writes it: thousands separators, a fraction in its shortest form."""
    return f"{value:g}" if isinstance(value, float) and value != int(value) else f"{int(value):,}"


def independent_figures(lm, raw_step: dict, lang: str, ids: list[int]) -> dict[str, str]:
    """Every figure a step's texts may name, computed without the app: the model's transformers config, the step as
    the JSON file holds it, published model shapes, one plain forward pass for a rank."""
    import torch

    config = lm.model.config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    out = {"model": DISPLAY[lm.name], "layers": config.num_hidden_layers, "heads": heads, "kv_heads": kv_heads,
           "group": heads // kv_heads, "head_dim": getattr(config, "head_dim", None) or config.hidden_size // heads,
           "dtype": str(next(lm.model.parameters()).dtype).removeprefix("torch."), "vocab": config.vocab_size,
           "generate": raw_step.get("generate", 0), **{**PLAIN, **raw_step.get("settings", {})}}
    out.pop("order", None)
    prompt = raw_step["prompt"] if isinstance(raw_step["prompt"], str) else raw_step["prompt"][lang]
    out["prompt_tokens"] = len(lm.tokenizer.encode(prompt, add_special_tokens=False))
    predict = raw_step.get("predict") or {}
    if predict.get("kind") == "cache_size":
        shape = (out["layers"], kv_heads, out["head_dim"]) if predict["model"] == "current" else LLAMA[predict["model"]]
        out.update(tokens=predict["tokens"], dtype=predict.get("dtype", "float16"),
                   predict_model=out["model"] if predict["model"] == "current" else predict["model"],
                   predict_layers=shape[0], predict_kv_heads=shape[1], predict_head_dim=shape[2])
    if predict.get("kind") == "kept_by_top_p":
        token = predict["token"] if isinstance(predict["token"], str) else predict["token"][lang]
        with torch.no_grad():
            logits = lm.model(torch.tensor([ids])).logits[0, -1]
        order = torch.argsort(logits, descending=True).tolist()
        out["rank"] = order.index(lm.tokenizer.encode(token, add_special_tokens=False)[0]) + 1
    return {name: value if isinstance(value, str) else written(value) for name, value in out.items()}


def expected(text: str, figures: dict[str, str]) -> str:
    for name, value in figures.items():
        text = text.replace("{%s}" % name, value)
    assert "{" not in text, text  # every placeholder a built-in lesson names is one it can fill
    return text


def raw_lessons() -> dict[str, dict]:
    """The built-in lesson files as JSON holds them (not as the checker returns them)."""
    return {d["id"]: d for d in (json.loads(p.read_text(encoding="utf-8")) for p in sorted(LESSON_DIR.glob("*.json")))}


DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}


def forward_logits(lm, ids):
    """The next token's logits (V,) by one plain forward pass over the whole text (no cache, no session)."""
    import torch

    with torch.no_grad():
        return lm.model(torch.tensor([ids])).logits[0, -1].float()


def kept_count(logits, settings: dict, temperature_last: bool) -> int:
    """Tokens left by transformers' own warpers over `logits`, temperature first (its order) or last (llama.cpp)."""
    from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
    import torch

    s = {**PLAIN, **settings}
    cuts = ([TopKLogitsWarper(s["top_k"])] if s["top_k"] else []) + \
        ([TopPLogitsWarper(s["top_p"])] if s["top_p"] < 1 else []) + ([MinPLogitsWarper(s["min_p"])] if s["min_p"] else [])
    heat = [TemperatureLogitsWarper(s["temperature"])] if s["temperature"] not in (0, 1) else []
    scores, ids = logits[None].clone(), torch.zeros((1, 1), dtype=torch.long)
    for warper in (cuts + heat if temperature_last else heat + cuts):
        scores = warper(ids, scores)
    return int(torch.isfinite(scores).sum())


def check_reveal(lm, raw_step: dict, lang: str, ids: list[int], guess: str, reveal: str) -> None:
    """The reveal's HTML against an independent answer to the step's question on `lm` after `ids`."""
    import torch
    from transformers import TopKLogitsWarper, TopPLogitsWarper

    predict, settings = raw_step["predict"], {**PLAIN, **raw_step.get("settings", {})}
    right = re.search(r'data-right="(\w+)"', reveal).group(1)
    if predict["kind"] == "cache_size":
        config = lm.model.config
        shape = (config.num_hidden_layers, config.num_key_value_heads,
                 getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads) \
            if predict["model"] == "current" else LLAMA[predict["model"]]
        size = 2 * shape[0] * shape[1] * shape[2] * predict["tokens"] * DTYPE_BYTES[predict.get("dtype", "float16")]
        assert int(re.search(r'data-bytes="(\d+)"', reveal).group(1)) == size
        assert right == str(guess == str(size)).lower()
        return
    if predict["kind"] == "step_time":  # measured: its line and verdict are checked in test_lessons (check_step_time)
        # graded on the measurement, or on the known answer (it grows) when the machine was too busy to measure one
        answer = re.search(r'data-answer="(\w+)"', reveal).group(1)
        assert right == str(guess == (answer if answer != "none" else "grows")).lower()
        return
    if predict["kind"] in ("prefill_vs_decode", "top_attribution"):  # measured / computed: checked in test_lessons
        assert right == ("none" if 'data-answer="none"' in reveal else str(guess == html.unescape(re.search(
            r'data-answer="([^"]*)"', reveal).group(1))).lower())
        return
    if predict["kind"] == "beam_vs_sample":  # both texts' log P: checked against a forward pass in test_lessons
        beam, sampled = (float(re.search(rf'data-{name}-logp="([^"]+)"', reveal).group(1)) for name in ("beam", "sampled"))
        answer = "beam" if beam > sampled else "sampled" if sampled > beam else "same"
        assert right == str(guess == answer).lower()
        return
    logits = forward_logits(lm, ids)
    if predict["kind"] == "kept_count":  # transformers' nucleus at the step's settings
        kept = kept_count(logits, settings, False)
        assert int(re.search(r'data-kept="(\d+)"', reveal).group(1)) == kept
        assert right == str(guess == str(kept)).lower()
        return
    if predict["kind"] == "order":
        first, last = (int(n.replace(",", "")) for n in re.findall(r"<b>(\d[\d,]*)</b>", reveal)[:2])
        assert (first, last) == (kept_count(logits, settings, False), kept_count(logits, settings, True))
        answer = "transformers" if first > last else "temperature_last" if last > first else "same"
        assert right == str(guess == answer).lower()
        return
    token = int(re.search(r'data-token-id="(\d+)"', reveal).group(1))
    prob = float(re.search(r'data-prob="([^"]+)"', reveal).group(1))
    assert abs(prob - float(torch.softmax(logits, -1)[token])) < 1e-4, (prob, float(torch.softmax(logits, -1)[token]))
    if predict["kind"] == "next_token":
        assert token == lm.tokenizer.encode(guess, add_special_tokens=False)[0]
        assert right == str(token == int(logits.argmax())).lower()
    else:  # kept_by_top_p: transformers' nucleus over the step's top-k, at T = 1 (the question's distribution)
        asked = predict["token"] if isinstance(predict["token"], str) else predict["token"][lang]
        assert token == lm.tokenizer.encode(asked, add_special_tokens=False)[0]
        scores = logits[None].clone()
        if settings["top_k"]:
            scores = TopKLogitsWarper(settings["top_k"])(None, scores)
        kept = bool(torch.isfinite(TopPLogitsWarper(settings["top_p"])(None, scores))[0, token])
        assert right == str((guess == "yes") == kept).lower()
