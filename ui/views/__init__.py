"""The page's views, one module each. A view is an object with:

- `tab`, `title` (its tab's id and the key of its name), `build(page)` (its components, inside its tab),
  `events(page)` (its rows of the wiring table);
- `chart(session, cfg, view, dist)` if it draws every step (its chart in a carrier), else `chart = None`.

Adding a view: a new module here and one line in VIEWS.
"""
from ui.views.attention import AttentionView
from ui.views.beams import BeamsView
from ui.views.branches import BranchesView
from ui.views.batching import BatchingView
from ui.views.calculator import CalculatorView
from ui.views.candidates import CandidatesView
from ui.views.chain import ChainView
from ui.views.consistency import ConsistencyView
from ui.views.constraints import ConstraintsView
from ui.views.kv_cache import KVCacheView
from ui.views.lens import LensView
from ui.views.lesson import LessonView
from ui.views.paged import PagedView
from ui.views.race import RaceView
from ui.views.room import RoomView
from ui.views.session_io import SessionView
from ui.views.speculative import SpeculativeView
from ui.views.temperature import TemperatureView
from ui.views.tokenizers import TokenizersView
from ui.views.training import TrainingView

VIEWS = [CandidatesView, TemperatureView, AttentionView, LensView, KVCacheView,  # one step
         ChainView, TrainingView, BranchesView,  # why token by token
         BeamsView, RaceView, ConsistencyView, ConstraintsView,  # beyond one sampled path
         CalculatorView, TokenizersView, SpeculativeView, BatchingView, PagedView,  # how engines make it fast
         LessonView, RoomView, SessionView]  # the class
