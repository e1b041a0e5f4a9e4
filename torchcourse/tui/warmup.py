"""Start-up warming done while the learner looks at the home screen (called by the app's
``prewarm`` worker): render the chapters' opening prose off screen, and add the reader's stylesheet
before the first chapter opens. Nothing here is needed for correctness; it moves first-use costs
off the reader's first screen."""

from __future__ import annotations


def warm_rendering(course, width: int) -> None:
    """Render the opening prose of every chapter once, off screen, at the reader's width: Rich's
    Markdown and table code and its per-character width cache are then warm when the learner
    opens a chapter (a first render of Chinese prose costs several times a later one)."""
    import io

    from rich.console import Console
    from rich.markdown import Markdown

    from torchcourse.tui.cjkwrap import glue_inline_code, space_links
    from torchcourse.tui.segments import course_segments, underscores_as_written

    console = Console(file=io.StringIO(), width=width, color_system="truecolor",
                      legacy_windows=False, force_terminal=True)
    for chapter in course.chapters:
        if not chapter.available or not chapter.parts:
            continue
        shown = 0
        for seg in course_segments(course, chapter, 0):  # kept: the reader splits it no more
            if seg.kind == "snippet":
                continue
            md = Markdown(seg.text, code_theme="monokai", hyperlinks=True)
            underscores_as_written(md.parsed)
            glue_inline_code(md.parsed)
            space_links(md.parsed)
            console.print(md)
            shown += len(seg.text)
            if shown > 900:
                break


def preload_reader_css(app) -> None:
    """Add the reader's stylesheet while the home screen is idle. Textual re-parses every
    stylesheet when a screen brings a CSS file it has not seen (~20-40 ms of the UI thread),
    which would otherwise delay the reader's first screen."""
    from textual.containers import Horizontal, Vertical, VerticalScroll
    from textual.widgets import Button, Static

    from torchcourse.tui.reader import PartView, Prose, ReaderScreen
    from torchcourse.tui.widgets.banner import BreakBanner, ChapterEnd
    from torchcourse.tui.widgets.keybar import KeyBar
    from torchcourse.tui.widgets.snippet import SnippetHead, SnippetView

    sheet = app.stylesheet
    path = ReaderScreen.CSS_PATH
    if sheet.has_source(str(path), ""):
        return
    try:
        sheet.read(path)
        # the default CSS of the reader's widgets too, so that mounting them adds nothing new
        for cls in (VerticalScroll, Vertical, Horizontal, Static, Button, PartView, Prose, BreakBanner,
                    ChapterEnd, KeyBar, SnippetHead, SnippetView):
            for read_from, css, tie_breaker, scope in cls.__new__(cls)._get_default_css():
                sheet.add_source(css, read_from=read_from, is_default_css=True, tie_breaker=tie_breaker, scope=scope)
        sheet.parse()  # fills this stylesheet's own parse cache (reparse() would use a throwaway one)
        sheet.update(app)
    except Exception:  # the reader loads it itself then (and reports a real CSS error)
        pass
