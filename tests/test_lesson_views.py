"""A lesson step's chart for every view a built-in lesson names, in both languages, each on the model its language
uses (SmolLM2 for English, Gemma 3 270M for Chinese), built through the view's own lesson_figure (or figure) from a
real session of the step; and the numbers of the charts that run the model checked against a plain forward pass."""
import pytest
import torch

from model.classroom.quiz import step_config
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.speed.paged import BLOCK_SIZE
from model.serving.sessions import SessionStore
from ui.handlers import View as Lang
from ui.views import VIEWS
from lesson_truth import lesson_lm, started

pytestmark = pytest.mark.model

TABS = tuple(View.tab for View in VIEWS)
OLDER = ("one-token-at-a-time", "training-vs-generation", "temperature", "top-k-top-p-min-p", "kv-cache",
         "mha-gqa-mqa", "subwords", "speculative-decoding")  # lessons 01-08, whose views drew their charts before
CHECKED = ("lens", "beams", "consistency", "constraints")  # drawn, and their numbers checked, by the tests below
NEEDS_PAGE = ("interview", "lesson", "room", "session")  # the class's views: built with a page, no chart of a text


class App:  # what the views' lesson charts read of the app: the live sessions (paged), the passes (batching)
    def __init__(self):
        self.store = SessionStore(max_sessions=8)
        self.models = self

    def core(self, name=None):  # a model's core as the batching view reads it: its last decode passes
        return self

    def recent_passes(self, seconds=None):
        return []

    def engine_metrics(self, name=None):  # local models only here: no engine's numbers
        return None


@pytest.fixture(scope="module")
def views():
    app = App()
    return app, {View.tab: View(app) for View in VIEWS if View.tab not in NEEDS_PAGE}


def lesson_chart(views, session, step, lang):
    view = views[step["view"]]
    shown = Lang(lang, step["view"])
    if hasattr(view, "lesson_figure"):
        figure = view.lesson_figure(session, step_config(step), step, shown)
    else:
        figure = view.figure(session, step_config(step), shown)
    return figure if isinstance(figure, dict) else figure.to_dict()


def log_softmax(lm, ids) -> torch.Tensor:
    """Every position's next-token log-probabilities by one plain forward pass over the whole text (no cache)."""
    with torch.no_grad():
        return torch.log_softmax(lm.model(torch.tensor([ids])).logits[0].double(), -1)


def text_logprob(lm, prompt, generated) -> float:
    rows = log_softmax(lm, list(prompt) + list(generated))
    return sum(float(rows[len(prompt) - 1 + i, tok]) for i, tok in enumerate(generated))


def greedy(lm, ids, n) -> list[int]:
    ids, out = list(ids), []
    for _ in range(n):
        out.append(int(log_softmax(lm, ids)[-1].argmax()))
        ids.append(out[-1])
    return out


# ---- every step's chart --------------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_step_of_every_lesson_has_its_views_chart(lesson_models, lessons, views, lang):
    """Each step's view draws its chart for the step's session (the Lesson tab shows one for every view a built-in
    lesson names but the session tab's)."""
    app, shown = views
    seen = set()
    for lesson_id, lesson in lessons.items():
        if lesson_id in OLDER:  # their charts are the API test's (tests/test_lessons.py), as every lesson's are
            continue
        for i, step in enumerate(lesson["steps"]):
            if step["view"] in ("session", *CHECKED):
                continue
            key = (step["view"], step["prompt"][lang], tuple(sorted(step["settings"].items())), step["generate"])
            if key in seen:  # the same chart again (a step with the same text and settings, another question)
                continue
            seen.add(key)
            assert step["view"] in shown, (lesson_id, i, step["view"])
            session = started(lesson_lm(lesson, lang, lesson_models), step, lang)
            figure = lesson_chart(shown, session, step, lang)
            assert figure["data"], (lesson_id, i, step["view"])


