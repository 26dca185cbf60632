"""The page in headless Chromium (Debian's, driven by Playwright): type, step, see every chart, switch language."""
import pytest

from browser import artifact, marker, open_view, plot_drawn, screenshot, settle, start_text, wait_for_step
from viz.style import SMALL_SIZE, TITLE_SIZE

pytestmark = pytest.mark.browser


def test_step_three_times_see_every_chart_and_switch_language(page):
    start_text(page, "The best way to learn is")
    assert "learn" in page.locator("#tbt-chips").inner_text()
    for step in (1, 2, 3):
        page.locator("#tbt-next").click()
        wait_for_step(page, step)
    assert page.locator("#tbt-chips .tbt-gen").count() == 3
    # The chips' look comes from the page's style sheet (assets/app.css), not from a <style> in each step: a chip
    # carries only its shade, which the sheet paints
    chip = page.locator("#tbt-chips .tbt-gen").first.evaluate("""e => { const s = getComputedStyle(e);
        return [s.borderRadius, s.fontSize, s.backgroundColor, s.getPropertyValue('--shade').trim(), e.getAttribute('style')]; }""")
    assert chip[:2] == ["5px", "20px"] and chip[2].replace(" ", "") == chip[3].replace(" ", "") and chip[4] == f"--shade:{chip[3]}"
    assert page.locator("#tbt-chips style").count() == 0
    plot_drawn(page, "tbt-plot-candidates")
    assert "draw picks" in page.locator("#tbt-plot-candidates").inner_text()
    # The title is drawn once, as HTML above the plot (assets/js/charts.js), not by plotly.js as well.
    assert "Next token (position" in page.locator("#tbt-cap-candidates").inner_text()
    # the caption's look (assets/app.css, in viz.style's sizes: ui.protocol.css_variables) reached the page
    caption_px = page.locator("#tbt-cap-candidates").evaluate(
        "e => ['.tbt-cap-title', '.tbt-cap-sub'].map((c) => getComputedStyle(e.querySelector(c)).fontSize)")
    assert caption_px == [f"{TITLE_SIZE}px", f"{SMALL_SIZE}px"] == ["20px", "14px"]
    assert page.evaluate("() => document.getElementById('tbt-fig-candidates').layout.title") is None
    assert page.locator("#tbt-fig-candidates .gtitle").count() == 0

    for tab, plot in [("Temperature", "tbt-plot-temperature"), ("Attention", "tbt-plot-attention"),
                      ("KV cache", "tbt-plot-kv")]:
        open_view(page, tab)
        plot_drawn(page, plot)
    assert "future" in page.locator("#tbt-plot-attention").inner_text()
    assert "formula" in page.locator("#tbt-plot-kv").inner_text()

    open_view(page, "Candidates")
    page.keyboard.press("ArrowRight")  # the presenter's key for Next token
    wait_for_step(page, 4)
    page.keyboard.press("ArrowLeft")
    wait_for_step(page, 3)
    page.locator("#tbt-chips .tbt-gen").first.click()  # back to the step that wrote the first token
    wait_for_step(page, 0)

    page.get_by_label("中文").check()
    page.get_by_role("button", name="下一个词元").wait_for(timeout=30_000)
    page.get_by_role("button", name="下一个词元").click()
    wait_for_step(page, 1)
    page.wait_for_function("() => document.querySelector('#tbt-plot-candidates')?.innerText.includes('下一个词元')",
                           timeout=30_000)
    artifact(page, "browser", full_page=True)
    assert page.problems == []


def test_moving_temperature_redraws_the_candidates_without_a_step(page):
    marker(page).wait_for(timeout=60_000)
    plot_drawn(page, "tbt-plot-candidates")
    before = page.locator("#tbt-plot-candidates").inner_text()
    box = page.locator("#tbt-temperature input[type='number']")
    box.fill("0")
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('#tbt-plot-candidates')?.innerText.includes('no draw')",
                           timeout=30_000)
    assert marker(page).get_attribute("data-step") == "0"
    assert page.locator("#tbt-plot-candidates").inner_text() != before
    assert page.problems == []


