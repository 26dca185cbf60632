"""The session as one web page (viz/offline.py, the Save / load view's 'Export as a web page'): exported through the
API, opened in headless Chromium from file:// with every other request aborted, stepped through, and read back
from its DOM against the session's own records."""
import tempfile
from pathlib import Path

import pytest
from gradio_client import Client

from browser import open_offline, screenshot, settle
from model.decoding.records import ModelInfo, SamplingConfig
from viz.i18n import t
from viz.attention import attention_chart
from viz.style import format_prob
from served import DEFAULTS as PAGE_DEFAULTS, served

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = {**PAGE_DEFAULTS, "temperature": 0.8, "top_p": 0.9, "seed": 4}
STEPS = 5


@pytest.fixture(scope="module")
def server(lm):
    with served(lm) as (page, url, _):
        yield page, url


@pytest.fixture(scope="module")
def exported(server):
    """A session of STEPS steps (one forced), its records, and its page exported in each language."""
    app, url = server
    client = Client(url, verbose=False)
    client.predict("Once upon a time, in a small village,", "raw", "smollm2", **DEFAULTS, api_name="/start")
    for n in range(STEPS - 1):
        client.predict(**DEFAULTS, api_name="/next_token")
    session = app.store.get(client.session_hash)
    forced = sorted(session.preview(SamplingConfig()).candidates, key=lambda c: c.rank)[3]  # the last step: forced
    client.predict(str(forced.token.id), **DEFAULTS, api_name="/force")
    pages = {lang: Path(client.predict(lang, 12, api_name="/export_page")).read_text(encoding="utf-8")
             for lang in ("en", "zh")}
    yield session, pages
    app.store.drop(client.session_hash)


@pytest.mark.server
def test_the_page_holds_no_server_path_and_is_a_few_megabytes(exported):
    session, pages = exported
    for lang, html in pages.items():
        for path in (str(ROOT), tempfile.gettempdir() + "/", "/gradio_api", "tbt-export"):
            assert path not in html, f"{lang}: the page names {path!r}"
        assert len(html.encode()) < 6_000_000
        print(f"\n{lang}: {len(html.encode()):,} bytes for {len(session.steps)} steps")
    assert '<html lang="zh-Hans">' in pages["zh"] and t("offline_title", "zh") in pages["zh"]
    assert '<html lang="en">' in pages["en"] and t("offline_title", "zh") not in pages["en"]


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_replays_the_sessions_tokens_and_probabilities_offline(exported, chromium, lang, tmp_path):
    session, pages = exported
    tab = open_offline(chromium, pages[lang], tmp_path / f"session-{lang}.html", lang)
    try:
        assert tab.locator("#status").get_attribute("data-step") == "0"
        assert tab.locator("#btn-next").inner_text() == t("offline_next", lang)
        for step in session.steps:
            tab.click("#btn-next")
            tab.wait_for_function(f"() => document.body.dataset.shown === '{step.step}'")
            dist = step.distribution
            assert tab.locator("#token").inner_text() == step.token.display
            assert int(tab.locator("#token").get_attribute("data-id")) == step.token.id
            assert tab.locator("#prob").inner_text() == format_prob(dist.chosen_candidate.prob_t1)
            rows = tab.locator("#cands tr").all()[1:]
            shown = [(r.locator(".tok").inner_text(), r.locator(".p").inner_text(), r.locator(".final").inner_text())
                     for r in rows]
            assert shown == [(c.token.display, format_prob(c.prob_t1), format_prob(c.final_prob))
                             for c in sorted(dist.candidates, key=lambda c: c.rank)]
            assert tab.locator("#cands tr.chosen .tok").inner_text() == step.token.display
            visible = tab.locator("#chips .gen:not(.later)").all_inner_texts()
            assert visible == [s.token.display for s in session.steps[: step.step]]
            assert tab.locator("#att-plot .hm, #att-plot .heatmaplayer").count() >= 1  # plotly drew the heatmap
        assert (t("offline_forced", lang).strip(" ·") in tab.locator("#status").inner_text()) == \
            session.steps[-1].distribution.forced
        tab.click("#btn-back")
        tab.wait_for_function(f"() => document.body.dataset.shown === '{len(session.steps) - 1}'")
        tab.click("#btn-last")
        tab.wait_for_function(f"() => document.body.dataset.shown === '{len(session.steps)}'")
        settle(tab, quiet_ms=100, frames=2)  # (plotly's draw of the last step, for the picture)
        screenshot(tab, f"offline_page_{lang}")
        assert tab.requests == [] and tab.problems == []
    finally:
        tab.close()


@pytest.mark.browser
def test_the_pages_attention_is_drawn_in_the_live_views_colours(exported, chromium, tmp_path):
    """The heatmap the page draws has the live attention view's colour scale, range from 0, and future grey."""

    session, pages = exported
    info = ModelInfo(name="any", layers=1, heads=1, kv_heads=1, head_dim=1, hidden=1, vocab=1, bytes_per_value=4,
                     dtype="float32", context=1)  # (the colours do not depend on the model)
    attention = session.prefill.attention[0].astype("float32").mean(axis=0)
    live = {trace["name"]: trace for trace in attention_chart(
        attention, [tok.display for tok in session.prefill.tokens], 0, None, info)["data"] if trace["type"] == "heatmap"}
    tab = open_offline(chromium, pages["en"], tmp_path / "session.html", "en")
    try:
        tab.click("#btn-last")
        tab.wait_for_function(f"() => document.body.dataset.shown === '{len(session.steps)}'")
        drawn = tab.evaluate("""() => document.getElementById('att-plot')._fullData.map(
            (t) => ({colorscale: t.colorscale, zmin: t.zmin, zmax: t.zmax, z: t.z}))""")
        mask, weights = drawn
        assert weights["colorscale"] == [list(stop) for stop in live["weights"]["colorscale"]]
        assert {stop[1] for stop in mask["colorscale"]} == {live["mask"]["colorscale"][0][1]}  # the future's grey
        shown = [w for row in weights["z"] for w in row if w is not None]
        assert weights["zmin"] == 0 and weights["zmax"] == max(shown)  # as the live view: 0 to the largest shown
        assert all((m is None) == (w is not None) for mrow, wrow in zip(mask["z"], weights["z"]) for m, w in zip(mrow, wrow))
        assert tab.requests == [] and tab.problems == []
    finally:
        tab.close()