# ---- the numbers in the charts that run the model ---------------------------------------------------------
def step_of(lessons, lesson_id, view):
    return next(s for s in lessons[lesson_id]["steps"] if s["view"] == view)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lens_chart_ends_in_the_models_own_distribution(lesson_models, lessons, views, lang):
    """The lens's top row is the model's output: at each position the probability of the next token of the text,
    and at the last the model's own top token's, as one plain forward pass gives them."""
    lm, step = lesson_models[lang], step_of(lessons, "logit-lens", "lens")
    session = started(lm, step, lang)
    heat = next(trace for trace in lesson_chart(views[1], session, step, lang)["data"] if trace["type"] == "heatmap")
    top = [float(p) for p in heat["z"][-1]]
    ids = list(session.ids)
    rows = log_softmax(lm, ids).exp()
    start = len(ids) - len(top)
    for c, p in enumerate(top[:-1]):
        assert p == pytest.approx(float(rows[start + c, ids[start + c + 1]]), abs=2e-4), (lang, c)
    assert top[-1] == pytest.approx(float(rows[-1].max()), abs=2e-4)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_beam_charts_search_scores_its_beams_as_a_forward_pass_does(lesson_models, lessons, views, lang):
    """The lesson's search is the tab's (beams.searched, the lesson's width and length): its chart is that search's
    tree, and each finished beam's log P is the sum of its tokens' log-softmax in one forward pass; with a width of
    one it is greedy decoding."""
    from ui.views.beams import LESSON_TOKENS, LESSON_WIDTH, searched
    from viz.beams import beam_tree_figure

    lm, step = lesson_models[lang], step_of(lessons, "beam-search", "beams")
    session = started(lm, step, lang)
    figure = lesson_chart(views[1], session, step, lang)
    st = searched(session.whole_text(), LESSON_WIDTH, 1.0, LESSON_TOKENS, step_config(step))
    run = st.run
    again = beam_tree_figure(run.steps, len(run.steps), run.width, run.length_penalty, lang,
                             best=(run.finished[0].step, run.finished[0].rank)).to_dict()
    assert figure["data"] == again["data"]
    prompt = session.ids[: session.prompt_len]
    for h in run.finished:
        assert h.logprob == pytest.approx(text_logprob(lm, prompt, h.tokens), abs=2e-3)
        assert h.score == pytest.approx(h.logprob / len(h.tokens) ** run.length_penalty, rel=1e-6)
    assert run.finished[0].logprob >= text_logprob(lm, prompt, greedy(lm, prompt, len(run.finished[0].tokens))) - 2e-3
    greedy_row = st.texts[-2]
    assert greedy_row.tokens[: LESSON_TOKENS] == greedy(lm, prompt, len(greedy_row.tokens))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_vote_chart_counts_the_lessons_samples_and_the_greedy_answer(lesson_models, lessons, views, lang):
    """The lesson's vote: LESSON_SAMPLES samples counted in the chart, and its greedy row is greedy decoding by
    plain forward passes."""
    from model.strategies.consistency import self_consistency
    from ui.views.consistency import LESSON_SAMPLES, LESSON_TOKENS

    lm, step = lesson_models[lang], step_of(lessons, "self-consistency", "consistency")
    session = started(lm, step, lang)
    figure = lesson_chart(views[1], session, step, lang)
    assert figure["data"]
    run = session.whole_text().run(self_consistency, step_config(step), LESSON_SAMPLES, LESSON_TOKENS)
    assert len(run.samples) == LESSON_SAMPLES and sum(n for _, n in run.votes()) == LESSON_SAMPLES
    ids = lm.tokenizer.encode(run.greedy.text, add_special_tokens=False)
    prompt = session.ids[: session.prompt_len]
    assert lm.tokenizer.decode(greedy(lm, prompt, len(ids))).startswith(run.greedy.text[:8])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_constraint_chart_removes_what_a_forward_pass_gives_the_cut_tokens(lesson_models, lessons, views, lang):
    """The lesson's constrained run (the tab's default words, yes and no): the first token drawn spells the start of
    one of them, and the mass the chart shows removed is one minus the allowed tokens' forward-pass probability."""
    from model.strategies.constrain import Constraint, constrained_decode
    from ui.views.constraints import DEFAULT_TOKENS, EXAMPLES

    lm, step = lesson_models[lang], step_of(lessons, "constrained-decoding", "constraints")
    session = started(lm, step, lang)
    assert lesson_chart(views[1], session, step, lang)["data"]
    run = session.whole_text().run(constrained_decode, Constraint("words", EXAMPLES["words"]), step_config(step),
                                   DEFAULT_TOKENS)
    assert run.text.strip() in ("yes", "no"), run.text
    first = run.steps[0]
    kept = [c.token.id for c in first.distribution.candidates if c.fate != "grammar"]
    probs = log_softmax(lm, list(session.ids))[-1].exp()
    cut = [c for c in first.distribution.candidates if c.fate == "grammar"]
    assert cut and kept
    assert first.removed_mass == pytest.approx(1 - float(probs[kept].sum()), abs=2e-3) or \
        first.removed_mass == pytest.approx(sum(c.prob_t1 for c in cut), abs=2e-3)


