"""The Speculative decoding, The class batched and Paged KV blocks tabs in headless Chromium, in English and
Chinese: each view's buttons answer, its figures draw, no console error; screenshots of each."""
import pytest

from browser import artifact, open_view, screenshot, start_text

pytestmark = pytest.mark.browser
REPEATING = "red, green, blue, red, green, blue, red, green, blue, red, green,"


def start(page, prompt):
    start_text(page, prompt)


def title_has(page, plot_id: str, words: str, timeout=120_000):
    """Wait until the plot in #plot_id is drawn with a title containing `words`."""
    page.wait_for_function(
        f"() => (document.querySelector('#{plot_id} .gtitle')?.textContent || '').includes({words!r})",
        timeout=timeout)


def text_has(page, elem_id: str, words: str, timeout=120_000):
    page.wait_for_function(f"() => (document.querySelector('#{elem_id}')?.innerText || '').includes({words!r})",
                           timeout=timeout)


def shoot(page, name: str, anchor: str):
    """The view scrolled to `anchor`: a screenshot (browser.screenshot) and the full page (an artifact)."""
    page.locator(anchor).scroll_into_view_if_needed()
    screenshot(page, name)
    artifact(page, f"{name}_full", full_page=True)


def speculative(page, lang):
    words = {"en": ("Speculative decoding", "Continue by speculative decoding", "forward passes",
                    "Keep this continuation", "Kept", "Measure: does it pay on this machine?", "ms per token"),
             "zh": ("推测解码", "用推测解码续写", "次前向计算", "保留这段续写", "已保留", "测量：在这台机器上划算吗？", "毫秒")}[lang]
    tab, run, ran, keep, kept, measure, measured = words
    open_view(page, tab)
    page.get_by_role("button", name=run, exact=True).click()
    text_has(page, "tbt-spec-summary", ran)
    title_has(page, "tbt-plot-spec", "passes" if lang == "en" else "次")
    if lang == "en":
        page.get_by_role("button", name=measure).click()
        text_has(page, "tbt-spec-speed", measured, timeout=240_000)
    shoot(page, f"speculative_view_{lang}", "#tbt-plot-spec")
    page.get_by_role("button", name=keep, exact=True).click()
    text_has(page, "tbt-spec-summary", kept)


def batching(page, lang):
    tab, refresh, measure, live, done, said = {
        "en": ("The class, batched", "Show the server's passes now", "Measure batch 1 to 16 now", "Sessions live",
               "the time of one", "bound by compute"),
        "zh": ("全班一起批处理", "显示服务器当前的计算", "现在测量批大小 1 到 16", "活跃会话", "时间是单个的",
               "受算力限制")}[lang]
    if lang == "en":  # the language switch keeps the open tab
        open_view(page, tab)
    page.get_by_role("button", name=refresh, exact=True).click()
    title_has(page, "tbt-plot-batching", live)
    page.get_by_role("button", name=measure).click()
    title_has(page, "tbt-plot-throughput", done, timeout=240_000)
    text_has(page, "tbt-batch-sentence", said)
    shoot(page, f"batching_view_{lang}", "#tbt-plot-throughput")


def paged(page, lang):
    # the title says "1 session" with one session on the server (singular since issue 22), "2 sessions" with more
    tab, refresh, title = {"en": ("Paged KV blocks", "Show the sessions now", "session"),
                           "zh": ("分页 KV 块", "显示当前的会话", "会话")}[lang]
    if lang == "en":  # the language switch keeps the open tab
        open_view(page, tab)
    page.get_by_role("button", name=refresh).click()
    title_has(page, "tbt-plot-paged", title)
    # "1 live session in 1 block" (singular since issue 22), "N live sessions" otherwise
    text_has(page, "tbt-paged-summary", "live session" if lang == "en" else "活跃会话")
    shoot(page, f"paged_view_{lang}", "#tbt-plot-paged")


def to_chinese(page):
    page.get_by_label("中文").check()
    page.wait_for_function("() => document.body.innerText.includes('候选词元')", timeout=30_000)


def test_speculative_view_in_english_and_chinese(page):
    start(page, REPEATING)
    speculative(page, "en")
    to_chinese(page)
    speculative(page, "zh")
    assert page.problems == []


def test_batching_view_in_english_and_chinese(page):
    start(page, "The capital of France is")
    page.locator("#tbt-next").click()
    batching(page, "en")
    to_chinese(page)
    batching(page, "zh")
    assert page.problems == []


def test_paged_view_in_english_and_chinese(page):
    start(page, "Once upon a time, in a small village,")
    paged(page, "en")
    to_chinese(page)
    paged(page, "zh")
    assert page.problems == []
