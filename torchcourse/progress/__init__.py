"""Learner progress: one SQLite database (see :mod:`torchcourse.progress.store`). Never imports textual."""

from torchcourse.progress.store import Answer, ChapterProgress, Run, Store, StoreError, open_store

__all__ = ["open_store", "Store", "StoreError", "ChapterProgress", "Answer", "Run"]
