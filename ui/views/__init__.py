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

Adding a view: a new module here and one line in VIEWS.
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
from ui.views.temperature import TemperatureView
from ui.views.tokenizers import TokenizersView
from ui.views.training import TrainingView
from ui.views.two_models import TwoModelsView

VIEWS = [CandidatesView, TemperatureView, AttentionView, LensView, KVCacheView,  # one step
         AblationView, PatchingView, HeadsView, TwoModelsView, AttributionView,  # inside the model, by experiment
         ChainView, TrainingView, BranchesView,  # why token by token
         BeamsView, RaceView, ConsistencyView, ConstraintsView,  # beyond one sampled path
         CalculatorView, TokenizersView, SpeculativeView, MedusaView, BatchingView, PagedView,  # how engines make it fast
         PrefillDecodeView,
         InterviewView, LessonView, RoomView, SessionView]  # the class (and the interview path)
