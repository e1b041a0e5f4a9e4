"""Grading of every question kind, and parsing what a learner types."""

from torchcourse.quiz.bank import Question
import pytest

from torchcourse.quiz.grading import correct_answer_text, grade, normalize, parse_choices


def q(kind, **kw):
    kw.setdefault("prompt", "题目")
    kw.setdefault("explain", "解释")
    return Question(id="q", kind=kind, **kw)


def test_single_right_and_wrong():
    single = q("single", choices=["a", "b", "c"], answer=2)
    assert grade(single, 2).correct
    assert grade(single, 2).answer == "2"
    assert not grade(single, 0).correct
    # typed text is 1-based, as shown on screen
    assert grade(single, "3").correct
    assert not grade(single, "2").correct
    assert not grade(single, "9").correct  # out of range: wrong, not a crash


def test_multi_needs_the_exact_set():
    multi = q("multi", choices=["a", "b", "c", "d"], answer=[0, 2])
    assert grade(multi, [2, 0]).correct
    assert grade(multi, [0, 2]).answer == "0,2"
    assert not grade(multi, [0]).correct  # a subset is wrong
    assert not grade(multi, [0, 1, 2]).correct  # a superset is wrong
    assert grade(multi, "1 3").correct
    assert grade(multi, "1,3").correct
    assert grade(multi, "3，1").correct  # full-width comma
    assert grade(multi, "13").correct  # digits run together, fewer than 10 choices
    assert grade(multi, "a c").correct


def test_fill_normalization():
    fill = q("fill", accept=["storage_offset", "storage_offset()"])
    for typed in ["storage_offset", " Storage_Offset ", "`storage_offset`", '"storage_offset"', "“storage_offset”",
                  "ｓｔｏｒａｇｅ＿ｏｆｆｓｅｔ", "storage_offset（）", "storage_offset ( )", "'storage_offset()'"]:
        assert grade(fill, typed).correct, typed
    assert not grade(fill, "storage").correct
    assert not grade(fill, "").correct
    assert grade(fill, "  x.y ").answer == "x.y"


def test_trailing_parens_only_when_listed():
    fill = q("fill", accept=["stride"])
    assert grade(fill, "stride").correct
    assert not grade(fill, "stride()").correct


def test_normalize_examples():
    assert normalize("Ｘ．ＶＩＥＷ（６）") == "x.view(6)"
    assert normalize("`retain_graph=True`") == "retain_graph=true"
    assert normalize("视图，副本。") == "视图,副本."


def test_predict_graded_like_single_or_fill():
    by_choice = q("predict", snippet="s", choices=["1", "2"], answer=1)
    assert grade(by_choice, 1).correct and not grade(by_choice, 0).correct
    assert grade(by_choice, "2").correct
    by_text = q("predict", snippet="s", accept=["tensor([1, 2])"])
    assert grade(by_text, "tensor([1,2])").correct
    assert not grade(by_text, "tensor([2, 1])").correct


def test_open_is_self_graded():
    open_q = q("open", reference="参考")
    assert grade(open_q, True).correct and grade(open_q, True).answer == "self:right"
    assert not grade(open_q, False).correct and grade(open_q, False).answer == "self:wrong"


def test_parse_choices_rejects_bad_input():
    assert parse_choices("2", 3, multiple=False) == [1]
    assert parse_choices("1 2", 3, multiple=False) is None
    assert parse_choices("", 3, multiple=True) is None
    assert parse_choices("1 1", 3, multiple=True) is None
    assert parse_choices("0", 3, multiple=False) is None
    assert parse_choices("x?", 3, multiple=False) is None


def test_correct_answer_text():
    assert correct_answer_text(q("multi", choices=["a", "b", "c"], answer=[0, 2])) == "1) a；3) c"
    assert correct_answer_text(q("fill", accept=["upper", "upper()"])) == "upper"


@pytest.mark.parametrize("typed, n, picks", [
    ("13", 4, [0, 2]),  # digits run together: 1 and 3 when there are fewer than 10 choices
    ("31", 4, [2, 0]),
    ("3", 4, [2]),
    ("ac", 4, [0, 2]),  # letters run together too
    ("13", 14, [12]),  # with 10 or more choices '13' is choice 13
])
def test_multi_picks_typed_without_separators(typed, n, picks):
    got = parse_choices(typed, n, multiple=True)
    assert (sorted(got) if got else got) == (sorted(picks) if picks else picks)
