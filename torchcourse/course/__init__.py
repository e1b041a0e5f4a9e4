"""The course model: course.toml, chapters, parts, snippets, checkpoints. Never imports textual."""

from torchcourse.course.loader import CourseError, chapter_minutes, load_course, parse_pending
from torchcourse.course.model import Chapter, Course, Part, Problem, Route, Section, Snippet

__all__ = ["CourseError", "load_course", "parse_pending", "chapter_minutes", "Chapter", "Course", "Part", "Problem", "Route", "Section", "Snippet"]
