"""Hand-written mutants: careless edits a maintainer could make, each checked by hand to change
what a learner, an author or a teacher sees (a project tool, not in CI).

    python tools/hand_mutants.py [NAME ...] [--list]

The mutants are in ``tools/hand_mutants.toml``: a name, the source file, the exact text to
replace (it must occur exactly once, else the mutant "does not apply" and the file needs a look),
the replacement, what a user would notice, and the test files nearest that behaviour. Each mutant
is applied alone to a copy of the repository (without ``.git`` and ``.venv``); its tests run there
with ``CI=true``. A mutant is killed when they fail. The working tree is never modified.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CATALOGUE = REPO / "tools" / "hand_mutants.toml"


def load() -> list[dict]:
    with open(CATALOGUE, "rb") as fh:
        return tomllib.load(fh)["mutant"]


def run_one(m: dict, work: Path) -> tuple[str, float]:
    dest = work / m["name"]
    shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache"), symlinks=True)
    path = dest / m["file"]
    text = path.read_text(encoding="utf-8")
    if text.count(m["old"]) != 1:
        return f"does not apply ({text.count(m['old'])} matches of its text in {m['file']})", 0.0
    path.write_text(text.replace(m["old"], m["new"]), encoding="utf-8")
    env = {**os.environ, "CI": "true", "PYTHONPATH": str(dest)}
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m["tests"]],
                          cwd=dest, env=env, capture_output=True, text=True)
    took = time.monotonic() - t0
    if done.returncode == 0:
        return "SURVIVED", took
    if done.returncode in (1,):
        return "killed", took
    return f"error (pytest exit {done.returncode}): {done.stdout.strip().splitlines()[-1:]} {done.stderr.strip()[-300:]}", took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="only these mutants (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args(argv)
    mutants = load()
    if args.names:
        unknown = set(args.names) - {m["name"] for m in mutants}
        if unknown:
            print(f"unknown mutants: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m["name"] in args.names]
    if args.list:
        for m in mutants:
            print(f"{m['name']:<32} {m['file']}: {m['notice']}")
        return 0
    survived = 0
    with tempfile.TemporaryDirectory(prefix="tc-hand-mutants-") as tmp:
        for m in mutants:
            verdict, took = run_one(m, Path(tmp))
            survived += verdict != "killed"
            print(f"{m['name']:<32} {verdict:<10} {took:6.1f} s  {' '.join(m['tests'])}", flush=True)
    print(f"{len(mutants) - survived} of {len(mutants)} killed")
    return 0 if survived == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
