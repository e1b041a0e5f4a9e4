"""What a learner sees of a snippet's output once paths are normalized (site-packages, the
interpreter, the run directory, torch's build path), how a traceback's exception is read and
matched against ``raises=``, the wildcards, the GPU guess, and the output cache (keyed on the
interpreter, readable by its owner only, never half-written)."""

from __future__ import annotations

import os
import site
import sys

import pytest

from torchcourse.runner import normalize
import importlib
normalize_module = importlib.import_module("torchcourse.runner.normalize")  # the module (the package exports the function under its name)


@pytest.fixture
def fresh_paths():
    """The environment's paths are computed once per process (lru_cache): recompute them for a
    monkeypatched interpreter, and again after it is restored."""
    normalize_module._environment_paths.cache_clear()
    yield
    normalize_module._environment_paths.cache_clear()


def test_user_site_packages_print_as_site_packages(fresh_paths):
    # kills normalize.py:64 (sites.append(site.getusersitepackages()) deleted)
    user = site.getusersitepackages().rstrip("/")
    assert normalize(f"{user}/somepkg/mod.py:3: UserWarning: w", side="actual") == "<site-packages>/somepkg/mod.py:3: UserWarning: w"


def test_a_site_packages_directory_only_on_sys_path_prints_as_site_packages(fresh_paths, monkeypatch):
    # kills normalize.py:67 (the sys.path entries ending in site-packages are not taken)
    monkeypatch.setattr(sys, "path", [*sys.path, "/opt/extra-tc38/lib/site-packages"])
    assert normalize("/opt/extra-tc38/lib/site-packages/pkg/m.py:1: Warning", side="actual") == "<site-packages>/pkg/m.py:1: Warning"


def test_the_interpreters_site_packages_print_as_site_packages_when_sys_path_lacks_them(fresh_paths, monkeypatch):
    # kills normalize.py:60 (site.getsitepackages() not taken): with sys.path trimmed (a tool or
    # python -I did it), the venv's site-packages would print as <prefix>/lib/python3.x/site-packages
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.rstrip("/").endswith(("site-packages", "dist-packages"))])
    sp = site.getsitepackages()[0].rstrip("/")
    assert normalize(f"{sp}/torch/nn/modules/module.py:9: UserWarning: u", side="actual") == "<site-packages>/torch/nn/modules/module.py:9: UserWarning: u"


@pytest.mark.parametrize("attr", ["prefix", "site"])
def test_an_interpreter_at_the_root_does_not_garble_every_output(fresh_paths, monkeypatch, attr):
    # kills normalize.py:70 and :74 (And->Or, Gt->GtE: "/" would become the empty path, and the
    # placeholder would be inserted between every two characters)
    if attr == "prefix":
        for name in ("prefix", "base_prefix", "exec_prefix"):
            monkeypatch.setattr(sys, name, "/")
    else:
        monkeypatch.setattr(site, "getsitepackages", lambda: ["/"])
    assert normalize("tensor([1., 2.])\n/etc/hosts", side="actual") == "tensor([1., 2.])\n/etc/hosts"


@pytest.mark.parametrize("attr", ["prefix", "site"])
def test_a_two_character_path_is_still_replaced(fresh_paths, monkeypatch, attr):
    # kills normalize.py:70 and :74 1->2 (a site directory or prefix like /p would be kept as
    # the machine's own path)
    if attr == "prefix":
        for name in ("prefix", "base_prefix", "exec_prefix"):
            monkeypatch.setattr(sys, name, "/p")
    else:
        monkeypatch.setattr(site, "getsitepackages", lambda: ["/p"])
    token = "<prefix>" if attr == "prefix" else "<site-packages>"
    assert normalize("/p/lib/os.py", side="actual") == f"{token}/lib/os.py"


