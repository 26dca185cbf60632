"""Pictures of the decoder's records: pure functions from model.decoding.records values to plotly figures or HTML.

The charts a step re-draws come twice: *_chart gives the plain {"data", "layout"} dicts the page draws,
*_figure the same as a go.Figure.
"""
from viz.attention import attention_chart, attention_figure, gqa_figure
from viz.candidates import candidate_chart, candidate_figure
from viz.chips import token_chips_html
from viz.i18n import LANGS, WORDS, t
from viz.kv_cache import cache_timing_figure, kv_calculator_figure, kv_growth_chart, kv_growth_figure
from viz.style import FATE_COLORS, format_bytes
from viz.temperature import temperature_chart, temperature_figure

__all__ = [
    "attention_chart", "attention_figure", "gqa_figure", "candidate_chart", "candidate_figure", "token_chips_html",
    "LANGS", "WORDS", "t", "cache_timing_figure", "kv_calculator_figure", "kv_growth_chart", "kv_growth_figure",
    "FATE_COLORS", "format_bytes", "temperature_chart", "temperature_figure",
]
