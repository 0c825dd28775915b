from datetime import UTC, datetime

import pytest

from memora.text.dates import resolve_relative_dates

NOV_2026 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
MAR_2026 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "said", "expected_value", "expected_text"),
    [
        ("I will take IELTS next May", NOV_2026, "2027-05", "I will take IELTS next May (2027-05)"),
        ("I will take IELTS next May", MAR_2026, "2026-05", None),
        ("我預計明年五月參加 IELTS", NOV_2026, "2027-05", "我預計明年五月（2027-05）參加 IELTS"),
        ("我预计明年5月参加考试", NOV_2026, "2027-05", None),
        ("We move next year", NOV_2026, "2027", None),
        ("下個月開始上課", NOV_2026, "2026-12", None),
        ("my exam is tomorrow", NOV_2026, "2026-11-21", None),
        ("the course starts in 3 weeks", NOV_2026, "2026-W50", None),
    ],
)
def test_relative_dates_are_resolved_against_when_said(
    text: str, said: datetime, expected_value: str, expected_text: str | None
) -> None:
    annotated, resolved = resolve_relative_dates(text, said)
    assert [r.value for r in resolved] == [expected_value]
    if expected_text is not None:
        assert annotated == expected_text


def test_text_without_relative_dates_is_unchanged() -> None:
    text = "I live in Kaohsiung"
    assert resolve_relative_dates(text, NOV_2026) == (text, [])
