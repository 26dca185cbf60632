"""The Branches tab in headless Chromium, English and Chinese: go back, force an unlikely token, and the tree shows
both texts; Compare lays them side by side; Continue this branch gives the old text back, chip for chip."""
import pytest

from browser import choose_language, open_view, plot_drawn, screenshot, start_text

pytestmark = pytest.mark.browser
PROMPT = "The old lighthouse keeper opened the door and"
WORDS = {
    "en": dict(tab="Branches", pick="Branch", switch="Continue this branch", compare="Compare",
               split="They split at step 3", title="Branches", tokens="6 tokens"),
    "zh": dict(tab="分支", pick="分支", switch="继续这个分支", compare="比较", split="它们在第 3 步分开",
               title="分支", tokens="6 个词元"),
}


def wait_for_step(page, step: int):
    """As browser.wait_for_step, with room for a machine the whole class is using."""
    page.wait_for_function(f"() => document.querySelector('#tbt-marker')?.dataset.step === '{step}'", timeout=180_000)


def chips(page) -> list[str]:
    return page.locator("#tbt-chips .tbt-gen").all_inner_texts()


def tree_branches(page) -> list:
    return page.evaluate("""() => (document.getElementById('tbt-fig-branches')?.data || [])
        .filter((tr) => tr.meta && tr.meta.role === 'branch').map((tr) => [tr.meta.id, tr.meta.current])""")


def shoot(page, name: str, anchor: str):
    """A screenshot (browser.screenshot), the view scrolled to `anchor`."""
    page.locator(anchor).scroll_into_view_if_needed()
    screenshot(page, name)


def fork_the_text(page):
    """Six steps, back to step 2, the least likely shown candidate forced, three more steps (a new prompt)."""
    start_text(page, PROMPT)
    for step in range(1, 7):
        page.locator("#tbt-next").click()
        wait_for_step(page, step)
    first = chips(page)
    page.locator("#tbt-chips .tbt-gen[data-step='3']").click()  # a click on a chip: back to just before it
    wait_for_step(page, 2)
    page.locator("#tbt-force input").click()
    page.locator("[role='listbox'] [role='option']").last.click()
    page.locator("#tbt-force-btn, #tbt-force-button, button:has-text('Force'), button:has-text('强制')").first.click()
    wait_for_step(page, 3)
    for step in range(4, 7):
        page.locator("#tbt-next").click()
        wait_for_step(page, step)
    return first


def test_branches_tab(page):
    wait_for_step(page, 0)  # the page's own start on load has answered
    for lang in ("en", "zh"):
        w = WORDS[lang]
        if lang == "zh":
            choose_language(page, "zh")
            open_view(page, "候选词元")  # forcing a token is on the Candidates tab
        first = fork_the_text(page)
        second = chips(page)
        assert second[:2] == first[:2] and second != first and "tbt-forced" in page.locator(
            "#tbt-chips .tbt-gen[data-step='3']").get_attribute("class")
        open_view(page, w["tab"])
        plot_drawn(page, "tbt-plot-branches")
        page.wait_for_function("() => (document.getElementById('tbt-fig-branches')?.data || []).length >= 2",
                               timeout=120_000)
        assert sorted(tree_branches(page)) == [[0, False], [1, True]]
        if lang == "zh":  # the list picked from in English is relabelled, for this text's branches
            page.wait_for_function(f"""() => (document.querySelector('#tbt-branch-pick input')?.value || '')
                .includes({w['tokens']!r})""", timeout=60_000)
        page.get_by_role("button", name=w["compare"], exact=True).click()
        page.locator("#tbt-branch-compare .tbt-branch-table").wait_for(timeout=120_000)
        page.wait_for_function(f"() => document.querySelector('#tbt-branch-compare')?.innerText"
                               f".includes({w['split']!r})", timeout=120_000)  # this language's table, not the last
        plot_drawn(page, "tbt-plot-branch-logp")
        shoot(page, f"branches_{lang}", "#tbt-plot-branches")
        shoot(page, f"branches_compare_{lang}", "#tbt-branch-compare")
        page.locator("#tbt-branch-pick input").click()
        page.locator("[role='listbox'] [role='option']").first.click()  # #0, the first text
        page.get_by_role("button", name=w["switch"], exact=True).click()
        page.wait_for_function("() => (document.getElementById('tbt-fig-branches')?.data || [])"
                               ".some((tr) => tr.meta && tr.meta.id === 0 && tr.meta.current)", timeout=180_000)
        assert chips(page) == first  # the old text again, token for token
        assert page.problems == []