def test_the_longest_environment_path_is_replaced_first(fresh_paths, monkeypatch):
    # kills normalize.py:76 (0->1: sorted by the placeholder's length instead of the path's):
    # a base interpreter inside the venv's directory must not leave "base/" behind
    monkeypatch.setattr(sys, "prefix", "/opt/tc38")
    monkeypatch.setattr(sys, "exec_prefix", "/opt/tc38")
    monkeypatch.setattr(sys, "base_prefix", "/opt/tc38/base")
    assert normalize("/opt/tc38/base/lib/os.py\n/opt/tc38/bin/python", side="actual") == "<prefix>/lib/os.py\n<prefix>/bin/python"


def test_a_run_dir_reached_through_a_symlink_prints_as_snippet_py(tmp_path):
    # kills normalize.py:81 True->False (the shorter of the run dir and its real path replaced
    # first). On macOS /tmp is a symlink to /private/tmp: the real path holds the run dir's text
    # inside it, and "/private" + "snippet.py" was left behind. Built here as T/tc-run-x ->
    # T/private/T/tc-run-x, so the real path ends with the run dir's text the same way.
    t = str(tmp_path)
    real_parent = tmp_path / ("private" + t) / "tc-run-x"
    (real_parent / "run").mkdir(parents=True)
    (tmp_path / "tc-run-x").symlink_to(real_parent)
    run_dir = f"{t}/tc-run-x/run"
    real = os.path.realpath(run_dir)
    assert real == f"{t}/private{t}/tc-run-x/run" and run_dir in real
    raw = f'Traceback (most recent call last):\n  File "{real}/snippet.py", line 1\nValueError: v\n{real}/data.pt\n{run_dir}/x.txt'
    assert normalize(raw, side="actual", run_dir=run_dir).split("\n") == [
        "Traceback (most recent call last):", "  ...", "ValueError: v", "data.pt", "x.txt"]


def test_an_output_that_starts_indented_is_kept(fresh_paths):
    # kills normalize.py:94 False->True (lines before any traceback taken as its frames)
    assert normalize("   1.5\n   2.5\nend", side="actual") == "   1.5\n   2.5\nend"
    assert normalize("    [3, 4]]", side="expected") == "    [3, 4]]"


def test_no_output_normalizes_to_the_empty_text():
    # kills normalize.py:119 (the early return for no text deleted: None.replace raised)
    assert normalize(None, side="actual") == "" and normalize(None, side="expected") == ""


def test_torchs_build_path_in_a_cpp_warning_becomes_a_token():
    # kills normalize.py:127 (the <torch-source> replacement deleted): the path differs between
    # builds of the same torch release, so the learner's run would mismatch the book's
    raw = ("/tmp/tc-run-a/run/snippet.py:3: UserWarning: The .grad attribute of a Tensor that is not a leaf "
           "(Triggered internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:494.)\n  print(y.grad)")
    out = normalize(raw, side="actual", run_dir="/tmp/tc-run-a/run")
    assert out == ("snippet.py:3: UserWarning: The .grad attribute of a Tensor that is not a leaf "
                   "(Triggered internally at <torch-source>.)\n  print(y.grad)")


def test_a_syntax_error_is_named_from_the_last_line():
    # pins the no-traceback branch: a file that does
    # not compile prints its location, the line, the caret and then the error, no header
    out = '  File "snippet.py", line 1\n    x = (\n        ^\nSyntaxError: \'(\' was never closed\n'
    assert normalize_module.raised_exception(out, 1) == "SyntaxError"
    assert normalize_module.raised_exception("IndentationError: unexpected indent", 1) == "IndentationError"
    assert normalize_module.raised_exception("done\nValueError: printed, not raised", 1) is None  # not a compile error
    assert normalize_module.raised_exception(out, 0) is None  # exit 0: nothing was raised


def test_the_exception_line_right_after_the_header_is_read():
    # kills normalize.py:178 (last + 1 -> last + 2): the first unindented line after the header,
    # even when no frame line stands between them
    assert normalize_module.raised_exception("Traceback (most recent call last):\nKeyError: 'k'", 1) == "KeyError"


