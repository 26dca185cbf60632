"""The page's navigation: the parts of the story (ui/views PARTS) as its first row, the open part's views as the
tabs under it, and on a phone one menu of every view, grouped by part, that says where you are.

It is HTML the page's script (assets/js/nav.js) drives, over Gradio's one row of tabs, which stays as it was: every
view keeps its gr.Tab (its id, its role "tab" and its name), so a lesson, a clicked head or the interview cards open a
tab as before, and the script shows that tab's part. Which tabs a part holds is in the HTML (each part's button
lists them); the style sheet that hides the other parts' tabs is made here from the same data (nav_style), so the
row shows the open part's tabs from the first paint, before the script has run.
"""
from __future__ import annotations

import html

from ui.protocol import IDS, PROTOCOL
from ui.strings import t

NAV = PROTOCOL["nav"]  # the attributes and classes the script reads
# Each part's words: its name and one line of what it holds (ui/strings.py)
PART_WORDS = {
    "start": ("part_start", "part_start_about"),
    "one_step": ("part_one_step", "part_one_step_about"),
    "inside": ("part_inside", "part_inside_about"),
    "one_at_a_time": ("part_one_at_a_time", "part_one_at_a_time_about"),
    "beyond": ("part_beyond", "part_beyond_about"),
    "engines": ("part_engines", "part_engines_about"),
    "class": ("part_class", "part_class_about"),
}
FIRST = "start"  # the part before the numbered ones (Start here): no number, shown apart


def part_name(key: str, lang: str, number: int | None = None) -> str:
    """A part's name in `lang`, after its number if it has one ("2 · Inside the model"); a part PART_WORDS does not
    know is named by its key."""
    name = t(PART_WORDS[key][0], lang) if key in PART_WORDS else key
    return f"{number} · {name}" if number else name


def numbers(parts) -> dict[str, int | None]:
    """Each part's number as the navigation shows it: the parts after Start here from 1."""
    out, n = {}, 0
    for key, _ in parts:
        if key == FIRST:
            out[key] = None
        else:
            n += 1
            out[key] = n
    return out


def nav_html(parts: list[tuple[str, list[str]]], titles: dict[str, str], lang: str) -> str:
    """The navigation in `lang`: a button per part (its tabs listed in an attribute) and, for a phone, a menu of
    every view grouped by part. `parts`: [(part key, [tab id, ...])]; `titles`: tab id -> the key of its name."""
    n = numbers(parts)
    esc = lambda s: html.escape(s, quote=True)  # noqa: E731
    buttons, groups = [], []
    for key, tabs in parts:
        name = part_name(key, lang, number=n[key])
        first = " " + NAV["first_class"] if key == FIRST else ""
        number = f'<span class="{NAV["number_class"]}">{n[key]}</span>' if n[key] else ""
        label = part_name(key, lang)
        buttons.append(f'<button type="button" class="{NAV["part_class"]}{first}" {NAV["part"]}="{esc(key)}" '
                       f'{NAV["tabs"]}="{esc(" ".join(tabs))}" title="{esc(part_about(key, lang))}">'
                       f'{number}<span class="{NAV["name_class"]}">{esc(label)}</span></button>')
        options = "".join(f'<option value="{esc(tab)}">{esc(t(titles[tab], lang))}</option>' for tab in tabs)
        groups.append(f'<optgroup label="{esc(name)}" {NAV["part"]}="{esc(key)}">{options}</optgroup>')
    where = esc(t("nav_where", lang))
    return (f'<nav id="{IDS["nav"]}" aria-label="{where}">'
            f'<div class="{NAV["parts_class"]}" role="group" aria-label="{where}">{"".join(buttons)}</div>'
            f'<label class="{NAV["menu_class"]}"><span class="{NAV["where_class"]}" aria-hidden="true"></span>'
            f'<select {NAV["menu"]} aria-label="{where}">{"".join(groups)}</select></label></nav>')


def part_about(key: str, lang: str) -> str:
    return t(PART_WORDS[key][1], lang) if key in PART_WORDS else ""


def nav_style(parts: list[tuple[str, list[str]]], default_part: str) -> str:
    """The rules that show only the open part's tabs in Gradio's row (the part is an attribute on <html>, set by
    assets/js/nav.js; before it is, the default part's), and no row at all for a part of one view (Start here:
    its button is its tab). Top-level rules on html[...]: Gradio leaves those as written."""
    attr, tabs_id = NAV["open_attribute"], IDS["tabs"]
    rules = []
    for key, tabs in parts:
        keep = "".join(f':not([data-tab-id="{html.escape(tab, quote=True)}"])' for tab in tabs)
        opened = f'html[{attr}="{key}"]' + (f", html:not([{attr}])" if key == default_part else "")
        hidden = ", ".join(f"{sel.strip()} #{tabs_id} [role=tab]{keep}" for sel in opened.split(","))
        rules.append(f"{hidden} {{ display: none !important; }}")
        if len(tabs) == 1:
            rows = ", ".join(f"{sel.strip()} #{tabs_id} [role=tablist]" for sel in opened.split(","))
            rules.append(f"{rows} {{ display: none !important; }}")
    return "<style>" + "\n".join(rules) + "</style>"