def test_temperature_moves_show_pages_drawn_ahead_and_the_answers_do_not_draw_again(page):
    marker(page).wait_for(timeout=60_000)
    plot_drawn(page, "tbt-plot-candidates")
    box = page.locator("#tbt-temperature input[type='number']")
    box.fill("0.5")  # the first touch asks for every temperature's chart
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('.tbt-figbundle')?.dataset.key === "
                           "document.getElementById('tbt-fig-candidates').dataset.key", timeout=30_000)
    # Then the flipbook draws a page per temperature, one per idle moment (assets/js/flipbook.js)
    page.wait_for_function("() => [...document.querySelectorAll('#tbt-plot-candidates .tbt-flippage')]"
                           ".filter((d) => d.querySelector('g.trace')).length === 41", timeout=60_000)
    page.evaluate("""() => { const gd = document.getElementById('tbt-fig-candidates');
                              window.draws = 0; gd.on('plotly_afterplot', () => window.draws++); }""")
    box.fill("1.5")
    box.press("Enter")
    shown = "[...document.querySelectorAll('.tbt-flippage')].filter((d) => !d.hasAttribute('data-tbt-off'))"
    page.wait_for_function(f"() => {shown}.length === 1 && {shown}[0].dataset.t === '1.50'", timeout=5_000)
    # The page is the bundle's chart for 1.50, its title is in the caption, and the plot is out of sight under it
    # (moved off the page: app.css), the page where it was.
    same = page.evaluate(f"""() => {{
        const fig = JSON.parse(document.querySelector('.tbt-figbundle').textContent)['1.50'], div = {shown}[0];
        const caption = document.getElementById('tbt-cap-candidates').dataset.html;
        return [JSON.stringify(div.data.map((d) => d.x)) === JSON.stringify(fig.data.map((d) => d.x)),
                caption.includes(fig.layout.title.subtitle.text),
                document.getElementById('tbt-fig-candidates').getBoundingClientRect().right > 0,
                Math.abs(div.getBoundingClientRect().top - document.querySelector('.tbt-stack').getBoundingClientRect().top) < 1,
                div.getBoundingClientRect().right > 0]; }}""")
    assert same == [True, True, False, True, True]
    # the server's answer to the move arrives (its chart in the figure carrier), is the same chart, and is not drawn
    page.wait_for_function("() => document.querySelector('.tbt-figdata[data-target=\"tbt-fig-candidates\"]')"
                           "?.dataset.t === '1.50'", timeout=60_000)
    settle(page)
    assert page.evaluate("() => window.draws") == 0
    assert page.evaluate(f"() => {shown}.map((d) => d.dataset.t)") == ["1.50"]
    assert page.evaluate("() => document.getElementById('tbt-fig-candidates').dataset.t") == "1.50"
    # The page shown is a live chart: hovering a bar shows its candidate
    bars = page.locator("#tbt-plot-candidates .tbt-flippage:not([data-tbt-off]) g.trace.bars path").evaluate_all(
        "ps => ps.map((p) => { const r = p.getBoundingClientRect(); return [r.width, r.x + r.width / 2, r.y + r.height / 2]; })")
    _, x, y = max(bars)  # the widest bar; plotly's drag layer above it takes the hover
    page.mouse.move(x, y)
    page.wait_for_function("() => document.querySelector('.tbt-flippage:not([data-tbt-off]) .hoverlayer')"
                           "?.textContent.includes('rank')", timeout=5_000)
    # A step closes the book: the plot is shown again, with the new step's chart
    page.locator("#tbt-next").click()
    wait_for_step(page, 1)
    page.wait_for_function("() => window.draws >= 1 && !document.querySelector('.tbt-flippage')", timeout=30_000)
    assert page.evaluate("() => document.getElementById('tbt-fig-candidates').getBoundingClientRect().right > 0")
    assert page.problems == []


