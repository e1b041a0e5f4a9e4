"""README promises that can go stale: the screen picture, the command list, the set-up commands."""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")

sys.path.insert(0, str(REPO / "docs"))
import capture  # noqa: E402


def _setup_section() -> str:
    return README.split("## Set-up", 1)[1].split("\n## ", 1)[0]


def test_exactly_two_setup_commands_and_ci_runs_the_test_one():
    blocks = re.findall(r"```bash\n(.*?)\n```", _setup_section(), re.S)
    assert len(blocks) == 2, blocks
    install, test = (b.strip() for b in blocks)
    assert "\n" not in install and "\n" not in test
    assert install.endswith("torchcourse")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines(), f".ci/run does not run the README's test command {test!r}"


def test_every_cli_command_is_documented():
    from torchcourse.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in sub.choices:
        assert f"`torchcourse {name}" in README, f"README's command table lacks `torchcourse {name}`"


def test_readme_screen_capture_is_current():
    shown = capture.readme_block(README)
    assert shown is not None, "README.md lost its <!-- screen:home --> block"
    assert shown == capture.capture_home(), "README's home-screen picture is stale: run `python docs/capture.py`"


def test_setup_says_the_exact_pin_still_brings_cuda_and_gives_the_cpu_index():
    setup = _setup_section()
    assert "a looser pin pulls a multi-GB CUDA build" not in setup  # the pin alone does not avoid CUDA
    assert "CUDA" in setup and "nvidia" in setup
    assert "pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0" in setup


def test_readme_says_the_runner_is_not_a_sandbox():
    section = README.split("### What the runner contains", 1)
    assert len(section) == 2, "README lost the section on what the runner does not contain"
    text = section[1].split("\n## ", 1)[0]
    assert "not a\nsandbox" in text or "not a sandbox" in text
    assert "HOME" in text and "TMPDIR" in text and "outside its run directory stay" in text
