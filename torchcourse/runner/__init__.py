"""Run course snippets faithfully and fast. The calling process never imports torch.

Public API (stable; the Textual app builds on it)
-------------------------------------------------

``Runner(cache_dir: Path | None = None, warm: bool = True, *, preload=None, hash_seed=None, data=())``
    One per app. ``cache_dir`` (normally ``paths.cache_dir() / "runs"``) enables the output
    cache; ``None`` disables it. ``warm=True`` forks snippets from a zygote process that has
    imported ``preload`` (the course's ``preload`` of course.toml; default ``("torch",)``, and
    numpy with torch) — started lazily on the first warm run, or now with ``start()``;
    ``warm=False`` runs every snippet in a brand-new interpreter. ``hash_seed`` replaces the
    fixed ``PYTHONHASHSEED=0`` of every run (``verify --accept``'s second pass uses "1").
    ``data``: the course's data files (course.toml ``data``, absolute paths), copied into every
    run directory by their base names; their contents are part of the cache key.

``runner.run(snippet, *, cold=False, use_cache=True, cancel=None) -> RunResult``
    Thread-safe; call it from worker threads. Blocks until the snippet ends, times out
    (``snippet.timeout`` or 60 s), or ``cancel`` (a ``threading.Event``) is set — then the
    snippet's whole process group is killed within ~50 ms and the status is ``"cancelled"``.
    ``cold=True`` (or ``snippet.cold`` / ``snippet.gpu``) uses a brand-new interpreter.
    Never raises for a snippet's behaviour; runner failures come back as status ``"error"``
    (e.g. torch missing: the message says ``pip install torch==2.13.0``). A run whose exit
    status differs from the snippet's ``exit=N`` (0 by default; an uncaught exception's 1 belongs
    to ``raises=``) is a ``"mismatch"`` whatever its output.

``runner.close()``
    Kills the zygote and every snippet process still running. Idempotent; also run at exit.

``runner.gpu_available() -> bool``, ``runner.start()``.

``RunResult`` fields
    ``status``     "match" | "mismatch" | "error" | "timeout" | "skipped" | "cancelled"
    ``actual``     normalized real output (str; what ``verify --accept`` writes)
    ``expected``   the snippet's expected block as written, or None
    ``diff``       unified diff expected → actual (on mismatch), else ""
    ``seconds``    the snippet's own wall time (of the original run when ``cached``)
    ``returncode`` exit code, or None when killed by a signal / not run
    ``signal``     the signal number that killed it, or None
    ``truncated``  output went over ~1 MB and was cut (a notice ends ``actual``)
    ``message``    short Chinese note: "🗓️ 未实跑 — 需要 GPU", "⏱️ 超时：…", "↩️ 退出码 3", …
    ``cached``     the output came from the cache
    ``ok``         property: status is "match" or "skipped"

``compare(expected, actual) -> bool`` and ``normalize(text, *, side, run_dir=None)``
    The comparison rules (documented for authors in content/README.md, "Comparison").

``run_many(runner, snippets, *, jobs=2, cold=False, use_cache=True, on_result=None)``
    Runs a list on ``jobs`` threads (what ``verify`` uses).
"""

from torchcourse.runner.core import DEFAULT_TIMEOUT, STATUSES, Runner, RunResult, run_many
from torchcourse.runner.normalize import compare, normalize, unified_diff

__all__ = ["Runner", "RunResult", "run_many", "compare", "normalize", "unified_diff", "DEFAULT_TIMEOUT", "STATUSES"]