@pytest.mark.parametrize("declared, raised, matches", [
    ("RuntimeError", "RuntimeError", True),
    ("Unsupported", "torch._dynamo.exc.Unsupported", True),
    ("torch._dynamo.exc.Unsupported", "torch._dynamo.exc.Unsupported", True),
    ("RuntimeError", "ValueError", False),
    ("exc.Unsupported", "torch._dynamo.exc.Unsupported", False),  # a qualified name must match exactly
    ("Error", "RuntimeError", False),
])
def test_a_declared_exception_matches_the_raised_one(declared, raised, matches):
    # kills normalize.py:189 (return deleted, Or->And, either == -> !=)
    assert normalize_module.exception_matches(declared, raised) is matches


def test_only_the_two_exact_forms_are_wildcards():
    # kills normalize.py:203 (== -> != : every text with a line other than '...' had wildcards)
    assert not normalize_module.has_wildcards("tensor([0, 1, 2,  ..., 9997])\n    ...,\nend")
    assert normalize_module.has_wildcards("a\n...\nb") and normalize_module.has_wildcards("x = <<...>>")


def test_an_interpreter_that_cannot_be_started_has_no_torch(tmp_path):
    # kills cache.py:39 (the 'none' for an interpreter that cannot be run deleted: the cache's
    # fingerprint would hold None, and the learner's configured python a crash later)
    from torchcourse.runner import cache

    missing = str(tmp_path / "no-such-python")
    assert cache.torch_version(missing) == "none"
    assert cache.fingerprint(missing, False)["torch"] == "none"
    assert cache.gpu_possible(missing) is False


@pytest.mark.parametrize("torch_build, devices, possible", [
    ("2.13.0+cpu", {"/dev/nvidia0", "/proc/driver/nvidia/version"}, False),  # a CPU build never runs on the GPU
    ("none", {"/dev/nvidia0"}, False),
    ("unknown", {"/dev/nvidia0"}, False),
    ("2.13.0", {"/dev/nvidia0"}, True),
    ("2.13.0", {"/proc/driver/nvidia/version"}, True),  # the driver is loaded, the node not yet made
    ("2.13.0+cu128", set(), False),  # a CUDA build on a machine without an NVIDIA device
])
def test_the_cheap_gpu_guess(monkeypatch, torch_build, devices, possible):
    # kills cache.py:45 (negated, or -> and), :46 (return False deleted), :47 (or -> and): the
    # guess decides whether the real CUDA probe runs, and it is part of the cache's fingerprint.
    # The machine's device nodes are faked (this machine has none); the function is the real one.
    from torchcourse.runner import cache

    real_exists = cache.os.path.exists
    monkeypatch.setattr(cache, "torch_version", lambda python: torch_build)
    monkeypatch.setattr(cache.os.path, "exists", lambda p: p in devices if str(p).startswith(("/dev/nvidia", "/proc/driver/nvidia")) else real_exists(p))
    assert cache.gpu_possible("python-under-test") is possible


def test_a_torch_whose_metadata_cannot_be_read_is_unknown(monkeypatch):
    # kills cache.py:31 (the 'unknown' for metadata that raises something else than "not found")
    import importlib.metadata

    from torchcourse.runner import cache

    def broken(name):
        raise ValueError("a damaged METADATA file")

    cache.torch_version.cache_clear()
    monkeypatch.setattr(importlib.metadata, "version", broken)
    try:
        assert cache.torch_version(sys.executable) == "unknown"
        assert cache.gpu_possible(sys.executable) is False
    finally:
        cache.torch_version.cache_clear()


