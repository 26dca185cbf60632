"""The page's views, one module each. A view is an object with:

- `tab`, `title` (its tab's id and the key of its name), `build(page)` (its components, inside its tab),
  `events(page)` (its rows of the wiring table);
- `chart(session, cfg, view, dist)` if it draws every step (its chart in a carrier), else `chart = None`.

Adding a view: a new module here and one line in VIEWS.
"""
from ui.views.attention import AttentionView
from ui.views.calculator import CalculatorView
from ui.views.candidates import CandidatesView
from ui.views.kv_cache import KVCacheView
from ui.views.session_io import SessionView
from ui.views.temperature import TemperatureView

VIEWS = [CandidatesView, TemperatureView, AttentionView, KVCacheView, CalculatorView, SessionView]
