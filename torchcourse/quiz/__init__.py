"""Checkpoint quizzes: the question bank, grading, Leitner review and chapter completion.

Nothing here imports textual or torch. The Textual screens live in ``torchcourse/tui/screens/quiz.py``.
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
