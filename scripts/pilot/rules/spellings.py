"""How two spellings of one exact value compare (protocol/SESSIONS.md section 3.1), and when a value
reads as another one changed: the normal form of each kind of value (1,250 and 1250, $48 and USD
48.00 alike), the number an amount or a number stands for, whether a state's value is a transcript
value with a small change (is_close), and the values of a state that are its source's, changed
(changed_values). The values themselves are found by values.py. Pure functions of text: no model,
no file, no clock. """
from __future__ import annotations

import decimal
import functools
import re

from .values import (CURRENCY_CODES, CURRENCY_SYMBOLS, CURRENCY_WORDS, Value, edit_distance,
                     extract_values)


def _decimal(text: str) -> decimal.Decimal | None:
    try:
        return decimal.Decimal(text.replace(",", "").replace("_", ""))
    except decimal.InvalidOperation:
        return None


def _plain(number: decimal.Decimal) -> str:
    text = format(number, "f")
    return (text.rstrip("0").rstrip(".") if "." in text else text) or "0"


MULTIPLIERS = {"k": 1000, "thousand": 1000, "m": 10 ** 6, "million": 10 ** 6, "bn": 10 ** 9,
               "billion": 10 ** 9}


@functools.lru_cache(maxsize=65536)
def amount_parts(value: str) -> tuple[str, decimal.Decimal | None]:
    """(currency code, amount) of an amount as written."""
    code = next((c for s, c in CURRENCY_SYMBOLS.items() if s in value), None)
    code = code or next((c for c in CURRENCY_CODES if c in value), None)
    code = code or next((c for w, c in CURRENCY_WORDS.items() if w in value.lower()), "?")
    number = re.search(r"\d[\d,]*(?:\.\d+)?", value)
    amount = _decimal(number.group(0)) if number else None
    scale = re.search(r"(k|m|bn|million|billion|thousand)\b",
                      value[number.end():] if number else "")
    if amount is not None and scale:
        amount *= MULTIPLIERS[scale.group(1)]
    if amount is not None and "-" in value.split(number.group(0))[0]:
        amount = -amount
    return code, amount


UNIT_FORMS = {"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "min": "min",
              "mins": "min",
              "minute": "min", "minutes": "min", "h": "h", "hr": "h", "hrs": "h", "hour": "h",
              "hours": "h", "d": "d",
              "day": "d", "days": "d", "byte": "b", "bytes": "b", "week": "week", "weeks": "week"}


NUMBER_AND_UNIT = re.compile(r"(-?[\d,]*\d(?:\.\d+)?)\s?(%|[A-Za-z]+)?")


@functools.lru_cache(maxsize=65536)
def number_parts(value: str) -> tuple[decimal.Decimal | None, str]:
    """(number, unit in a normal form) of a number as written: `30s` and `30 seconds` alike."""
    match = NUMBER_AND_UNIT.fullmatch(value.strip())
    if not match:
        return None, value.strip().lower()
    unit = (match.group(2) or "").lower()
    return _decimal(match.group(1)), UNIT_FORMS.get(unit, unit)


# A number's scale word and a duration's unit, each as a factor: `2.5k` is 2500 and `1.5 minutes`
# is 90 seconds, one value written another way (`m` is left alone: minutes, metres or millions).
NUMBER_SCALES = {"k": 1000, "thousand": 1000, "million": 10 ** 6, "bn": 10 ** 9,
                 "billion": 10 ** 9}

DURATION_SECONDS = {"ms": decimal.Decimal("0.001"), "s": 1, "min": 60, "h": 3600, "d": 86400,
                    "week": 604800}


@functools.lru_cache(maxsize=65536)
def scaled_number(value: str) -> tuple[decimal.Decimal | None, str]:
    """(number, unit) of a number as written, its scale word applied and a duration in seconds:
    `2.5k` and `2,500` alike, `1.5 minutes` and `90 seconds` alike."""
    number, unit = number_parts(value)
    if number is None:
        return number, unit
    if unit in NUMBER_SCALES:
        return number * NUMBER_SCALES[unit], ""
    if unit in DURATION_SECONDS:
        return number * DURATION_SECONDS[unit], "s"
    return number, unit


