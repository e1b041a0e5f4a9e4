"""``torchcourse class report``: a class's progress as one table, from real progress stores
(``serve --users``'s data root) and from a folder of ``torchcourse export`` files."""

from __future__ import annotations

import csv
import io

from serve_support import FIXTURE, tc
from torchcourse.course.loader import course_id_of
from torchcourse.progress import open_store

TOKENS = {"alice": "alice-token-0123456789abcdef", "张三": "zhang-token-0123456789abcdef"}


def a_class(tmp_path):
    users = tmp_path / "class.toml"
    users.write_text("".join(f'"{n}" = "{t}"\n' for n, t in TOKENS.items()), encoding="utf-8")
    users.chmod(0o600)
    store, _ = open_store(tmp_path / "class-data" / "alice" / "data" / "progress.sqlite3", course_id=course_id_of(FIXTURE))
    try:
        store.set_completed("01")
        store.mark_part_read("01", 0)
        store.mark_part_read("01", 1)
        store.record_answer("01", "q1", "1", True)
        store.record_answer("01", "q2", "2", False)
        store.record_answer("01", "q2", "3", True)  # the question's last answer counts
        store.record_answer("02", "q1", "1", False)
    finally:
        store.close()
    return users


def report(tmp_path, *args):
    r = tc("--content", str(FIXTURE), "class", "report", *args, home=tmp_path / "home")
    assert r.returncode == 0, r.stderr
    return r.stdout


class TestTheReportListsEveryLearnerOfTheUsersFile:
    def test_text_table_with_chapters_minutes_quiz_and_last_active(self, tmp_path):
        users = a_class(tmp_path)
        out = report(tmp_path, "--users", str(users))
        lines = out.splitlines()
        assert lines[0].split() == ["学员", "读完的章", "已读分钟", "测验答对", "测验已答", "各章测验", "最后活动"]
        alice = next(line for line in lines if line.startswith("alice"))
        cells = alice.split()
        assert cells[1] == "01" and int(cells[2]) > 0 and cells[3:5] == ["2", "3"]
        assert "01:2/2" in alice and "02:0/1" in alice and cells[-2].startswith("20")  # a date
        zhang = next(line for line in lines if line.startswith("张三"))
        assert zhang.split()[1:6] == ["-", "0", "0", "0", "-"]  # has not opened the course yet

    def test_csv_has_one_row_per_learner(self, tmp_path):
        users = a_class(tmp_path)
        rows = list(csv.DictReader(io.StringIO(report(tmp_path, "--users", str(users), "--csv"))))
        assert [r["learner"] for r in rows] == ["alice", "张三"]
        assert rows[0]["chapters_complete"] == "01" and rows[0]["quiz_correct"] == "2" and rows[0]["quiz_answered"] == "3"
        assert float(rows[0]["reading_minutes"]) > 0 and rows[0]["last_active"]
        assert rows[1]["quiz_answered"] == "0" and rows[1]["last_active"] == ""


class TestTheReportReadsAFolderOfExportedProgress:
    def test_each_export_file_is_a_learner(self, tmp_path):
        a_class(tmp_path)
        folder = tmp_path / "collected"
        folder.mkdir()
        r = tc("export", str(folder / "alice.json"), home=tmp_path / "class-data" / "alice",
               env={"TORCHCOURSE_CONTENT": str(FIXTURE)})
        assert r.returncode == 0, r.stderr
        (folder / "broken.json").write_text("{not json", encoding="utf-8")
        rows = list(csv.DictReader(io.StringIO(report(tmp_path, "--progress-dir", str(folder), "--csv"))))
        by = {r["learner"]: r for r in rows}
        assert by["alice"]["chapters_complete"] == "01" and by["alice"]["quiz_by_chapter"] == "01:2/2 02:0/1"
        assert "broken.json" in by["broken"]["problem"] and "Traceback" not in by["broken"]["problem"]


class TestTheReportSaysWhatItNeeds:
    def test_without_a_source_it_says_so(self, tmp_path):
        r = tc("--content", str(FIXTURE), "class", "report", home=tmp_path)
        assert r.returncode == 2 and "--users" in r.stderr and "--progress-dir" in r.stderr and "Traceback" not in r.stderr
