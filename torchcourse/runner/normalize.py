"""Normalization and comparison of snippet outputs.

The rules (also written for authors in content/README.md, section "Comparison"):

Both sides
  1. CRLF and lone CR line ends: ``\\r\\n`` becomes ``\\n``; on a line that still holds ``\\r``
     (a progress bar redrawing itself) only the text after the last ``\\r`` is kept.
  2. ANSI escape sequences (colours, cursor moves) are removed.
  3. Memory addresses ``0x`` followed by 6 or more hex digits become the token ``0xADDR``.
  4. Tracebacks: a header that starts mid-line (the program printed ``几行？`` or a progress
     line without a newline before it failed) moves to a line of its own, the text before it
     kept on its line. After each ``Traceback (most recent call last):`` header the indented
     frame lines (file, line, source, carets) collapse into the single line ``  ...``; the
     header and every line from the first unindented one on (``RuntimeError: …``) are kept.
  5. Trailing whitespace on every line and leading / trailing blank lines are removed.
  6. The build-machine path in torch's C++ warnings (``Triggered internally at
     /__w/pytorch/…/TensorBody.h:494.``) becomes ``<torch-source>``: it differs between builds
     of the same torch release.

Actual side only (what the snippet printed)
  7. The temporary run directory disappears: ``/tmp/tc-run-x/run/snippet.py`` prints as
     ``snippet.py`` and the bare directory as ``.``; the snippet's own HOME and TMPDIR beside
     it print as ``../home`` and ``../tmp``.
  8. Site-packages directories become ``<site-packages>``; ``sys.prefix`` (and the base
     prefix of a venv) become ``<prefix>``. Outputs are then equal across machines and venvs.

Comparison only (the actual panel keeps the real text)
  9. A line number inside the installed library's own files — a path under ``<site-packages>/``
     of a module the course preloads, ``<site-packages>/torch/autograd/graph.py:979`` — compares
     as ``<site-packages>/torch/autograd/graph.py:<n>``: it moves between releases. Only such a
     path, which the runner itself wrote (rule 8), is touched: ``graph.py:979`` printed by the
     snippet compares literally.
 10. torch's own log line that a CUDA build prints on a machine without CUDA
     (``W1204 20:34:46.780000 31161 torch/utils/cpp_extension.py:183] … No CUDA runtime is
     found, using CUDA_HOME=…``: a time, a process id, the machine's CUDA_HOME) is left out when
     torch is a preloaded library: the CPU build of the same release never prints it.

Wildcards (expected side only, never produced by the runner itself)
  - a line that is exactly ``...`` (no indentation) matches any number of lines, none included;
  - ``<<...>>`` inside a line matches any text within that line.
  Torch's own ``...`` in summarized tensors (``tensor([0, 1, 2,  ..., 9997])`` or an indented
  ``...,`` row) is never a wildcard: only these two exact forms are.
"""

from __future__ import annotations

import difflib
import os
import re
import site
import sys
from bisect import bisect_left
from functools import lru_cache
from itertools import accumulate

LINE_WILDCARD = "..."
INLINE_WILDCARD = "<<...>>"
ADDR_TOKEN = "0xADDR"
TRACEBACK_HEADER = "Traceback (most recent call last):"
FRAMES_TOKEN = "  ..."

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ADDR_RE = re.compile(r"0x[0-9a-fA-F]{6,}")
_TORCH_SOURCE_RE = re.compile(r"(Triggered internally at )[^\s()]+?(?::\d+)?(?=\.?\))")
TORCH_SOURCE_TOKEN = "<torch-source>"
_EXC_LINE_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::|$)")


