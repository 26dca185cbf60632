"""The same text through two tokenizers, side by side: each one's chips (byte runs grouped into the characters
they make), tokens per character, and the KV bytes and decode steps that costs. HTML, no plot."""
from __future__ import annotations

import html

from model.decoding.tokens import token_labels
from viz.i18n import t
from viz.labels import byte_note
from viz.style import MODEL_NAMES, format_bytes  # noqa: F401  (MODEL_NAMES: the page's imports of it)


def _chips(tokens, lang: str) -> str:
    """One chip per token; a run of byte tokens as one group, its character over its tokens' bytes."""
    out, labels, i = [], token_labels(tokens), 0
    while i < len(tokens):
        label = labels[i]
        if label.grouped:
            parts = "".join(f'<span class="tbt-chip tbt-prompt tbt-byte" title="{html.escape(byte_note(x, lang))}">'
                            f'{html.escape(x.hex)}</span>' for x in labels[i : i + label.parts])
            out.append(f'<span class="tbt-cgroup"><span class="tbt-cgroup-char">{html.escape(label.text)}</span>'
                       f'<span class="tbt-cgroup-parts">{parts}</span></span>')
            i += label.parts
            continue
        shown = html.escape(label.display, quote=False).replace("␣", '<i class="tbt-space">␣</i>')
        note = byte_note(label, lang)
        out.append(f'<span class="tbt-chip tbt-prompt" title="{html.escape(note or f"id {tokens[i].id}")}">{shown}</span>')
        i += 1
    return "".join(out)


def _block(reading, lang: str) -> str:
    name = MODEL_NAMES.get(reading.model, reading.model)
    summary = t("tok_summary", lang, tokens=len(reading.tokens), chars=reading.characters,
                per_char=f"{reading.tokens_per_character:.2f}", steps=len(reading.tokens),
                per_token=f"{reading.kv_bytes_per_token:,}", kv=format_bytes(reading.kv_bytes))
    return (f'<div class="tbt-tok-model" data-model="{html.escape(reading.model)}" data-tokens="{len(reading.tokens)}">'
            f'<div class="tbt-tok-name"><b>{html.escape(name)}</b> · {html.escape(summary)}</div>'
            f'<div class="tbt-chips" lang="{lang}">{_chips(reading.tokens, lang)}</div></div>')


def tokenizers_html(readings: list, example: list, lang: str = "en") -> str:
    """`readings`: the text as each model reads it (model.inside.tokenizers.compare); `example`: the same for the
    interview's subword example. Each model's chips and price, then what the difference means."""
    if len(readings) >= 2 and readings[0].tokens:
        a, b = readings[0], readings[1]
        ratio = len(a.tokens) / max(len(b.tokens), 1)
        verdict = t("tok_verdict", lang, a=MODEL_NAMES.get(a.model, a.model), b=MODEL_NAMES.get(b.model, b.model),
                    na=len(a.tokens), nb=len(b.tokens), ratio=f"{ratio:.2f}")
    else:
        verdict = t("tok_one_model", lang)
    blocks = "".join(_block(r, lang) for r in readings)
    sub = "".join(_block(r, lang) for r in example)
    return (f'<div class="tbt-tokenizers" lang="{lang}">{blocks}<p class="tbt-tok-verdict">{html.escape(verdict)}</p>'
            f'<h4>{html.escape(t("tok_subwords", lang))}</h4>{sub}</div>')
