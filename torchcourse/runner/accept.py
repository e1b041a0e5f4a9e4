"""`verify --accept`: rewrite the ```output blocks of a chapter file from real runs.

Only the body of each snippet's output block changes (or a new block is inserted right after
the snippet when it has none); every other byte of the file stays as it was.
"""

from __future__ import annotations

import re
from pathlib import Path

from torchcourse.course.model import Snippet

_FENCE_OPEN_RE = re.compile(r"^(?P<indent>[ ]{0,3})(?P<fence>`{3,}|~{3,})")


def _closing_line(lines: list[str], open_idx: int) -> int:
    """0-based index of the line closing the fence opened at ``open_idx``."""
    m = _FENCE_OPEN_RE.match(lines[open_idx])
    if not m:
        raise ValueError(f"line {open_idx + 1} does not open a code fence")
    fence = m.group("fence")
    close_re = re.compile(r"^[ ]{0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
    for j in range(open_idx + 1, len(lines)):
        if close_re.match(lines[j].rstrip("\r\n")):
            return j
    return len(lines)  # unclosed: the block runs to the end of the file


def _block(indent: str, text: str, eol: str, info: str = "") -> list[str]:
    longest = max((len(m.group(0)) for m in re.finditer(r"^`{3,}", text, re.M)), default=0)
    fence = "`" * max(3, longest + 1)
    body = [indent + ln if ln else ln for ln in text.split("\n")] if text else []
    return [f"{indent}{fence}output{info}{eol}", *(ln + eol for ln in body), f"{indent}{fence}{eol}"]


_ALT_OPEN_RE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})output\s*\{(?P<attrs>[^}]*)\}\s*$")


def rewrite_alternatives(path: Path, changes: list[tuple[Snippet, str, list[tuple[str, str]]]]) -> int:
    """Replace, for each (snippet, module, blocks), the snippet's output alternatives of
    ``module`` by ``blocks`` ((specifier set, text) each, written ```output {MODULE SPEC}) right
    after its reference block (and after the alternatives of other modules, kept as they are).
    Returns the number of snippets whose alternatives changed; other bytes stay."""
    from torchcourse.course.releases import parse_alternative

    raw = path.read_bytes().decode("utf-8")
    lines = raw.splitlines(keepends=True)
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    changed = 0
    for snip, module, blocks in sorted(changes, key=lambda c: c[0].line, reverse=True):
        if snip.expected_line is None:
            raise ValueError(f"{path}:{snip.line}: #{snip.id} has no reference ```output block to put an alternative after")
        out_idx = snip.expected_line - 1
        m = _FENCE_OPEN_RE.match(lines[out_idx]) if 0 <= out_idx < len(lines) else None
        if m is None:
            raise ValueError(f"{path}:{snip.expected_line}: expected the ```output fence of #{snip.id} here")
        indent = m.group("indent")
        ref_end = _closing_line(lines, out_idx)
        kept: list[list[str]] = []
        j, region_end = ref_end + 1, ref_end
        while True:
            k = j
            while k < len(lines) and not lines[k].strip():
                k += 1
            am = _ALT_OPEN_RE.match(lines[k].rstrip("\r\n")) if k < len(lines) else None
            if am is None:
                break
            close = _closing_line(lines, k)
            parsed = parse_alternative(am.group("attrs"))
            if isinstance(parsed, str) or parsed[0] != module:
                kept.append(lines[k : close + 1])
            region_end = close
            j = close + 1
        new: list[str] = []
        for block in kept:
            new += [eol, *block]
        for spec, text in blocks:
            new += [eol, *_block(indent, text.rstrip("\n"), eol, f" {{{module}{spec}}}")]
        old = lines[ref_end + 1 : region_end + 1]
        if not lines[ref_end].endswith(("\n", "\r")):
            lines[ref_end] += eol
        if old == new:
            continue
        lines[ref_end + 1 : region_end + 1] = new
        if region_end == ref_end and new and ref_end + 1 + len(new) < len(lines) and lines[ref_end + 1 + len(new)].strip():
            lines.insert(ref_end + 1 + len(new), eol)
        changed += 1
    if changed:
        path.write_bytes("".join(lines).encode("utf-8"))
    return changed


GPU_ORIGIN_PREFIX = "<!-- gpu 输出记录于："
_GPU_ORIGIN_RE = re.compile(r"^\s*<!-- gpu 输出记录于：.*-->\s*$")


def rewrite_outputs(path: Path, outputs: list[tuple[Snippet, str]], gpu_origin: str | None = None) -> int:
    """Write ``outputs`` (snippet, normalized output) into the chapter file; return blocks changed.

    A ``gpu`` snippet's output can only come from a machine with CUDA: with ``gpu_origin`` (what
    that machine was, e.g. ``torch 2.13.0+cu126 · NVIDIA A100 · 2026-11-30``) a comment line
    ``<!-- gpu 输出记录于：… -->`` right above its fence records where it ran (replaced, never
    duplicated, on the next accept). HTML comments are not shown and not counted as reading.
    """
    raw = path.read_bytes().decode("utf-8")
    lines = raw.splitlines(keepends=True)
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    changed = 0
    for snip, text in sorted(outputs, key=lambda p: p[0].line, reverse=True):
        open_idx = snip.line - 1
        m = _FENCE_OPEN_RE.match(lines[open_idx]) if 0 <= open_idx < len(lines) else None
        if m is None:
            raise ValueError(f"{path}:{snip.line}: expected the ```python fence of #{snip.id} here")
        indent = m.group("indent")
        if snip.expected_line is not None:
            out_idx = snip.expected_line - 1
            end = _closing_line(lines, out_idx)
            om = _FENCE_OPEN_RE.match(lines[out_idx])
            old_body = "".join(ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[out_idx + 1 : end]).replace("\r\n", "\n").rstrip("\n")
            fence = om.group("fence") if om else "```"
            if old_body == text and not any(ln.lstrip().startswith(fence) for ln in text.split("\n")):
                continue
            new = _block(indent, text, eol)
            lines[out_idx : end + 1] = new
        else:
            end = _closing_line(lines, open_idx)
            if end >= len(lines):
                raise ValueError(f"{path}:{snip.line}: the fence of #{snip.id} is never closed")
            if not lines[end].endswith(("\n", "\r")):
                lines[end] += eol
            new = [eol, *_block(indent, text, eol)]
            if end + 1 < len(lines) and lines[end + 1].strip():
                new.append(eol)
            lines[end + 1 : end + 1] = new
        changed += 1
        if snip.gpu and gpu_origin:
            note = f"{indent}{GPU_ORIGIN_PREFIX}{gpu_origin} -->{eol}"
            if open_idx > 0 and _GPU_ORIGIN_RE.match(lines[open_idx - 1]):
                lines[open_idx - 1] = note
            else:
                lines[open_idx:open_idx] = [note]
    if changed:
        path.write_bytes("".join(lines).encode("utf-8"))
    return changed
