"""The language switch without positional lists: each component registers its words where it is created."""
from __future__ import annotations

from typing import Callable

import gradio as gr

from ui.strings import t

Words = Callable[[str], dict]  # lang -> the gr.update() arguments of one component in that language


class Labels:
    """Components and the words they show; relabel(lang) gives the update of each, keyed by component."""

    def __init__(self):
        self._words: list[tuple[gr.components.Component | gr.blocks.BlockContext, Words]] = []
        self._of: dict[int, Words] = {}  # id() of a component -> its words

    def add(self, component, key: str | None = None, attr: str = "label", words: Words | None = None):
        """Register `component`: its `attr` is the text of `key`, or `words(lang)` gives its update arguments."""
        words = words or (lambda lang: {attr: t(key, lang)})
        self._words.append((component, words))
        self._of[id(component)] = words
        return component

    def name(self, component, lang: str) -> str | None:
        """The label `component` shows in `lang` (how a refusal names the control), or None: not registered, or
        its words set no label (a button's value)."""
        words = self._of.get(id(component))
        return words(lang).get("label") if words is not None else None

    @property
    def components(self) -> list:
        return [c for c, _ in self._words]

    def relabel(self, lang: str) -> dict:
        """{component: gr.update(...)} in `lang`, for every registered component."""
        return {c: gr.update(**words(lang)) for c, words in self._words}


def choices(pairs: list[tuple[str, str]]) -> Words:
    """The words of a radio or dropdown whose choices are (key, value) pairs."""
    return lambda lang: {"choices": [(t(key, lang), value) for key, value in pairs]}
