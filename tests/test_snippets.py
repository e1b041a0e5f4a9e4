"""Every shipped snippet, one pytest item each (id ``CHAPTER:SNIPPET``), through the warm runner;
and every shipped snippet run cold and warm must print the same normalized output."""

from __future__ import annotations

import pytest

from torchcourse import paths
from torchcourse.course import load_course
from torchcourse.runner import Runner, run_many

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


WARMABLE = [s for s in SNIPPETS if not s.cold and not s.gpu]


@pytest.fixture(scope="module")
def cold_results(runner):
    """Every warmable snippet run cold once, two at a time (cold costs ~1.2 s per snippet)."""
    results = run_many(runner, WARMABLE, jobs=2, cold=True, use_cache=False)
    return {s.key: r for s, r in zip(WARMABLE, results)}


@pytest.mark.parametrize("snippet", WARMABLE, ids=[s.key for s in WARMABLE])
def test_shipped_snippet_warm_equals_cold(runner, cold_results, snippet):
    cold = cold_results[snippet.key]
    warm = runner.run(snippet, use_cache=False)
    assert warm.status not in ("error", "timeout") and cold.status not in ("error", "timeout"), (warm.message, cold.message)
    assert warm.actual == cold.actual, f"{snippet.key} prints differently warm and cold; mark it {{#{snippet.id} cold}}"
    assert (warm.returncode, warm.signal) == (cold.returncode, cold.signal)