def test_the_paged_chart_lays_out_the_lessons_session_in_blocks(lesson_models, lessons, views):
    """The step's own session, live on the server, is laid out first, in ceil(tokens / block size) blocks."""
    app, shown = views
    step = step_of(lessons, "class-batched-paged", "paged")
    session = started(lesson_models["en"], step, "en")
    app.store.open("lesson-student", "127.0.0.1", lambda: session)
    try:
        summary, figure, numbers = shown["paged"].laid_out(session.lm, lambda key, other: other is session, "en")
        assert numbers["rows"][0]["you"] and numbers["rows"][0]["tokens"] == len(session.ids)
        assert numbers["rows"][0]["blocks"] == -(-len(session.ids) // BLOCK_SIZE)
        assert lesson_chart(shown, session, step, "en")["data"]
    finally:
        app.store.drop("lesson-student")


def test_the_race_chart_scores_each_side_as_a_forward_pass_does(lesson_models, views):
    """The race a lesson step would show (the step's settings against the tab's default B): each side's log P at
    temperature one is its tokens' log-softmax sum in one forward pass."""
    from dataclasses import replace

    from ui.views.race import DEFAULT_B, LESSON_STEPS, raced

    lm = lesson_models["en"]
    session = DecodeSession(lm)
    session.start("Once upon a time, there was a little", chat=False)
    cfg = SamplingConfig(temperature=1.0, seed=3).validate()
    figure = views[1]["race"].lesson_figure(session, cfg, {"predict": None}, Lang("en", "race"))
    assert figure.to_dict()["data"]
    result = raced(session.whole_text(), cfg, replace(cfg, **DEFAULT_B).validate(), LESSON_STEPS)
    for side in (result.a, result.b):
        assert side.logprob_t1 == pytest.approx(text_logprob(lm, session.ids, side.ids), abs=2e-3)


# ---- what the lessons say happens, on the model ---------------------------------------------------------
def test_the_early_mistake_carries_on_in_both_languages(lesson_models, lessons):
    """Lesson 10: after the skipped day the model goes on from the mistake (the next day after it, not the one it
    skipped), greedily, on each language's model."""
    steps = lessons["branches-exposure-bias"]["steps"]
    mistake = next(s for s in steps if s["view"] == "branches")
    for lang, (follows, skipped) in {"en": (" Friday", " Tuesday"), "zh": ("五", "二")}.items():
        lm = lesson_models[lang]
        session = started(lm, mistake, lang)
        written = lm.tokenizer.decode(session.ids[session.prompt_len:])
        assert written.startswith(follows.strip()) or written.lstrip("星期").startswith(follows) or \
            follows.strip() in written.split(",")[0], (lang, written)
        assert skipped.strip() not in written, (lang, written)
