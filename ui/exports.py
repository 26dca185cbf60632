"""Files the server makes for a user to download (a trace, a saved page, a summary, a class report): each in a
temporary folder of the server's own, under a name of ours (never a name or a path a page sent), kept only as long
as the download needs it."""
from __future__ import annotations

import functools
import json
import shutil
import tempfile
import threading
from pathlib import Path

EXPORT_NAME = "token-by-token-trace.json"
EXPORT_KEEP_S = 10.0  # an export's own file lives this long: Gradio has copied it for the download by then


class Exports:
    """Each exported file is written to a folder of its own, which is removed EXPORT_KEEP_S later: Gradio serves
    the download from its own copy, made as soon as the handler returns the file (and removed by its cache
    clean-up). The user's newest folder is kept in the app's stash (ui/stash.py) with its removal as its cleanup,
    so it also goes when their next export does, or when they leave."""

    def __init__(self, stash, name: str):
        self.stash, self.name = stash, name  # the app's stash, and this export's name in it (a view's tab)

    def write(self, user: str, trace: dict) -> str:
        return self.write_text(user, EXPORT_NAME, json.dumps(trace, ensure_ascii=False, indent=1))

    def write_text(self, user: str, name: str, text: str) -> str:
        """`text` in a new folder of the user's, as the file `name` (one of ours: never a name the page sent)."""
        return self.write_texts(user, {name: text})[0]

    def write_texts(self, user: str, files: dict[str, str]) -> list[str]:
        """Each {name: text} as a file in one new folder of the user's; their paths, in that order."""
        folder = Path(tempfile.mkdtemp(prefix="tbt-export-"))
        paths = []
        for name, text in files.items():
            path = folder / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        self.stash.put(user, self.name, folder, cleanup=functools.partial(shutil.rmtree, folder, ignore_errors=True))
        timer = threading.Timer(EXPORT_KEEP_S, self._expire, (user, folder))
        timer.daemon = True
        timer.start()
        return paths

    def _expire(self, user: str, folder: Path) -> None:
        self.stash.forget(user, self.name, only=folder)  # still the user's newest: let go, its cleanup removes it
        shutil.rmtree(folder, ignore_errors=True)  # a no-op unless the stash let it go without its cleanup
