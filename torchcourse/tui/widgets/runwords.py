"""The runner's words for authors (fence attributes), told to a learner in the learner's words:
used by the snippet view and the editor's verdict alike (so neither imports the other for it)."""

from __future__ import annotations

import re

_AUTHOR_WORDS = (  # the runner's words for authors (fence attributes) → words for a learner (walk L5)
    (re.compile(r"代码块声明了 raises=(\S+?)，运行却没有抛出异常"), r"书上这段代码应该以 \1 报错结束，这次运行却没有报错"),
    (re.compile(r"代码块声明了 raises=(\S+?)，运行抛出的却是 (\S+)"), r"书上这段代码应该以 \1 报错结束，这次抛出的却是 \2"),
    (re.compile(r"运行抛出了 (\S+?)，代码块却没有声明 raises=\S+"), r"这次运行以 \1 报错结束，书上这段代码本不该报错"),
)


def learner_words(message: str) -> str:
    for pattern, words in _AUTHOR_WORDS:
        message = pattern.sub(words, message)
    return message