@functools.lru_cache(maxsize=65536)
def normalize_value(kind: str, value: str) -> str:
    """A value's form for comparison: the same value written another way normalizes alike (1,250 and
    1250, $48 and USD 48.00, v2.3.1 and 2.3.1, an ISO date and 12 March 2025 are not: see the date
    rule)."""
    text = value.strip()
    if kind == "number":
        number, unit = scaled_number(text)
        return (_plain(number) if number is not None else text) + unit
    if kind == "amount":
        code, amount = amount_parts(text)
        return f"{code} {_plain(amount) if amount is not None else text}"
    if kind == "date":
        return normalize_date(text)
    if kind == "time":
        match = re.fullmatch(r"(\d{1,2})(?:[:.](\d{2}))?(?::(\d{2}))?\s?(?:([AaPp])\.?[Mm]\.?)?",
                             text)
        if not match:
            return text.lower()
        hour, half = int(match.group(1)), match.group(4)
        if half:
            hour = hour % 12 + (12 if half.lower() == "p" else 0)
        return f"{hour:02d}:{match.group(2) or '00'}" + (f":{match.group(3)}" if match.group(3)
                                                         else "")
    if kind == "version":
        return text.lstrip("vV").lower()
    if kind in ("digest", "email"):
        return text.lower()
    if kind == "identifier":
        return re.sub(r"[-_ ]", "", text).upper()
    if kind == "path":
        text = text.replace("\\", "/")
        return (text[2:] if text.startswith("./") else text).rstrip("/")
    if kind == "url":
        scheme, _, rest = text.partition("://")
        host, slash, path = rest.partition("/")
        return f"{scheme.lower()}://{host.lower()}{slash}{path}".rstrip("/")
    return text


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@functools.lru_cache(maxsize=65536)
def normalize_date(text: str) -> str:
    """A date as YYYY-MM-DD (and THH:MM[:SS]); a month-name date without a year as ----MM-DD; a
    numeric date whose day and month could be either way round keeps both numbers in the order
    written, marked with ~."""
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?.*)?", text)
    if iso:
        year, month, day, hour, minute, second = iso.groups()
        return f"{year}-{month}-{day}" + (f"T{hour}:{minute}"
                                          + (f":{second}" if second else "") if hour else "")
    numeric = re.fullmatch(r"(\d{1,2})[/.](\d{1,2})[/.](\d{4})", text)
    if numeric:
        a, b, year = int(numeric.group(1)), int(numeric.group(2)), numeric.group(3)
        if a > 12 or b > 12:
            day, month = (a, b) if a > 12 else (b, a)
            return f"{year}-{month:02d}-{day:02d}"
        return f"{year}-{a:02d}-{b:02d}~"
    named = re.fullmatch(
        r"(?:(\d{1,2})(?:st|nd|rd|th)?\s+)?([A-Z][a-z]+)\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?)?"
        r"(?:,?\s+(\d{4}))?",
        text,
    )
    if named and named.group(2)[:3] in MONTHS:
        day, year = named.group(1) or named.group(3), named.group(4)
        return f"{year or '----'}-{MONTHS.index(named.group(2)[:3]) + 1:02d}" + (f"-{int(day):02d}"
            if day else "")
    return " ".join(text.split())


@functools.lru_cache(maxsize=65536)
def numeric_key(kind: str, value: str) -> decimal.Decimal | None:
    """The number an amount or a number stands for (its currency and unit aside), for telling one
    fact written as `$1,249.00` and `1249.0` apart from two; None for other kinds, numbers with a
    unit and numbers of fewer than three digits (without a decimal part)."""
    if kind == "amount":
        return amount_parts(value)[1]
    if kind == "number":
        number, unit = scaled_number(value)
        if number is None or unit or not (len(_digits(value)) >= 3 or "." in value):
            return None
        return number
    return None


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _rounded(source: decimal.Decimal, state: decimal.Decimal) -> bool:
    """The state's number is the source's rounded to fewer significant digits (1,247 -> 1,250 or
    1,200)."""
    if source == state or not source or abs(state - source) > abs(source) * decimal.Decimal("0.05"):
        return False
    for places in range(-6, 13):
        try:
            if source.quantize(decimal.Decimal(1).scaleb(places),
                               rounding=decimal.ROUND_HALF_UP) == state:
                return True
        except decimal.InvalidOperation:         # more digits than the context holds at this place
            continue
    return False