def test_a_step_shows_the_next_chart_drawn_ahead_without_drawing_it(page):
    marker(page).wait_for(timeout=60_000)
    plot_drawn(page, "tbt-plot-candidates")
    # After the step on load, the page asks for the next step's chart and draws it, hidden (assets/js/ahead.js)
    page.wait_for_function("() => document.querySelector('#tbt-plot-candidates [data-tbt-ahead] g.trace')", timeout=30_000)
    page.evaluate("""() => {
        window.draws = 0;
        for (const gd of document.querySelectorAll('#tbt-plot-candidates .js-plotly-plot'))
            gd.on('plotly_afterplot', () => window.draws++);
        window.drawnAhead = document.querySelector('#tbt-plot-candidates [data-tbt-ahead]');
        window.plotBefore = document.getElementById('tbt-fig-candidates');
        window.topBefore = window.plotBefore.getBoundingClientRect().top + window.scrollY;  // on the page: a step may
        // scroll the window so the chart is in view (assets/js/presenter.js keepInView)
        document.addEventListener('tbt-shown', () => { window.drawsWhenShown = window.draws; }, {once: true});
    }""")
    page.locator("#tbt-next").click()
    wait_for_step(page, 1)
    page.wait_for_function("() => window.drawsWhenShown !== undefined", timeout=10_000)
    shown = page.evaluate("""() => {
        const gd = document.getElementById('tbt-fig-candidates');
        const fig = JSON.parse(document.querySelector('.tbt-figdata').textContent);  // the step's own chart
        return {same_plot: gd === window.drawnAhead, draws: window.drawsWhenShown,
                same_bars: JSON.stringify(gd.data.map((d) => d.x)) === JSON.stringify(fig.data.map((d) => d.x)),
                same_caption: document.getElementById('tbt-cap-candidates').dataset.html.includes(fig.layout.title.text),
                on_page: gd.getBoundingClientRect().right > 0,  // the old plot is moved off the page (app.css)
                old_on_page: window.plotBefore.getBoundingClientRect().right > 0,
                at_the_old_place: Math.abs(gd.getBoundingClientRect().top + window.scrollY - window.topBefore) < 1,
                hidden_for_readers: window.plotBefore.getAttribute('aria-hidden') === 'true' && !gd.hasAttribute('aria-hidden')};
    }""")
    assert shown == {"same_plot": True, "draws": 0, "same_bars": True, "same_caption": True, "on_page": True,
                     "old_on_page": False, "at_the_old_place": True, "hidden_for_readers": True}
    assert "Next token (position 6)" in page.locator("#tbt-cap-candidates").inner_text()
    assert page.problems == []


def test_play_shows_every_step_drawn_then_stops_when_pressed_again(page):
    start_text(page, "Once upon a time")
    plot_drawn(page, "tbt-plot-candidates")
    page.evaluate("""() => { window.shownPositions = [];  // the position of each candidate chart shown
        document.addEventListener('tbt-shown', (e) => window.shownPositions.push(
            /position (\\d+)/.exec(document.getElementById('tbt-cap-candidates').textContent)[1])); }""")
    box = page.locator("#tbt-play-steps input[type='number']")
    box.fill("4")
    box.press("Tab")
    first = int(page.evaluate("() => /position (\\d+)/.exec(document.getElementById('tbt-cap-candidates').textContent)[1]"))
    label = page.locator("#tbt-play").inner_text()
    page.locator("#tbt-play").click()
    wait_for_step(page, 4)
    page.wait_for_function(f"() => document.getElementById('tbt-play').textContent.trim() === '{label.strip()}'",
                           timeout=30_000)  # the button says Play again: the request is over
    shown = [int(p) for p in page.evaluate("() => window.shownPositions")]
    assert shown == [first + k for k in range(1, 5)]  # each step's chart was shown, none skipped, none twice
    assert page.locator("#tbt-chips .tbt-gen").count() == 4
    assert page.locator("#tbt-playing").count() == 0
    assert page.locator("#tbt-force input").count() == 1  # the force list is back (sent where Play stopped)

    box.fill("100")
    box.press("Tab")
    page.locator("#tbt-play").click()
    wait_for_step(page, 5)
    assert page.locator("#tbt-play").inner_text().startswith("▮▮")
    page.evaluate("() => document.getElementById('tbt-play').click()")  # pressed again: stops after the step under way
    page.wait_for_function(f"() => document.getElementById('tbt-play').textContent.trim() === '{label.strip()}'",
                           timeout=30_000)
    stopped = int(marker(page).get_attribute("data-step"))
    page.wait_for_timeout(1000)
    assert int(marker(page).get_attribute("data-step")) == stopped < 30  # of 100
    assert not page.problems


def test_the_readme_picture_the_candidates_after_four_steps_with_top_p(page):
    """The README's first picture (assets/screenshot.png with `make screenshots`): four steps of a story at T = 1.2
    and top-p 0.9, the candidate bars with their fates beside the draw."""
    marker(page).wait_for(timeout=60_000)
    page.locator("#tbt-prompt textarea").fill("Once upon a time, in a small village,")
    for knob, value in (("tbt-temperature", "1.2"), ("tbt-top-p", "0.9")):
        box = page.locator(f"#{knob} input[type='number']")
        box.fill(value)
        box.press("Enter")
    rev = marker(page).get_attribute("data-rev")
    page.locator("#tbt-start").click()
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.rev !== '{rev}'", timeout=60_000)
    for step in (1, 2, 3, 4):
        page.locator("#tbt-next").click()
        wait_for_step(page, step)
    plot_drawn(page, "tbt-plot-candidates")
    assert [page.locator(f"#{knob} input[type='number']").input_value() for knob in ("tbt-temperature", "tbt-top-p")] \
        == ["1.2", "0.9"]
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "screenshot", folder="")
    assert page.problems == []