def test_a_cache_entry_is_not_served_to_another_python_version(tmp_path, monkeypatch):
    # kills cache.py:52 (negated, == -> !=: the driver's python named by its path, not its
    # version: an interpreter upgraded in place would be served the old interpreter's outputs)
    import textwrap

    from torchcourse.course.model import Snippet
    from torchcourse.runner import Runner

    code = "import random\nprint(random.random())\n"
    snippet = Snippet(id="t", chapter_id="99", code=textwrap.dedent(code), expected="", line=1)
    r = Runner(cache_dir=tmp_path / "c", warm=False)
    try:
        old = r.run(snippet)
        assert not old.cached and r.run(snippet).cached
        monkeypatch.setattr(sys, "version", sys.version + " (rebuilt)")
        new = r.run(snippet)
        assert not new.cached, "served the output cached under another Python"
        assert new.actual != old.actual
    finally:
        r.close()


def test_a_record_of_a_run_that_took_no_time_is_served(tmp_path):
    # kills cache.py:73 (seconds < 0 -> <= 0: an instant run's record became a miss)
    from torchcourse.runner.cache import RunCache

    c = RunCache(tmp_path / "c")
    record = {"actual": "tensor([1.])", "seconds": 0.0, "returncode": 0, "signal": None, "truncated": False}
    c.put("ab" + "0" * 62, record)
    assert c.get("ab" + "0" * 62) == record


def test_the_cache_key_does_not_depend_on_the_order_the_environment_was_gathered():
    # kills cache.py:85 True->False (sort_keys dropped)
    from torchcourse.runner.cache import RunCache

    c = RunCache("/nonexistent")
    a = c.key("print(1)", {"torch": "2.13.0", "python": "3.11", "gpu": False})
    b = c.key("print(1)", {"gpu": False, "python": "3.11", "torch": "2.13.0"})
    assert a == b and a != c.key("print(2)", {"torch": "2.13.0", "python": "3.11", "gpu": False})


def test_cache_records_are_readable_by_their_owner_only(tmp_path):
    # kills cache.py:108 and :111 (0o600 -> 0o601): a record holds what a snippet printed (paths
    # under the learner's home among it); both the first record of a directory and the next one
    import stat

    from torchcourse.runner.cache import RunCache

    c = RunCache(tmp_path / "c")
    record = {"actual": "x", "seconds": 0.5, "returncode": 0, "signal": None, "truncated": False}
    c.put("cd" + "1" * 62, record)  # the directory cd/ does not exist yet
    c.put("cd" + "2" * 62, record)  # now it does
    modes = sorted(stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "c").rglob("*.json"))
    assert modes == [0o600, 0o600]


def test_a_record_that_cannot_be_written_leaves_no_temporary_file(tmp_path):
    # kills cache.py:120 (the temporary file's unlink deleted): a directory stands where the
    # record goes, so the rename fails; the run goes on uncached and nothing is left behind
    from torchcourse.runner.cache import RunCache

    c = RunCache(tmp_path / "c")
    key = "ef" + "3" * 62
    (tmp_path / "c" / "ef" / f"{key}.json").mkdir(parents=True)
    c.put(key, {"actual": "x", "seconds": 0.5, "returncode": 0, "signal": None, "truncated": False})
    assert c.get(key) is None
    assert sorted(p.name for p in (tmp_path / "c" / "ef").iterdir()) == [f"{key}.json"]


def test_each_random_stream_differs_between_warm_runs_with_numpy_preloaded(tmp_path):
    # kills zygote.py:146-147 (numpy's global stream not reseeded in the warm child): a course
    # whose course.toml preloads numpy.random forks children that share the zygote's numpy state;
    # a fresh `python file.py` draws new numbers each time
    import textwrap

    from torchcourse.course.model import Snippet
    from torchcourse.runner import Runner

    s = Snippet(id="t", chapter_id="99", code=textwrap.dedent("import numpy as np\nprint(np.random.rand(4).tolist())\n"), expected="", line=1)
    r = Runner(cache_dir=tmp_path / "c", warm=True, preload=("torch", "numpy.random"))
    try:
        first, second = (r.run(s, use_cache=False) for _ in range(2))
    finally:
        r.close()
    assert first.returncode == 0 and second.returncode == 0, (first.actual, second.actual)
    assert first.actual != second.actual, f"two warm runs printed the same numpy numbers: {first.actual}"
