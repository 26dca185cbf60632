"""The page's JavaScript (assets/js) read as text: its modules import in one direction, none reaches another
through window, the page loads the entry after the protocol from its route, and the exported page's replay (assets/js/offline.js)
draws attention in the live view's colours. No model, no Gradio server, no browser."""
import json
import re

import numpy as np
import pytest

from model.decoding.records import KVBytes, ModelInfo, PrefillRecord, Timings, TokenInfo
from ui.protocol import JS_DIR, PAGE_JS, PLOTLY_JS, PROTOCOL, SCRIPT_ROUTE, page_assets
from ui.server import add_script_route
from viz.attention import attention_chart
from viz.offline import REPLAY_JS, session_page, session_record
from viz.style import ATTENTION_SCALE, MASK_FUTURE

pytestmark = pytest.mark.unit

MODULES = {path.name: path.read_text(encoding="utf-8") for path in sorted(JS_DIR.glob("*.js"))}
# `import {a, b} from "./x.js";`, `import * as x from "./x.js";`, `import "./x.js";` and `export ... from "./x.js"`
IMPORT = re.compile(r'^\s*(?:import|export)\b[^;]*?["\']([^"\']+)["\']\s*;?\s*$', re.M)
# What a module may read on window: the protocol, plotly.js, and Gradio's own config (its root URL)
WINDOW_NAMES = {"TBT", "Plotly", "gradio_config"}


def imports(source: str) -> list[str]:
    """The modules a module imports, by file name (every import is relative: "./charts.js")."""
    found = []
    for spec in IMPORT.findall(source):
        assert spec.startswith("./") and spec.endswith(".js"), f"import {spec!r}: only ./<file>.js beside it"
        found.append(spec[2:])
    return found


def graph() -> dict[str, list[str]]:
    return {name: imports(source) for name, source in MODULES.items()}


def cycle(edges: dict[str, list[str]]) -> list[str] | None:
    """A cycle of the import graph as [a, b, ..., a], or None."""
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        path.pop()
        return None

    for node in edges:
        if node not in state and (found := visit(node)):
            return found
    return None


def code(source: str) -> str:
    """The source without its comments (a comment may name window.tbt to say it is gone)."""
    return re.sub(r"(?m)(^|[^:\\])//.*$", r"\1", source)


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a.js": ["b.js"], "b.js": ["c.js"], "c.js": ["a.js"]}) == ["a.js", "b.js", "c.js", "a.js"]
    assert cycle({"a.js": ["b.js", "c.js"], "b.js": ["c.js"], "c.js": []}) is None
    assert imports('import {T, el} from "./charts.js";\nimport "./clicks.js";\nconst x = 1;') == ["charts.js", "clicks.js"]


