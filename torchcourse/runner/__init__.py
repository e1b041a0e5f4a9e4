"""Run course snippets faithfully and fast. Never imports torch in the calling process.

Public API (stable; the Textual app builds on it)::

    from torchcourse.runner import Runner, RunResult, compare, normalize

    runner = Runner(cache_dir=paths.cache_dir() / "runs", warm=True)
    res = runner.run(snippet, cold=False, use_cache=True, cancel=threading.Event())
    runner.close()
"""

from torchcourse.runner.core import DEFAULT_TIMEOUT, STATUSES, Runner, RunResult, run_many
from torchcourse.runner.normalize import compare, normalize, unified_diff

__all__ = ["Runner", "RunResult", "run_many", "compare", "normalize", "unified_diff", "DEFAULT_TIMEOUT", "STATUSES"]
