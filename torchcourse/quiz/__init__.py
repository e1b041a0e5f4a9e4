"""Checkpoint quizzes: the question bank, grading, Leitner review and chapter completion.

Nothing here imports textual or torch. The Textual screens live in ``torchcourse/tui/screens/quiz.py``
(with ``quiz_view``, ``quiz_save``, ``quiz_run`` and ``quiz_ends`` beside it). ``order`` shuffles the
choices per attempt; ``tells`` finds keys that length or wording give away (``check`` warns).
"""

from torchcourse.quiz.bank import Checkpoint, Question, load_checkpoint, questions_for, validate_checkpoints
from torchcourse.quiz.grading import Grade, grade, normalize

__all__ = [
    "Checkpoint",
    "Question",
    "Grade",
    "grade",
    "normalize",
    "load_checkpoint",
    "questions_for",
    "validate_checkpoints",
]
