"""Resolve relative dates ("next May", 明年五月) against when they were said.

A memory outlives the moment it was said, so "next May" must be stored as
the month it meant. The resolved date is written into the memory text right
after the phrase ("next May (May 2027)") and into its metadata.
Month arithmetic comes from python-dateutil's ``relativedelta``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from dateutil.relativedelta import relativedelta

from memora.text.folding import has_han

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_NAMES = "|".join(_MONTHS)
_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
    "十一": 11,
    "十二": 12,
    "两": 2,
    "兩": 2,
}
_ZH_MONTH = r"(十[一二]?|[一二三四五六七八九]|1[0-2]|[1-9])\s*月(?:份)?"
_EN_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a": 1, "an": 1}


@dataclass(frozen=True)
class ResolvedDate:
    """A relative phrase and the absolute date it meant."""

    phrase: str
    value: str
    """ISO form: YYYY, YYYY-MM, YYYY-MM-DD, or YYYY-Www for a week."""


def _month_number(token: str) -> int:
    if token.isdigit():
        return int(token)
    return _ZH_DIGITS[token]


def _next_month_named(now: date, month: int) -> date:
    year = now.year if month > now.month else now.year + 1
    return date(year, month, 1)


def _fmt_month(day: date) -> str:
    return day.strftime("%Y-%m")


def _fmt_week(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], str]]

_RULES: list[_Rule] = [
    (
        re.compile(rf"\bnext\s+({_MONTH_NAMES})\b", re.I),
        lambda m, now: _fmt_month(_next_month_named(now, _MONTHS.index(m[1].lower()) + 1)),
    ),
    (
        re.compile(rf"\bthis\s+({_MONTH_NAMES})\b", re.I),
        lambda m, now: f"{now.year}-{_MONTHS.index(m[1].lower()) + 1:02d}",
    ),
    (
        re.compile(rf"\blast\s+({_MONTH_NAMES})\b", re.I),
        lambda m, now: (
            f"{now.year - 1 if _MONTHS.index(m[1].lower()) + 1 >= now.month else now.year}"
            f"-{_MONTHS.index(m[1].lower()) + 1:02d}"
        ),
    ),
    (re.compile(r"\bnext\s+year\b", re.I), lambda m, now: str(now.year + 1)),
    (re.compile(r"\blast\s+year\b", re.I), lambda m, now: str(now.year - 1)),
    (re.compile(r"\bthis\s+year\b", re.I), lambda m, now: str(now.year)),
    (
        re.compile(r"\bnext\s+month\b", re.I),
        lambda m, now: _fmt_month(now + relativedelta(months=1)),
    ),
    (
        re.compile(r"\blast\s+month\b", re.I),
        lambda m, now: _fmt_month(now - relativedelta(months=1)),
    ),
    (re.compile(r"\bnext\s+week\b", re.I), lambda m, now: _fmt_week(now + timedelta(days=7))),
    (re.compile(r"\blast\s+week\b", re.I), lambda m, now: _fmt_week(now - timedelta(days=7))),
    (re.compile(r"\btomorrow\b", re.I), lambda m, now: (now + timedelta(days=1)).isoformat()),
    (re.compile(r"\byesterday\b", re.I), lambda m, now: (now - timedelta(days=1)).isoformat()),
    (
        re.compile(
            r"\bin\s+(\d+|one|two|three|four|five|six|an?)\s+(day|week|month|year)s?\b", re.I
        ),
        lambda m, now: _in_span(m, now),
    ),
    (
        re.compile(rf"明年\s*{_ZH_MONTH}"),
        lambda m, now: f"{now.year + 1}-{_month_number(m[1]):02d}",
    ),
    (
        re.compile(rf"(?:今年)\s*{_ZH_MONTH}"),
        lambda m, now: f"{now.year}-{_month_number(m[1]):02d}",
    ),
    (
        re.compile(rf"去年\s*{_ZH_MONTH}"),
        lambda m, now: f"{now.year - 1}-{_month_number(m[1]):02d}",
    ),
    (re.compile(r"明年"), lambda m, now: str(now.year + 1)),
    (re.compile(r"[後后]年"), lambda m, now: str(now.year + 2)),
    (re.compile(r"去年"), lambda m, now: str(now.year - 1)),
    (re.compile(r"今年"), lambda m, now: str(now.year)),
    (re.compile(r"下[個个]?月"), lambda m, now: _fmt_month(now + relativedelta(months=1))),
    (re.compile(r"上[個个]?月"), lambda m, now: _fmt_month(now - relativedelta(months=1))),
    (re.compile(r"下(?:週|周|星期|禮拜|礼拜)"), lambda m, now: _fmt_week(now + timedelta(days=7))),
    (re.compile(r"上(?:週|周|星期|禮拜|礼拜)"), lambda m, now: _fmt_week(now - timedelta(days=7))),
    (re.compile(r"明天"), lambda m, now: (now + timedelta(days=1)).isoformat()),
    (re.compile(r"[後后]天"), lambda m, now: (now + timedelta(days=2)).isoformat()),
    (re.compile(r"昨天"), lambda m, now: (now - timedelta(days=1)).isoformat()),
]


def _in_span(match: re.Match[str], now: date) -> str:
    raw = match[1].lower()
    amount = int(raw) if raw.isdigit() else _EN_NUMBERS[raw]
    unit = match[2].lower()
    if unit == "day":
        return (now + timedelta(days=amount)).isoformat()
    if unit == "week":
        return _fmt_week(now + timedelta(weeks=amount))
    if unit == "month":
        return _fmt_month(now + relativedelta(months=amount))
    return str(now.year + amount)


def resolve_relative_dates(text: str, said_at: datetime) -> tuple[str, list[ResolvedDate]]:
    """Annotate relative date phrases in ``text`` with the dates they meant.

    Args:
        text: The memory text.
        said_at: When the user said it.

    Returns:
        The annotated text and the resolutions, in order of appearance.
    """
    now = said_at.date()
    taken: list[tuple[int, int, ResolvedDate]] = []
    for pattern, resolve in _RULES:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < other_end and other_start < end for other_start, other_end, _ in taken):
                continue
            taken.append((start, end, ResolvedDate(match[0], resolve(match, now))))
    taken.sort()
    pieces: list[str] = []
    cursor = 0
    for _start, end, resolved in taken:
        pieces.append(text[cursor:end])
        pieces.append(
            f"（{resolved.value}）" if has_han(resolved.phrase) else f" ({resolved.value})"
        )
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), [resolved for _, _, resolved in taken]
