"""The text so far as token chips: prompt tokens plain, generated tokens shaded by how probable the model found them."""
from __future__ import annotations

import html
from functools import lru_cache

from plotly.colors import sample_colorscale, unlabel_rgb

from model.decoding.records import StepRecord, TokenInfo
from model.decoding.tokens import TokenLabel, decoded_text, token_labels
from viz.labels import byte_note
from viz.i18n import t
from viz.style import format_prob

SCALE = "Blues"  # sequential, single hue: reads the same for colour-blind students and in grey
SCALE_RANGE = (0.22, 0.95)  # skip the near-white end so a chip of probability 0 still shows as a chip
# The look chips share is stated once, in the page's style sheet (assets/app.css): each chip carries only its
# own data, its shade (--shade) and whether its text is light (class tbt-light, for dark shades). A <style> sent
# with the text would be new on every step, and a new style sheet makes the browser restyle the whole page.
LIGHT_INK, DARK_INK = "#FFFFFF", "#111111"  # a chip's text on a dark shade, on a light one


def chip_color(prob: float) -> tuple[str, str]:
    """Background and text colour for a chip of T = 1 probability `prob`: darker = more probable."""
    return _shade(round(min(max(prob, 0.0), 1.0), 3))  # 1,001 shades: plotly's colour sampling is slow per chip


@lru_cache(maxsize=1024)
def _shade(prob: float) -> tuple[str, str]:
    lo, hi = SCALE_RANGE
    background = sample_colorscale(SCALE, [lo + (hi - lo) * prob])[0]
    r, g, b = unlabel_rgb(background)
    luminance = (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255
    return background, (LIGHT_INK if luminance < 0.55 else DARK_INK)


def _chip(display: str, title: str, classes: str, shade: str | None = None, step: int | None = None,
          step_data: str = "step", label: TokenLabel | None = None, lang: str = "en") -> str:
    """One chip; a newline token is followed by line breaks so the chips keep the text's layout. A token that is
    part of a character (label.grouped) shows its bytes small, the character drawn over its group."""
    data = (f' data-{step_data}="{step}"' if step is not None else "") + (f' style="--shade:{shade}"' if shade else "")
    if label is not None and (label.grouped or label.pending):
        title += " · " + byte_note(label, lang)
    if label is not None and label.grouped:
        display, classes = label.hex, classes + " tbt-byte"
    text = html.escape(display, quote=False).replace("␣", '<i class="tbt-space">␣</i>')
    chip = f'<span class="{classes}"{data} title="{html.escape(title, quote=True)}">{text}</span>'
    return chip + "<br>" * display.count("↵")


def chosen_how(dist, lang: str = "en") -> str:
    """What chose a step's token, in words, when it was not a plain draw: the speculative run's accept test or
    residual or bonus draw, with its numbers; a trace's claimed draw that did not reproduce; else "" (a plain draw,
    or "forced by you", which the caller says)."""
    spec = getattr(dist, "speculative", None)
    if spec is not None:
        numbers = {"u": f"{spec.u:.3f}", "p": format_prob(spec.p)}
        if spec.kind == "residual":
            numbers.update(ru=f"{spec.rejected_u:.3f}", rp=format_prob(spec.rejected_p))
        key = {"accepted": "spec_how_accepted", "residual": "spec_how_residual", "bonus": "spec_how_bonus"}[spec.kind]
        return t(key, lang, **numbers)
    return t("chips_marked_forced", lang) if getattr(dist, "marked_forced", False) else ""


def _swatch(prob: float) -> str:
    """The legend's sample of the shade of probability `prob`."""
    background, ink = chip_color(prob)
    light = " tbt-light" if ink == LIGHT_INK else ""
    return f'<span class="tbt-swatch{light}" style="--shade:{background}">{format_prob(prob)}</span>'


def token_chips_html(prompt_tokens: list[TokenInfo], steps: list[StepRecord], lang: str = "en",
                     legend_key: str = "chips_legend", step_data: str = "step") -> str:
    """HTML of the text so far, one chip per token, with a one-line legend (`legend_key`: its words).

    Prompt chips have class "tbt-chip tbt-prompt". Generated chips have class "tbt-chip tbt-gen" (plus
    "tbt-forced" when the user forced the token, "tbt-spec" when a speculative run's test or residual draw chose it:
    the tooltip says which, with its u and p), data-step="<step number>" so the page can go back to that
    step on click (`step_data` names another attribute instead, e.g. "room-step" for chips a click must not
    act on), a shade from the T = 1 probability the model gave the token (style="--shade:<colour>", and
    class "tbt-light" when its text must be light), and a tooltip with rank and probability. Token text is HTML-escaped; a newline token shows as ↵ and breaks the line.
    """
    prompt_title = t("chips_prompt", lang)
    labels = token_labels([*prompt_tokens, *(step.token for step in steps)])
    chips = [_chip(tok.display, prompt_title, "tbt-chip tbt-prompt", label=label, lang=lang)
             for tok, label in zip(prompt_tokens, labels)]
    for step, label in zip(steps, labels[len(prompt_tokens):]):
        dist = step.distribution
        prob = dist.chosen_candidate.prob_t1
        background, ink = chip_color(prob)
        title = t("chips_title", lang, step=step.step, rank=dist.chosen_rank, prob=format_prob(prob))
        classes = "tbt-chip tbt-gen" + (" tbt-light" if ink == LIGHT_INK else "")
        how = chosen_how(dist, lang)
        if dist.forced:
            title += " · " + (how or t("chips_forced", lang))
            classes += " tbt-forced"
        elif how:
            title += " · " + how
            classes += " tbt-spec"
        chips.append(_chip(step.token.display, title, classes, background, step=step.step, step_data=step_data,
                           label=label, lang=lang))
    swatches = "".join(_swatch(p) for p in (0.01, 0.1, 0.5, 0.9))
    legend = f'<div class="tbt-chips-legend"><span class="tbt-legend-text">{html.escape(t(legend_key, lang))}</span> {swatches}</div>'
    text = decoded_text([*prompt_tokens, *(step.token for step in steps)])
    decoded = (f'<div class="tbt-decoded" lang="{lang}"><span class="tbt-decoded-key">{html.escape(t("chips_decoded", lang))}'
               f'</span> {html.escape(text, quote=False)}</div>')
    return f'<div class="tbt-chips" lang="{lang}">{"".join(_grouped(chips, labels))}</div>{decoded}{legend}'


def _grouped(chips: list[str], labels: list[TokenLabel]) -> list[str]:
    """The chips with each run of byte tokens wrapped in one group: the character it makes over its chips."""
    out, i = [], 0
    while i < len(chips):
        label = labels[i]
        if not label.grouped:
            out.append(chips[i])
            i += 1
            continue
        members = chips[i : i + label.parts]
        out.append(f'<span class="tbt-cgroup"><span class="tbt-cgroup-char">{html.escape(label.text, quote=False)}'
                   f'</span><span class="tbt-cgroup-parts">{"".join(members)}</span></span>')
        i += label.parts
    return out

