"""The page's views, one module each. A view is an object with:

- `tab`, `title` (its tab's id and the key of its name), `build(page)` (its components, inside its tab),
  `events(page)` (its rows of the wiring table);
- `chart(session, cfg, view, dist)` if it draws every step (its chart in a carrier), else `chart = None`; such a
  view's `figure(session, cfg, view, dist=None)` is the same chart as a figure;
- optionally `lesson_figure(session, cfg, step, view)`: the figure a lesson step about this view shows beside its
  text (`step`: the checked lesson step, ui/lessons.py), or None for none. The lesson asks the view its step names
  for it, else for its `figure`, and imports no view: what a view's chart needs stays in the view.

What a view keeps for a user between events (a search to step through, a run to keep) goes in `app.stash`
(ui/stash.py) under its `tab`, not in a dict of its own: the page's unload drops all of a user's at once, and
what no page unloads is bounded like the sessions.

Adding a view: a new module here and one line in PARTS (the part of the story it belongs to); VIEWS, every view
in the page's order, follows from it.
"""
from ui.views.ablation import AblationView
from ui.views.attention import AttentionView
from ui.views.attribution import AttributionView
from ui.views.beams import BeamsView
from ui.views.branches import BranchesView
from ui.views.batching import BatchingView
from ui.views.calculator import CalculatorView
from ui.views.candidates import CandidatesView
from ui.views.chain import ChainView
from ui.views.consistency import ConsistencyView
from ui.views.constraints import ConstraintsView
from ui.views.kv_cache import KVCacheView
from ui.views.heads import HeadsView
from ui.views.interview import InterviewView
from ui.views.lens import LensView
from ui.views.lesson import LessonView
from ui.views.medusa import MedusaView
from ui.views.paged import PagedView
from ui.views.patching import PatchingView
from ui.views.prefill_decode import PrefillDecodeView
from ui.views.race import RaceView
from ui.views.room import RoomView
from ui.views.session_io import SessionView
from ui.views.speculative import SpeculativeView
from ui.views.start import StartView
from ui.views.temperature import TemperatureView
from ui.views.tokenizers import TokenizersView
from ui.views.training import TrainingView
from ui.views.two_models import TwoModelsView

# The page's navigation, as data: the parts of the story the README tells, in its order, each with its views in the
# order of their tabs. A part's key names its words in ui/strings.py ("part_<key>", "part_<key>_about"). The page
# shows the parts as its first row of navigation and the open part's views as the tabs under it (ui/controls.py
# Page.build_nav). A new view is one line: its class in the list of the part it belongs to.
PARTS = [
    ("start", [StartView]),  # Start here: lesson 1, presenter mode, a room, the interview path
    ("one_step", [CandidatesView, TemperatureView, AttentionView, LensView, KVCacheView]),
    ("inside", [AblationView, PatchingView, HeadsView, TwoModelsView, AttributionView]),  # inside the model, by experiment
    ("one_at_a_time", [ChainView, TrainingView, BranchesView]),  # why one token at a time
    ("beyond", [BeamsView, RaceView, ConsistencyView, ConstraintsView]),  # beyond one sampled path
    ("engines", [CalculatorView, TokenizersView, SpeculativeView, MedusaView, BatchingView, PagedView,
                 PrefillDecodeView]),  # how engines make it fast
    ("class", [InterviewView, LessonView, RoomView, SessionView]),  # the class (and the interview path)
]
VIEWS = [View for _, views in PARTS for View in views]


def parts_of(views) -> list[tuple[str, list]]:
    """[(part key, [view, ...])] of the views given (view classes or views), in PARTS' order, parts left empty
    dropped; a view PARTS does not name goes in the last part."""
    placed = {View: key for key, members in PARTS for View in members}
    kind = lambda view: view if isinstance(view, type) else type(view)  # noqa: E731
    grouped = {key: [] for key, _ in PARTS}
    for view in views:
        grouped[placed.get(kind(view), PARTS[-1][0])].append(view)
    return [(key, members) for key, members in grouped.items() if members]
