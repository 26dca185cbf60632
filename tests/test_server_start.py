"""ui.server.launch on a machine too busy for Gradio's own check of the page: the server still starts, whole."""
import gradio as gr
import gradio.networking
import httpx
import pytest

from ui.protocol import PROTOCOL
from ui.server import launch

pytestmark = pytest.mark.server


def test_a_page_slower_than_gradios_check_still_starts_the_server(monkeypatch):
    """Gradio's launch asks for the page once, with a 3 s time-out, and on a loaded machine gave up ("When localhost
    is not accessible, a shareable link must be created"; every server of tests/test_rooms.py in a fresh run). Its
    check is made to give up here as it did then: launch waits for the page itself and adds its own routes."""
    monkeypatch.setattr(gradio.networking, "url_ok", lambda url: False)
    with gr.Blocks() as demo:
        gr.Markdown("a page")
    launch(demo, "127.0.0.1", None, prevent_thread_lock=True, quiet=True)
    try:
        assert demo.is_running
        assert httpx.get(demo.local_url, timeout=60, trust_env=False).status_code == 200
        assert any(getattr(route, "path", "").startswith(PROTOCOL["play_route"]) for route in demo.app.routes)
    finally:
        demo.close()


def test_the_pages_own_routes_are_there_before_the_server_takes_a_request(monkeypatch):
    """The page's script (/tbt/js/) and Play's word are routes of the app as it starts serving, not added after
    launch returns (a page asked for in that instant would get 404 for its script)."""
    import gradio.http_server

    from ui.protocol import SCRIPT_ROUTE

    seen = {}
    start_server = gradio.http_server.start_server

    def starting(app, **kwargs):
        seen["paths"] = [getattr(route, "path", "") for route in app.routes]
        return start_server(app=app, **kwargs)

    monkeypatch.setattr(gradio.http_server, "start_server", starting)
    with gr.Blocks() as demo:
        gr.Markdown("a page")
    launch(demo, "127.0.0.1", None, prevent_thread_lock=True, quiet=True)
    try:
        assert any(p.startswith(SCRIPT_ROUTE) for p in seen["paths"]), seen
        assert any(p.startswith(PROTOCOL["play_route"]) for p in seen["paths"]), seen
        assert httpx.get(f"{demo.local_url.rstrip('/')}{SCRIPT_ROUTE}page.js", timeout=60, trust_env=False).status_code == 200
    finally:
        demo.close()
