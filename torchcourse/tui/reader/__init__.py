"""The reader: one chapter on screen, split by role (``screen`` → ``place`` / ``navigation`` /
``snippets`` → ``layout`` → ``positions`` → ``blocks``; each module's docstring says what it owns and may call,
and ``tests/test_layers.py`` keeps the imports running that way)."""

from torchcourse.tui.reader.blocks import PartView, Prose
from torchcourse.tui.reader.screen import ReaderScreen

__all__ = ["PartView", "Prose", "ReaderScreen"]
