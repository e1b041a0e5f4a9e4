"""The error lookup and the course's full-text search — a small package:

- :mod:`torchcourse.lookup.errors`: which section explains an error (appendix entries, matching);
- :mod:`torchcourse.lookup.search`: full-text search of the chapters;
- :mod:`torchcourse.lookup.cli`: ``torchcourse why``.

No textual, no torch. The appendix table itself is parsed and checked by the course model
(:mod:`torchcourse.course.appendix`); this package only answers queries over it.
"""

from torchcourse.lookup.errors import (
    MIN_SCORE,
    ErrorIndex,
    Hit,
    error_entries,
    error_index,
    errors_in_output,
    lookup_error,
    mentions,
    normalize,
    prepare,
    snippet_entries,
    where_label,
)
from torchcourse.lookup.search import TextHit, search_text  # noqa: F401

__all__ = [
    "MIN_SCORE", "ErrorIndex", "Hit", "error_entries", "error_index", "errors_in_output", "lookup_error",
    "mentions", "normalize", "prepare", "snippet_entries", "where_label", "TextHit", "search_text",
]