def is_close(kind: str, source: str, state: str) -> bool:
    """Whether a state's value (of the same kind, absent from the transcript) reads as this
    transcript value with a small change: a digit altered, added, dropped or swapped, a number
    rounded, a digest or version cut short, a path moved to another folder, an amount's currency
    changed. Normalized forms are compared."""
    if kind == "digest":
        return (min(len(source), len(state)) >= 7 and (source.startswith(state)
                                                       or state.startswith(source))) or \
            (len(source) == len(state) and sum(a != b for a, b in zip(source, state)) <= 2)
    if kind in ("number", "amount"):
        (code_a, a), (code_b, b) = (amount_parts(v) if kind == "amount" else (number_parts(v)[1],
            number_parts(v)[0])
                                    for v in (source, state))
        if a is None or b is None:
            return False
        if code_a != code_b:
            return a == b and kind == "amount"
        digits = _digits(source)
        return len(digits) >= (2 if kind == "amount" else 3) and (edit_distance(digits,
            _digits(state), 1) <= 1 or
                                                                   _rounded(a, b))
    if kind == "version":
        old, new = source.split("."), state.split(".")
        return (len(old) == len(new) and sum(x != y for x, y in zip(old, new)) == 1) or \
            (min(len(old), len(new)) >= 2 and (old[:len(new)] == new or new[:len(old)] == old))
    if kind == "path":
        return (
            source.rsplit("/", 1)[-1] == state.rsplit("/", 1)[-1] and "/" in source + state
        ) or edit_distance(source, state, 2) <= 2
    if kind in ("date", "time"):
        return len(source) == len(state) and edit_distance(source, state, 2) <= 2
    if kind == "identifier":
        return len(source) >= 4 and edit_distance(source, state, 1) <= 1
    return edit_distance(source, state, 2) <= 2           # url, email


def written_alone(text: str, within: str) -> bool:
    """Whether text stands in `within` as written, with no letter, digit or underscore touching it
    on either side (`125` is not written in `1250`)."""
    at = within.find(text)
    while at >= 0:
        end = at + len(text)
        if not (at and (within[at - 1].isalnum() or within[at - 1] == "_")) and \
                not (end < len(within) and (within[end].isalnum() or within[end] == "_")):
            return True
        at = within.find(text, at + 1)
    return False


def changed_values(state: str, source: str | list[str],
                   written_in: str | None = None) -> list[tuple[Value, str]]:
    """Each value of a state that its source never gives and that reads as one the source does give,
    changed (is_close), with that source value: `48,123 rows` where the source said 48213. Values of
    the kinds that name numbers are compared as numbers, so `48,213` is no change of `48213`.
    The source is one text or several, each read for its values apart; written_in: a longer text
    whose values are not read, in which a state's value written as is counts as given too."""
    given: dict[str, dict[str, str]] = {}
    numbers: set = set()
    for value in (v for text in ([source] if isinstance(source, str) else source)
                  for v in extract_values(text)):
        given.setdefault(value.kind, {}).setdefault(normalize_value(value.kind, value.text),
                                                    value.text)
        key = numeric_key(value.kind, value.text)
        if key is not None:
            numbers.add(key)
    out = []
    for value in extract_values(state):
        norm = normalize_value(value.kind, value.text)
        if norm in given.get(value.kind, {}) or numeric_key(value.kind, value.text) in numbers \
                or written_in is not None and written_alone(value.text, written_in):
            continue
        near = [(edit_distance(norm, other, 8), text) for other,
                text in given.get(value.kind, {}).items()
                if abs(len(other) - len(norm)) <= 3 and is_close(value.kind, other, norm)]
        if near:
            out.append((value, min(near)[1]))
    return out
