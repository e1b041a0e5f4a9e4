"""The home screen's figures: the core's one progress model (:mod:`torchcourse.progress.model`),
re-exported for the UI."""

from torchcourse.progress.model import *  # noqa: F401,F403
from torchcourse.progress.model import (  # noqa: F401  (names the UI imports by name)
    STATE_ICON, STATUS_ICON, STATUS_TEXT, ChapterStatus, all_statuses, chapter_digest, chapter_status,
    continue_target, current_route, due_review_count, neighbour, nothing_to_continue, resume_place, resume_where,
    review_line, route_minutes, route_order, route_progress, saved_place, total_minutes, unwritten_in_route,
)