@lru_cache(maxsize=1)
def _environment_paths() -> list[tuple[str, str]]:
    """(path, placeholder) pairs, longest path first, for the actual side."""
    pairs: dict[str, str] = {}
    sites: list[str] = []
    try:
        sites.extend(site.getsitepackages())
    except Exception:  # pragma: no cover - some embedded interpreters lack it
        pass
    try:
        sites.append(site.getusersitepackages())
    except Exception:  # pragma: no cover
        pass
    sites.extend(p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages")))
    for p in sites:
        for q in {p, os.path.realpath(p)}:
            if q and len(q) > 1:
                pairs[q.rstrip("/")] = "<site-packages>"
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        for q in {p, os.path.realpath(p)}:
            if q and len(q) > 1:
                pairs.setdefault(q.rstrip("/"), "<prefix>")
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


_PATHS_CODE = r"""
import json, os, site, sys
sites = []
try: sites.extend(site.getsitepackages())
except Exception: pass
try: sites.append(site.getusersitepackages())
except Exception: pass
sites.extend(p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages")))
print(json.dumps({"sites": sites, "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix]}))
"""


@lru_cache(maxsize=8)
def environment_paths_for(python: str | None) -> list[tuple[str, str]]:
    """:func:`_environment_paths` of another interpreter (``verify --python``): its own
    site-packages and prefixes, asked of it once; this interpreter's when it is this one."""
    if not python or os.path.abspath(python) == os.path.abspath(sys.executable):  # not realpath: a venv's python is a link
        return _environment_paths()
    import json
    import subprocess

    try:
        out = subprocess.run([python, "-c", _PATHS_CODE], capture_output=True, text=True, timeout=60)
        data = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return _environment_paths()
    pairs: dict[str, str] = {}
    for p in data.get("sites", []):
        for q in {p, os.path.realpath(p)}:
            if q and len(q) > 1:
                pairs[q.rstrip("/")] = "<site-packages>"
    for p in data.get("prefixes", []):
        for q in {p, os.path.realpath(p)}:
            if q and len(q) > 1:
                pairs.setdefault(q.rstrip("/"), "<prefix>")
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def _replace_paths(text: str, run_dir: str | None, python: str | None = None) -> str:
    if run_dir:
        for d in sorted({run_dir.rstrip("/"), os.path.realpath(run_dir)}, key=len, reverse=True):
            text = text.replace(d + "/", "").replace(d, ".")
            base = os.path.dirname(d)
            if os.path.basename(base).startswith("tc-run-"):
                # the snippet's own HOME and TMPDIR sit beside its run directory: ../home, ../tmp
                text = text.replace(base + "/", "../")
    pairs = environment_paths_for(python) if python else _environment_paths()
    if pairs and any(path in text for path, _ in pairs):  # (a substring test is C-fast; the pattern is not)
        # one pass, longest path first, and only a whole path: with sys.prefix == "/p", the "/p" of
        # "/p/bin/python3" is the prefix, the "/p" of "/python3" or "/x/p" or "/px" is not
        tokens = dict(pairs)
        text = _paths_pattern(tuple(path for path, _ in pairs)).sub(lambda m: tokens[m.group(0)], text)
    return text


@lru_cache(maxsize=8)
def _paths_pattern(paths: tuple[str, ...]) -> re.Pattern[str]:
    if all(p.startswith("/") for p in paths):
        # the leading "/" outside the look-behind: the search skips to each "/" in C (10 ms -> 0.3
        # for a megabyte without one)
        alternatives = "|".join(re.escape(p[1:]) for p in paths)
        return re.compile(rf"/(?<![A-Za-z0-9_.~/-]/)(?:{alternatives})(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])")
    alternatives = "|".join(re.escape(p) for p in paths)
    return re.compile(rf"(?<![A-Za-z0-9_.~/-])(?:{alternatives})(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])")


def _header_on_own_line(lines: list[str]) -> list[str]:
    """A line that ends in the traceback header after other text (``几行？Traceback (most recent
    call last):``: stdout without a final newline, then the traceback on stderr) becomes two
    lines, the text and the header."""
    out: list[str] = []
    for ln in lines:
        if TRACEBACK_HEADER not in ln:
            out.append(ln)
            continue
        body = ln.rstrip()
        if body.endswith(TRACEBACK_HEADER) and body != TRACEBACK_HEADER:
            out.append(body[: -len(TRACEBACK_HEADER)])
            out.append(TRACEBACK_HEADER)
        else:
            out.append(ln)
    return out


def _collapse_tracebacks(lines: list[str]) -> list[str]:
    out: list[str] = []
    in_frames = False
    for ln in lines:
        if TRACEBACK_HEADER in ln and ln.rstrip() == TRACEBACK_HEADER:
            out.append(TRACEBACK_HEADER)
            in_frames = True
            continue
        if in_frames:
            if ln[:1] in (" ", "\t"):
                if out[-1] != FRAMES_TOKEN:
                    out.append(FRAMES_TOKEN)
                continue
            in_frames = False
        out.append(ln)
    return out


def normalize(text: str | None, *, side: str = "actual", run_dir: str | None = None, frames: bool = False,
              python: str | None = None) -> str:
    """Normalize an output for comparison; ``side`` is ``"actual"`` or ``"expected"``.

    ``run_dir`` (actual side) is the temporary directory the snippet ran in. ``frames``: keep
    the traceback frames (the learner's 展开调用栈 view; never compared).
    Idempotent: ``normalize(normalize(t)) == normalize(t)``.
    """
    if side not in ("actual", "expected"):
        raise ValueError(f"side must be 'actual' or 'expected', got {side!r}")
    if not text:
        return ""
    text = text.replace("\r\n", "\n")
    text = _ANSI_RE.sub("", text)
    if "\r" in text:
        text = "\n".join(ln.rsplit("\r", 1)[-1] if "\r" in ln else ln for ln in text.split("\n"))
    if side == "actual":
        text = _replace_paths(text, run_dir, python)
    text = _ADDR_RE.sub(ADDR_TOKEN, text)
    text = _TORCH_SOURCE_RE.sub(r"\1" + TORCH_SOURCE_TOKEN, text)
    lines = text.split("\n")
    if TRACEBACK_HEADER in text:  # (without one both passes leave every line as it is)
        lines = _header_on_own_line(lines)
        lines = lines if frames else _collapse_tracebacks(lines)
    lines = [ln.rstrip() for ln in lines]
    start = next((i for i, ln in enumerate(lines) if ln), len(lines))  # (blank edges cut by index:
    end = next((i + 1 for i in range(len(lines) - 1, start - 1, -1) if lines[i]), start)  # pop(0) was quadratic)
    return "\n".join(lines[start:end])


def _visible_char(c: str) -> str:
    o = ord(c)
    if o == 0x1B:
        return "␛"
    if o < 0x20:
        return "^" + chr(o + 0x40)  # ^@ … ^_ (BEL ^G, BS ^H, SO ^N, CR ^M)
    if o == 0x7F:
        return "^?"
    return f"\\x{o:02x}"  # C1 controls: \x9b, \x9d


_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str | None) -> str:
    """The text with every C0/C1/DEL control character except newline and tab shown in a visible
    form (ESC ␛, other C0 as ^X, DEL ^?, C1 as \\x9b): for DISPLAY only (run, verify's diff, the
    reader), so that a snippet's output never drives the terminal. Comparisons keep the
    normalized text as it is."""
    if not text:
        return text or ""
    return _CONTROL_RE.sub(lambda m: _visible_char(m.group()), text)


