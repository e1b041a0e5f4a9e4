"""Choice questions that give their key away without the learner knowing the answer.

Two tells, reported by ``torchcourse check`` as warnings (⚠️), never as problems: a learner
may still need to know the answer, but an author should look.

- **Length**: the key is the only longest choice (for a multi question: every key is longer
  than every other choice). By chance this happens in about one question in four (four
  choices); when it happens in more than a quarter of a chapter's choice questions, "pick the
  longest" beats reading. Length is display width (a CJK character counts two columns).
- **Echo**: a choice repeats wording of the prompt that only the key shares: an identifier
  (``retain_graph``, ``no_grad``) or a run of four CJK characters found in the prompt, in the
  key, and in no other choice. Single-answer questions only (with several keys the shared
  word is often the point).
"""

from __future__ import annotations

import re

from torchcourse.course.model import Course
from torchcourse.quiz.bank import Question, checkpoint_for
from torchcourse.textwidth import display_width

LENGTH_SHARE = 0.25
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CJK_RUN_RE = re.compile(r"[\u4e00-\u9fff]+")
CJK_NGRAM = 4
# words every PyTorch question shares: repeating them tells nothing
_COMMON = {
    "torch", "tensor", "tensors", "print", "true", "false", "none", "self", "import", "return",
    "grad", "shape", "size", "float", "int", "data", "model", "the", "and", "for",
}


def longest_is_key(q: Question) -> bool:
    """The key (every key) is longer than every other choice."""
    keys = set(q.answer_indexes)
    others = [display_width(c.strip()) for i, c in enumerate(q.choices) if i not in keys]
    if not keys or not others:
        return False
    return min(display_width(q.choices[i].strip()) for i in keys) > max(others)


def _wording(text: str) -> set[str]:
    text = text.replace("`", " ")
    words = {w for w in _WORD_RE.findall(text) if len(w) >= 4 and w.lower() not in _COMMON}
    grams = set()
    for run in _CJK_RUN_RE.findall(text):
        grams.update(run[i:i + CJK_NGRAM] for i in range(len(run) - CJK_NGRAM + 1))
    return words | grams


def echoed_by_key(q: Question) -> list[str]:
    """Prompt wording the key repeats and no other choice does (longest first); single-answer only."""
    if q.multiple or not q.has_choices or not isinstance(q.answer, int):
        return []
    prompt = _wording(q.prompt)
    key = _wording(q.choices[q.answer]) & prompt
    others: set[str] = set()
    for i, c in enumerate(q.choices):
        if i != q.answer:
            others |= _wording(c)
    only = sorted(key - others, key=lambda w: (-len(w), w))
    # overlapping CJK grams of one phrase: keep the phrase once (its first gram)
    kept: list[str] = []
    for w in only:
        if not any(w in k or k in w or (len(w) == CJK_NGRAM and w[1:] in k) for k in kept):
            kept.append(w)
    return kept


def quiz_warnings(course: Course) -> list[str]:
    """``file:line: ⚠️ …`` for every chapter whose choice questions give keys away by length,
    and every question whose key alone echoes the prompt."""
    out: list[str] = []
    for chapter in course.chapters:
        if not chapter.available:
            continue
        cp = checkpoint_for(course, chapter.id)
        if cp is None:
            continue
        choice_qs = [q for q in cp.questions if q.has_choices]
        longest = [q for q in choice_qs if longest_is_key(q)]
        if choice_qs and len(longest) > LENGTH_SHARE * len(choice_qs):
            ids = "、".join(q.id for q in longest)
            out.append(
                f"{cp.path}:{longest[0].line}: ⚠️ {chapter.label}的 {len(choice_qs)} 道选择题里有 {len(longest)} 道的答案是唯一最长的选项"
                f"（超过四分之一，挑最长的就能蒙对）：{ids}。改写选项，让长短不再泄露答案"
            )
        for q in choice_qs:
            if q.kind == "multi" and isinstance(q.answer, list) and len(q.choices) > 1 and sorted(q.answer) == list(range(len(q.choices))):
                out.append(f"{cp.path}:{q.line}: ⚠️ 题目 {q.id!r}：多选题的答案是全部选项，全选就能答对：加一个错的选项")
            echo = echoed_by_key(q)
            if echo:
                words = "、".join(f"「{w}」" for w in echo[:3])
                out.append(
                    f"{cp.path}:{q.line}: ⚠️ 题目 {q.id!r}：只有答案重复了题干里的 {words}，"
                    f"照着题干找字就能蒙对：让别的选项也用上这些词，或者换掉答案里的说法"
                )
        out.extend(render_warnings(cp))
    return out


def render_warnings(cp) -> list[str]:
    """``file:line: ⚠️`` for every quiz field that would not render as written (issue 49)."""
    from torchcourse.quiz.text import render_problems

    out = []
    for q in cp.questions:
        fields = [("prompt", q.prompt), ("explain", q.explain), ("reference", q.reference or "")]
        fields += [(f"choices[{i}]", c) for i, c in enumerate(q.choices or [])]
        for name, text in fields:
            for why in render_problems(text):
                out.append(f"{cp.path}:{q.line}: ⚠️ 题目 {q.id!r} 的 {name} 显示出来和原文不一样：{why}")
    return out


__all__ = ["LENGTH_SHARE", "longest_is_key", "echoed_by_key", "quiz_warnings"]
