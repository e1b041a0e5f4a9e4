"""What the progress store keeps, refuses and says, in the cases the mutation run of the progress
package (docs/mutation.md) showed no test pinned: each test names the mutants it kills."""

from __future__ import annotations

import json

import pytest

from torchcourse.progress import StoreError, open_store


@pytest.fixture
def store(tmp_path):
    s, notice = open_store(tmp_path / "p.sqlite3")
    assert notice is None
    yield s
    s.close()


def _export(tmp_path, **data):
    f = tmp_path / "in.json"
    f.write_text(json.dumps({"format": "torchcourse-progress", "version": 4, **data}), encoding="utf-8")
    return f


def test_the_largest_break_index_an_import_takes_is_a_million(store, tmp_path):
    # kills store.py:966 (<= _MAX_COUNT -> <, and the 1_000_000 constant +1): the limit the
    # message names is the one applied, at its exact edge
    ok = _export(tmp_path, chapters=[{"chapter_id": "02", "furthest_break": 1_000_000, "completed": False}], parts_read=[])
    assert store.import_json(ok)["chapters"] == 1
    assert store.chapter_progress("02").furthest_break == 1_000_000
    over = _export(tmp_path, chapters=[{"chapter_id": "03", "furthest_break": 1_000_001, "completed": False}], parts_read=[])
    with pytest.raises(StoreError) as info:
        store.import_json(over)
    assert "chapters[0].furthest_break" in str(info.value) and "0 到 1000000 之间的整数" in str(info.value)
    assert "1000001" in str(info.value)
    assert store.chapter_progress("03").furthest_break == 0