def test_the_modules_import_in_one_direction_from_the_entry():
    edges = graph()
    assert cycle(edges) is None, f"assets/js imports in a cycle: {' -> '.join(cycle(edges))}"
    for name, targets in edges.items():
        for target in targets:
            assert target in MODULES, f"{name} imports {target}, which is not in assets/js"
    assert edges["charts.js"] == [], "charts.js is the bottom: it imports nothing"
    # Every module of the live page is reached from its one entry; the offline replay is on its own.
    reached, todo = set(), ["page.js"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += edges[name]
    assert reached == set(MODULES) - {"offline.js"}
    assert edges["offline.js"] == [] and not any("offline.js" in targets for targets in edges.values())
    assert PAGE_JS.name == "page.js"


def test_no_module_reaches_another_through_window():
    written = set()
    for name, source in MODULES.items():
        body = code(source)
        assert not re.search(r"\bwindow\.tbt\b", body) and "globalThis" not in body, f"{name} shares functions through window"
        assert not re.search(r"\bimport\s*\(", body), f"{name} imports at run time: the graph must be static"
        for attr in re.findall(r"\bwindow\.(\w+)", body):
            assert attr in WINDOW_NAMES, f"{name} reads window.{attr}: only {sorted(WINDOW_NAMES)} (see page.js)"
        for index in re.findall(r"\bwindow\[([^\]]*)\]", body):
            match = re.fullmatch(r"T\.globals\.(\w+)", index.strip())
            assert match and match.group(1) in PROTOCOL["globals"], \
                f"{name}: window[{index}]: the page's own names on window are the protocol's globals only"
        written |= set(re.findall(r"\bwindow\[T\.globals\.(\w+)\]\s*=[^=]", body))
    # the listeners' js= snippets (ui/play.py, ui/controls.py) find each of them
    assert written == set(PROTOCOL["globals"])


def test_the_modules_take_every_id_from_the_protocol():
    """The live page's script finds no element by an id it spells itself: the ids are window.TBT's (ui/protocol.py),
    the charts Gradio draws (PROTOCOL["gradio_plots"]) among them."""
    for name, source in MODULES.items():
        if name == "offline.js":  # (the exported page: its own document, no protocol)
            continue
        body = code(source)
        assert not re.search(r"""["'`]#tbt-|(?:getElementById|\bel)\(\s*["'`]tbt-""", body), f"{name} spells an id"
        for plot_id in PROTOCOL["gradio_plots"].values():
            assert plot_id not in body, f"{name} spells {plot_id}: read it from T.gradio_plots"


def test_the_page_loads_the_protocol_then_the_entry_module():
    assets = page_assets()
    scripts = re.findall(r"<script\b[^>]*>", assets["head"])
    assert len(scripts) == 3, scripts  # plotly.js, the protocol, the entry (which imports the rest)
    assert f'src="/gradio_api/file={PLOTLY_JS}"' in scripts[0] and assets["allowed_paths"] == [str(PLOTLY_JS)]
    assert "window.TBT = " in assets["head"].split(scripts[2])[0]
    assert scripts[2] == f'<script type="module" src="{SCRIPT_ROUTE}page.js">' and PAGE_JS.parent == JS_DIR


def test_the_script_route_serves_each_module_and_nothing_else():
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    app = FastAPI()
    add_script_route(app)
    client = TestClient(app)
    for name, source in MODULES.items():
        answer = client.get(SCRIPT_ROUTE + name)
        assert answer.status_code == 200 and answer.text == source
        assert answer.headers["content-type"].startswith("text/javascript")  # a module needs a JavaScript type
        assert answer.headers["cache-control"] == "no-cache"  # never a cached module beside a newer one
        assert client.get(SCRIPT_ROUTE + name, headers={"If-None-Match": answer.headers["etag"]}).status_code == 304
    for name in ("app.css", "..%2Fapp.css", "%2E%2E/%2E%2E/app.py", "missing.js"):
        assert client.get(SCRIPT_ROUTE + name).status_code == 404, name


def _prefill(n: int) -> PrefillRecord:
    weights = np.tril(np.random.default_rng(0).random((n, n)))
    weights /= weights.sum(axis=1, keepdims=True)
    return PrefillRecord(prompt="x" * n, chat=False, tokens=[TokenInfo(i, f"t{i}", f"t{i}") for i in range(n)],
                         attention=weights[None, None].astype(np.float16), kv=KVBytes(64, 64, 32, 32, n),
                         timings=Timings(1.0))


def test_the_exported_page_draws_attention_in_the_live_views_colours():
    info = ModelInfo(name="tiny", layers=1, heads=1, kv_heads=1, head_dim=4, hidden=4, vocab=8, bytes_per_value=4,
                     dtype="float32", context=16, sliding_window=[None])
    prefill = _prefill(4)
    html = session_page(session_record(prefill, [], info, [0]), plotly_js="")
    record = json.loads(re.search(r'<script type="application/json" id="session">(.*?)</script>', html, re.S).group(1))
    live = {trace["name"]: trace for trace in attention_chart(prefill.attention[0, 0], ["a"] * 4, 0, None, info)["data"]
            if trace["type"] == "heatmap"}
    assert record["attention_colors"]["scale"] == [list(stop) for stop in live["weights"]["colorscale"]]
    assert record["attention_colors"]["scale"] == ATTENTION_SCALE
    assert record["attention_colors"]["future"] == live["mask"]["colorscale"][0][1] == MASK_FUTURE
    # the replay takes its colours from the record, not from a copy of its own
    replay = code(REPLAY_JS.read_text(encoding="utf-8"))
    attention = replay[replay.index("function drawAttention"):replay.index("function drawKV")]
    assert "S.attention_colors.scale" in attention and "S.attention_colors.future" in attention
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgb\(", attention), "offline.js has a colour of its own for attention"
    assert f'<script type="module">\n{REPLAY_JS.read_text(encoding="utf-8")}</script>' in html
