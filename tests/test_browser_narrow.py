"""The stepping chart at a window's sizes (issue 22): turned narrow under a drawn chart (a phone rotated, a window
narrowed) and wide again, it stays drawn, at each width and at the step after (assets/js/page.js, charts.js,
ahead.js); at a projector's sizes, it and the newest chip are on screen together during Play and after a step
(assets/js/presenter.js)."""
import pytest

from browser import artifact, marker, plot_drawn, settle, wait_for_step

pytestmark = pytest.mark.browser

# The stepping chart as the reader sees it: its plot's box (on the page, not moved off it), and the texts plotly
# drew that lie inside that box (the plot clips what overflows it: app.css .tbt-fig, contain: content)
SHOWN = """() => {
  const gd = document.getElementById('tbt-fig-candidates');
  if (!gd) return {missing: true};
  const r = gd.getBoundingClientRect();
  const texts = [...gd.querySelectorAll('svg text')].filter((t) => (t.textContent || '').trim()).filter((t) => {
    const b = t.getBoundingClientRect(), x = (b.left + b.right) / 2, y = (b.top + b.bottom) / 2;
    return b.width > 0 && x >= r.left && x <= r.right && y >= r.top && y <= r.bottom;
  });
  return {width: Math.round(r.width), height: Math.round(r.height), on_page: r.right > 0 && r.left < innerWidth,
          texts: texts.length, layout_width: gd._fullLayout ? Math.round(gd._fullLayout.width) : 0};
}"""


def settled(tab):
    """The chart as it is once the page and plotly are done with a resize or a step: plotly's own resize waits
    100 ms, the page's re-draw for a phone two frames (page.js); the page quiet for 300 ms (settle), and no timer
    is pending."""
    settle(tab)
    tab.wait_for_function("() => ![...document.querySelectorAll('.js-plotly-plot')].some((gd) => gd._resolveResize)",
                          timeout=30_000)
    return tab.evaluate(SHOWN)


def assert_drawn(shown, width, when):
    assert not shown.get("missing"), when
    assert shown["on_page"], (when, shown)
    # the plot spans the window's width (less the page's margins) and is at least the page's smallest chart tall
    assert shown["width"] > width * 0.75 and shown["layout_width"] > width * 0.75, (when, shown)
    assert shown["height"] >= 300, (when, shown)
    assert shown["texts"] >= 10, (when, shown)  # the tokens' names, their percentages, the axes


def test_a_window_turned_narrow_and_wide_keeps_the_stepping_chart_drawn(url, new_tab):
    tab = new_tab(url, size=(1280, 800))
    marker(tab).wait_for(timeout=60_000)
    plot_drawn(tab, "tbt-plot-candidates")
    tab.locator("#tbt-next").click()
    wait_for_step(tab, 1)
    # the next step's chart drawn ahead (ahead.js), so the step after the turn shows a plot drawn ahead
    tab.wait_for_function("() => document.querySelector('#tbt-plot-candidates [data-tbt-ahead] g.trace')",
                          timeout=60_000)
    assert_drawn(settled(tab), 1280 - 400, "wide, at step 1")  # (the settings column takes the left of the page)

    tab.set_viewport_size({"width": 390, "height": 844})
    shown = settled(tab)
    if shown["height"] < 300:
        artifact(tab, "narrow-turned-blank")
    assert_drawn(shown, 390, "turned narrow, at step 1")

    tab.locator("#tbt-next").click()
    wait_for_step(tab, 2)
    assert_drawn(settled(tab), 390, "narrow, at step 2")

    tab.set_viewport_size({"width": 1280, "height": 800})
    assert_drawn(settled(tab), 1280 - 400, "turned wide, at step 2")
    tab.locator("#tbt-next").click()
    wait_for_step(tab, 3)
    assert_drawn(settled(tab), 1280 - 400, "wide, at step 3")
    assert tab.problems == []


# The newest chip and the stepping chart, as the reader sees them: the chip inside the chips box's scrolled view and
# inside the window; the chart's plot whole inside the window, below the pinned text panel.
TOGETHER = """() => {
  const chips = [...document.querySelectorAll('#tbt-chips .tbt-gen')], newest = chips[chips.length - 1];
  const box = document.querySelector('#tbt-chips .tbt-chips'), plot = document.getElementById('tbt-fig-candidates');
  const r = newest.getBoundingClientRect(), b = box.getBoundingClientRect(), p = plot.getBoundingClientRect();
  const panel = document.getElementById('tbt-text').getBoundingClientRect();
  return {chips: chips.length, chip_in_box: r.top >= b.top - 1 && r.bottom <= b.bottom + 1,
          chip_on_screen: r.top >= 0 && r.bottom <= innerHeight, chart_top: Math.round(p.top),
          chart_bottom: Math.round(p.bottom), panel_bottom: Math.round(panel.bottom), height: innerHeight,
          chart_on_screen: p.height > 300 && p.top >= panel.bottom - 1 && p.bottom <= innerHeight + 1,
          box_scrolled: box.scrollHeight > box.clientHeight, scroll_top: box.scrollTop,
          overflow: box.scrollHeight - box.clientHeight};
}"""


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_the_newest_chip_and_the_chart_are_on_screen_together_during_play_and_after_a_step(url, new_tab, size):
    """Issue 22, item 1: at a projector's sizes, after Next token and during Play, the newest chip and the open
    tab's chart are both in the window without scrolling; the chips box follows the newest token unless its reader
    scrolled it back."""
    tab = new_tab(url, size=size)
    marker(tab).wait_for(timeout=60_000)
    box = tab.locator("#tbt-play-steps input[type='number']")
    box.fill("40")
    box.press("Tab")
    tab.locator("#tbt-play").click()
    wait_for_step(tab, 24)  # during Play, long after the chips box has filled its three lines
    shown = tab.evaluate(TOGETHER)
    if not shown["chart_on_screen"]:
        artifact(tab, f"together_{size[0]}_during_play")
    assert shown["box_scrolled"] and shown["chip_in_box"] and shown["chip_on_screen"], shown
    assert shown["chart_on_screen"], str(shown)
    wait_for_step(tab, 40)
    tab.wait_for_function("() => !document.getElementById('tbt-playing')", timeout=60_000)
    tab.locator("#tbt-next").click()
    wait_for_step(tab, 41)
    settle(tab)  # the chart shown, and scrolled into view if it was not (presenter.js)
    shown = tab.evaluate(TOGETHER)
    assert shown["chip_in_box"] and shown["chip_on_screen"] and shown["chart_on_screen"], shown
    # scrolled back by its reader, the box keeps their place through a step
    tab.evaluate("() => { const b = document.querySelector('#tbt-chips .tbt-chips'); b.scrollTop = 0;"
                 " b.dispatchEvent(new Event('scroll')); }")
    tab.locator("#tbt-next").click()
    wait_for_step(tab, 42)
    settle(tab)
    kept = tab.evaluate(TOGETHER)
    assert kept["scroll_top"] < 8 and kept["overflow"] > 20, str(kept)  # (a re-layout may move it a pixel or two)
    assert tab.problems == []
