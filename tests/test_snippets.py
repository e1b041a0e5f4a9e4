"""Every shipped snippet, one pytest item each (id ``CHAPTER:SNIPPET``), through the warm runner;
and every shipped snippet run cold and warm must print the same normalized output."""

from __future__ import annotations

import pytest

from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.runner import Runner

COURSE = load_course(paths.shipped_content_dir())
SNIPPETS = [s for s in COURSE.all_snippets() if s.runnable]
IDS = [s.key for s in SNIPPETS]


@pytest.fixture(scope="module")
def runner():
    r = Runner(cache_dir=None, warm=True)
    yield r
    r.close()


@pytest.mark.parametrize("snippet", SNIPPETS, ids=IDS)
def test_shipped_snippet_matches(runner, snippet):
    res = runner.run(snippet, use_cache=False)
    if res.status == "skipped":
        pytest.skip(res.message)
    where = f"{COURSE.chapter(snippet.chapter_id).file.name}:{snippet.line}"
    assert res.status == "match", f"{snippet.key} ({where}) {res.status} {res.message}\n{res.diff or res.actual}"


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if not s.cold and not s.gpu], ids=[s.key for s in SNIPPETS if not s.cold and not s.gpu])
def test_shipped_snippet_warm_equals_cold(runner, snippet):
    cold = runner.run(snippet, cold=True, use_cache=False)
    warm = runner.run(snippet, use_cache=False)
    assert warm.status not in ("error", "timeout") and cold.status not in ("error", "timeout"), (warm.message, cold.message)
    assert warm.actual == cold.actual, f"{snippet.key} prints differently warm and cold; mark it {{#{snippet.id} cold}}"
    assert (warm.returncode, warm.signal) == (cold.returncode, cold.signal)
