"""A lesson's reveal as HTML: the engine's answer (a model/classroom/quiz.py reveal record) in the page's words."""
from __future__ import annotations

import html
from typing import Callable

from viz.style import format_bytes

Say = Callable[..., str]  # say(key, **fmt): one of the page's texts in its language (ui/strings.py)


def reveal_percent(p: float) -> str:
    """A probability in [0, 1] as the reveal says it: one decimal, three below 0.1 % ('0.042%')."""
    return f"{100 * p:.1f}%" if p >= 0.001 else f"{100 * p:.3f}%"


def bold_marked(text: str) -> str:
    """The page's strings mark emphasis as **so**: each marked part in <b>, the marks gone."""
    parts = text.replace("**", "\0").split("\0")
    return "".join(f"<b>{part}</b>" if i % 2 else part for i, part in enumerate(parts))


def reveal_html(answer: dict, say: Say) -> str:
    """The reveal of a question's answer: the verdict and what the engine says, with its numbers in data-
    attributes too (data-kind, data-right; data-token-id and data-prob for a token; data-bytes for a cache).

    `answer`: model.classroom.quiz.reveal_record's record; `say`: the page's words in its language. Token texts are
    HTML-escaped; the words are the page's own (their **marks** become bold).
    """
    code = lambda s: f"<code>{html.escape(s)}</code>"  # noqa: E731
    pct = reveal_percent
    kind = answer["kind"]
    right = answer["right"]  # None: revealed without a guess (no verdict)
    verdict = "" if right is None else say("lesson_right" if right else "lesson_wrong")
    data = f'data-kind="{kind}" data-right="{"none" if right is None else str(right).lower()}"'
    if kind in ("next_token", "kept_by_top_p"):
        data += f' data-token-id="{answer["token_id"]}" data-prob="{answer["prob"]!r}"'
    if kind == "next_token" and right is None:
        body = say("lesson_reveal_answer", top=code(answer["top"]), top_prob=pct(answer["top_prob"]),
                   rank=answer["rank"], vocab=answer["vocab"], chosen=code(answer["chosen"]))
    elif kind == "next_token":
        body = say("lesson_reveal_token", guess=code(answer["token"]), prob=pct(answer["prob"]), rank=answer["rank"],
                   vocab=answer["vocab"], top=code(answer["top"]), top_prob=pct(answer["top_prob"]),
                   chosen=code(answer["chosen"]))
        if answer["several"]:
            body = say("lesson_first_token", token=code(answer["token"])) + " " + body
    elif kind == "kept_by_top_p":
        body = say("lesson_reveal_top_p", token=code(answer["token"]), prob=pct(answer["prob"]), rank=answer["rank"],
                   before=pct(answer["before"]), p=answer["p"], fate=say("lesson_yes" if answer["kept"] else "lesson_no"))
    elif kind == "order":
        body = say("lesson_reveal_order", first=answer["first"], last=answer["last"])
    else:
        body = say("lesson_reveal_cache", layers=answer["layers"], kv_heads=answer["kv_heads"],
                   head_dim=answer["head_dim"], tokens=answer["tokens"], bytes_per=answer["bytes_per"],
                   bytes=answer["bytes"], size=format_bytes(answer["bytes"]))
        data += f' data-bytes="{answer["bytes"]}"'
    verdict = f"<b>{verdict}</b> " if verdict else ""
    return f'<div class="tbt-lesson-reveal" {data}><p>{verdict}{bold_marked(body)}</p></div>'
