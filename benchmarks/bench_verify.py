"""Whole-course ``torchcourse verify --no-cache`` wall time: another revision's code and content
(``--before REV``, default ``main``) against this tree's, one run each, on this interpreter
(the pinned build). Prints both times and the ratio after/before with the machine's load.

    python benchmarks/bench_verify.py [--before REV] [--jobs N] [--content-only CH ...]

REV is exported with ``git archive`` into a temporary directory (no worktree is added) and run
as ``python -m torchcourse`` from there, so its own package and content are used. Each run gets
a private, empty TORCHCOURSE_HOME (no cache, no store). Issue 47's budget: after ≤ 1.10 × before.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _verify(tree: Path, jobs: int, chapters: list[str], home: Path) -> tuple[float, str]:
    env = dict(os.environ, TORCHCOURSE_HOME=str(home))
    env.pop("TORCHCOURSE_CONTENT", None)
    env["PYTHONPATH"] = str(tree)
    cmd = [sys.executable, "-m", "torchcourse", "--content", str(tree / "content"), "verify", "--no-cache", "--jobs", str(jobs), *chapters]
    t0 = time.monotonic()
    out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - t0
    last = (out.stdout.strip().splitlines() or ["(no output)"])[-1]
    return seconds, last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main", help="the revision to compare with (default main)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("chapters", nargs="*", help="only these chapters (default: the whole course)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        old = Path(tmp) / "before"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.before], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        before, before_line = _verify(old, args.jobs, args.chapters, Path(tmp) / "h-before")
        after, after_line = _verify(REPO, args.jobs, args.chapters, Path(tmp) / "h-after")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"verify --no-cache --jobs {args.jobs} {' '.join(args.chapters) or '(whole course)'}  load {load}  cores {os.cpu_count()}")
    print(f"  before ({args.before}): {before:7.1f} s   {before_line}")
    print(f"  after  (this tree):     {after:7.1f} s   {after_line}")
    print(f"  ratio after/before: {after / before:.3f}   (budget 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
