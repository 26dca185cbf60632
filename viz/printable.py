"""The shell of a page made to be printed (a student's summary, a class report): one HTML file that needs no server
and no network, with a print style sheet (A4, no button, no section cut across pages) and a Print button that calls
the browser's own print (which also saves a PDF). Pure: strings in, a string out."""
from __future__ import annotations

import html
import json

from viz.i18n import t
from viz.style import FONT_FAMILY, INK, MUTED

CSS = f"""
body {{ font-family: {FONT_FAMILY}; color: {INK}; margin: 16px auto; max-width: 860px; padding: 0 16px;
       line-height: 1.45; font-size: 16px; }}
h1 {{ font-size: 26px; margin: 0 0 4px; }} h2 {{ font-size: 21px; margin: 22px 0 8px; border-bottom: 2px solid #ddd; }}
h3 {{ font-size: 18px; margin: 14px 0 6px; }}
.meta, .none, .small {{ color: {MUTED}; }} .small {{ font-size: 14px; }}
.print {{ font-size: 17px; padding: 6px 16px; margin: 8px 0; cursor: pointer; }}
table {{ border-collapse: collapse; margin: 6px 0; font-size: 15px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }}
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }} table.settings td:first-child {{ white-space: nowrap; }}
.box {{ border: 1px solid #ddd; border-radius: 8px; padding: 8px 12px; margin: 10px 0; }}
.quote {{ white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f7; padding: 6px 8px; border-radius: 6px; }}
code {{ background: #f0f0f0; padding: 0 3px; border-radius: 3px; overflow-wrap: anywhere; }}
.right {{ color: #006b4f; font-weight: 600; }} .wrong {{ color: #a33f00; font-weight: 600; }}
figure {{ margin: 10px 0; }} figcaption {{ font-weight: 600; margin-bottom: 4px; }}
.plot {{ width: 100%; }}
svg text {{ font-family: {FONT_FAMILY}; }}
@media (max-width: 600px) {{ body {{ padding: 0 8px; font-size: 15px; }} h1 {{ font-size: 22px; }}
  table {{ font-size: 13px; }} td, th {{ padding: 2px 4px; }} }}
@page {{ size: A4; margin: 14mm; }}
@media print {{
  body {{ margin: 0; max-width: none; padding: 0; font-size: 12pt; }}
  .print {{ display: none; }}
  h2, h3 {{ break-after: avoid; }}
  .box, figure, tr, .keep {{ break-inside: avoid; }}
  a {{ color: inherit; text-decoration: none; }}
}}
"""


def document(lang: str, title: str, body: str, script: str = "", head_script: str = "") -> str:
    """The whole page: `body` (HTML), a Print button at its top, the print style sheet; `head_script` (a library,
    inlined) and `script` (the page's own, run at its end) are JavaScript, each checked to hold no '</script'."""
    for source in (script, head_script):
        if "</script" in source.lower():
            raise ValueError("a script inlined into a printable page may not contain '</script'")
    head = f"<script>{head_script}</script>" if head_script else ""
    tail = f"<script>{script}</script>" if script else ""
    return (f'<!DOCTYPE html>\n<html lang="{"zh-Hans" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title>'
            f"<style>{CSS}</style>{head}</head><body>"
            f'<button class="print" type="button" onclick="window.print()">{html.escape(t("printable_print", lang))}'
            f"</button>{body}{tail}</body></html>")


def json_data(element_id: str, value) -> str:
    """`value` as JSON in a <script type="application/json"> (no '<' left to end it early)."""
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{data}</script>'


def esc(text) -> str:
    return html.escape(str(text))