def raised_exception(actual: str, returncode: int | None) -> str | None:
    """The class name of the uncaught exception a run ended with, or None.

    A run raised when it exited with a non-zero code and its output holds a traceback: the name is
    taken from the first unindented line after the last ``Traceback (most recent call last):``
    header (``RuntimeError: …`` → ``RuntimeError``; a qualified ``torch._dynamo.exc.Unsupported``
    stays qualified). Works on raw or normalized text.
    """
    if not returncode:
        return None
    lines = actual.split("\n")
    if TRACEBACK_HEADER not in actual:
        # a file that does not compile prints no header, only the error's location and line
        tail = [ln for ln in lines if ln.strip()][-1:]
        m = _EXC_LINE_RE.match(tail[0]) if tail else None
        return m.group("name") if m and m.group("name").endswith(("SyntaxError", "IndentationError", "TabError")) else None
    lines = _header_on_own_line(lines)
    headers = [i for i, ln in enumerate(lines) if ln.rstrip() == TRACEBACK_HEADER]
    if not headers:
        return None  # the header text inside a line, not a traceback's own header
    last = headers[-1]
    for ln in lines[last + 1 :]:
        if not ln.strip() or ln[:1] in (" ", "\t"):
            continue
        m = _EXC_LINE_RE.match(ln)
        return m.group("name") if m else None
    return None


def exception_matches(declared: str, raised: str) -> bool:
    """``raises=RuntimeError`` matches ``RuntimeError``; ``raises=Unsupported`` matches
    ``torch._dynamo.exc.Unsupported``; a fully qualified declaration must match exactly."""
    return raised == declared or raised.rsplit(".", 1)[-1] == declared


def _line_fits(parts: list[str], line: str) -> bool:
    """One expected line, split at its ``<<...>>``, against one actual line: the first part a
    prefix, the last a suffix, each middle part found leftmost after the one before (leftmost is
    always right for wildcards between literal parts) — a few ``str.find`` calls, no backtracking."""
    if len(parts) == 1:
        return line == parts[0]
    first, *middle, last = parts
    if len(line) < len(first) + len(last) or not line.startswith(first) or not line.endswith(last):
        return False
    pos, end = len(first), len(line) - len(last)
    for part in middle:
        found = line.find(part, pos, end)
        if found < 0:
            return False
        pos = found + len(part)
    return True


