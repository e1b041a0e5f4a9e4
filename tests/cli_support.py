"""The ``torchcourse`` command as a real process, for the CLI tests: a private TORCHCOURSE_HOME,
no TORCHCOURSE_CONTENT from the calling shell (the shipped course unless ``--content``), 80
columns. The deadline only catches a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tc(*args, home: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    e = dict(os.environ, TORCHCOURSE_HOME=str(home), COLUMNS="80")
    e.pop("TORCHCOURSE_CONTENT", None)
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "torchcourse", *args], cwd=ROOT, capture_output=True, text=True, env=e, timeout=timeout)