def _wildcard_match(expected: str, actual: str) -> bool:
    """``expected``'s wildcards against ``actual`` (both normalized), line by line: the runs of
    expected lines between ``...`` lines are blocks, the first anchored at the top, the last at
    the bottom, each middle one at its leftmost place after the block before. The class service
    judges every learner's output in its one process: a regex here backtracked cubically (three
    ``...`` lines against 2,000 lines of output: 27 s), this is at most lines × block length."""
    lines = actual.split("\n") if actual else []
    blocks: list[list[list[str]]] = [[]]
    for ln in expected.split("\n"):
        if ln == LINE_WILDCARD:
            blocks.append([])
        else:
            blocks[-1].append(ln.split(INLINE_WILDCARD))

    def fits(block: list[list[str]], at: int) -> bool:
        return all(_line_fits(parts, lines[at + i]) for i, parts in enumerate(block))

    head, tail = blocks[0], blocks[-1]
    if len(blocks) == 1:
        return len(head) == len(lines) and fits(head, 0)
    if len(head) + len(tail) > len(lines) or not fits(head, 0) or not fits(tail, len(lines) - len(tail)):
        return False
    pos, end = len(head), len(lines) - len(tail)
    hay, starts = None, None
    for block in blocks[1:-1]:
        if block and all(len(parts) == 1 for parts in block):  # plain lines: one str.find, in C
            if hay is None:
                hay, starts = "\n" + actual + "\n", list(accumulate((len(ln) + 1 for ln in lines), initial=0))
            found = hay.find("\n" + "\n".join(parts[0] for parts in block) + "\n", starts[pos])
            at = bisect_left(starts, found) if found >= 0 else None
        else:
            at = next((i for i in range(pos, end - len(block) + 1) if fits(block, i)), None)
        if at is None or at + len(block) > end:
            return False
        pos = at + len(block)
    return True


def has_wildcards(expected: str) -> bool:
    return INLINE_WILDCARD in expected or any(ln == LINE_WILDCARD for ln in expected.split("\n"))


LIBRARY_LINE_TOKEN = "<n>"


@lru_cache(maxsize=16)
def _library_line_re(libraries: tuple[str, ...]) -> re.Pattern[str] | None:
    names = [re.escape(name.split(".")[0]) for name in libraries if name]
    if not names:
        return None
    return re.compile(r"(<site-packages>/(?:" + "|".join(sorted(set(names))) + r')/[^\s:"\'(),<]{0,400}?\.py)(:|", line )\d+')


_NO_CUDA_LOG_RE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ torch/utils/cpp_extension\.py:\d+\] (?:\[[^\]]*\] )?No CUDA runtime is found, using CUDA_HOME=.*\n?", re.M)


def library_lines(text: str, libraries: tuple[str, ...]) -> str:
    """Rules 9 and 10: a line number inside the files of ``libraries`` (the course's preload
    modules, under ``<site-packages>/``) becomes ``<n>``; torch's "No CUDA runtime is found" log
    line goes. For the comparison only."""
    if "torch" in libraries and "No CUDA runtime" in text:
        text = _NO_CUDA_LOG_RE.sub("", text)
    rx = _library_line_re(tuple(libraries))
    if rx is None or "<site-packages>/" not in text:
        return text
    return rx.sub(lambda m: m.group(1) + m.group(2) + LIBRARY_LINE_TOKEN, text)


def compare(expected: str | None, actual: str, libraries: tuple[str, ...] = ()) -> bool:
    """True when the actual output matches the expected one (both normalized here; with
    ``libraries``, rule 9 for those modules' files)."""
    if expected is None:
        return False
    exp = library_lines(normalize(expected, side="expected"), libraries)
    act = library_lines(normalize(actual, side="expected"), libraries)  # already-normalized text is a fixed point
    if exp == act:
        return True
    if not has_wildcards(exp):
        return False
    return _wildcard_match(exp, act)


def unified_diff(expected: str | None, actual: str, libraries: tuple[str, ...] = ()) -> str:
    exp = library_lines(normalize(expected or "", side="expected"), libraries).split("\n")
    act = library_lines(normalize(actual, side="expected"), libraries).split("\n")
    return "\n".join(difflib.unified_diff(exp, act, fromfile="期望 expected", tofile="实际 actual", lineterm=""))
