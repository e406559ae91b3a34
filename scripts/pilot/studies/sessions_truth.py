"""XR-S1, ground truth (protocol/SESSIONS.md section 3): the rules that take a transcript's exact values, its
standing instructions and its failed or denied steps, how a state's value is judged kept, reformatted, changed or
dropped, and the secrets every report masks. Pure functions of text: no model, no file, no clock.

Every rule is written down in SESSIONS.md with the near misses it must not take; tests/test_sessions_truth.py holds
a positive and a near-miss sentence for each.
"""
from __future__ import annotations

import decimal
import re
from typing import Iterable


# --- Exact values ------------------------------------------------------------------------------------------------
# The kinds, in the order their rules run: a span one rule takes is never read again by a later one (the port of a
# URL is not a number, the date in a file name is part of the path).
VALUE_KINDS = ("url", "email", "path", "digest", "date", "time", "version", "amount", "identifier", "number")

URL = re.compile(r"\bhttps?://[^\s<>\"'`]+")

EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}(?![\w-])")

# File names without a folder are taken only with one of these extensions (so `e.g.` or `i.e.` never are).
FILE_EXTENSIONS = ("py", "js", "mjs", "ts", "tsx", "jsx", "json", "jsonl", "md", "txt", "yaml", "yml", "toml", "ini",
                   "cfg", "conf", "csv", "tsv", "sh", "bash", "go", "rs", "java", "kt", "c", "h", "cc", "cpp", "hpp",
                   "cs", "rb", "php", "html", "css", "scss", "sql", "log", "lock", "xml", "env", "ipynb", "pdf",
                   "png", "jpg", "svg", "zip", "gz", "tar", "parquet", "db", "sqlite", "proto", "tf", "vue", "swift")

PATH_CHARS = r"[\w.@+~-]"

PATH = re.compile(
    r"(?<![\w:/.~\\-])/(?:" + PATH_CHARS + r"+/)*" + PATH_CHARS + r"+/?"                  # /etc/hosts
    r"|(?<![\w/.])(?:~|\.{1,2})/(?:" + PATH_CHARS + r"+/?)+"                              # ./run.sh ~/notes
    r"|(?<![\w/.@-])[A-Za-z_][\w.@+-]*(?:/" + PATH_CHARS + r"+)+/?"                        # src/app/api.py
    r"|\b[A-Za-z]:\\(?:[\w .-]+\\)*[\w.-]+"                                                # C:\work\a.txt
    r"|(?<![\w/.@-])[\w][\w-]*(?:\.[\w-]+)*\.(?:" + "|".join(FILE_EXTENSIONS) + r")(?![\w/-])")   # api.py

HEX_DIGEST = re.compile(r"(?<![\w-])[0-9a-f]{7,}(?![\w-])")          # lower case: upper-case codes are identifiers

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
         r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")

DATE = re.compile(
    r"(?<![\w.-])(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w-])"
    r"|(?<![\w/.])(\d{1,2})[/.](\d{1,2})[/.](\d{4})(?![\w/.]?\d)"
    r"|\b(?:(\d{1,2})(?:st|nd|rd|th)?\s+)?(" + MONTH + r")\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?\b)?(?:,?\s+(\d{4}))?\b")

HALF_DAY = r"(?:[AaPp][Mm]|[AaPp]\.[Mm]\.)"

TIME = re.compile(r"(?<![\w:.])(?:([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?(?:\s?" + HALF_DAY + r"(?![\w]))?"
                  r"|(1[0-2]|0?[1-9])\s?" + HALF_DAY + r"(?![\w]))(?![\w:])")

IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]?\d)")

VERSION = re.compile(r"(?<![\w.])[vV]?\d+(?:\.\d+){2,}(?:[-+][0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?(?![\w.]?\w)"
                     r"|(?<![\w.])[vV]\d+\.\d+(?![\w.]?\d)"
                     r"|(?i:(?<=\bversion )|(?<=\brelease ))\d+\.\d+(?![\w.]?\d)")

CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}

CURRENCY_CODES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "INR", "CNY", "SEK", "NOK", "DKK", "PLN",
                  "BRL", "MXN", "ZAR", "SGD", "HKD")

CURRENCY_WORDS = {"dollars": "USD", "euros": "EUR", "pounds": "GBP"}

AMOUNT_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"

AMOUNT = re.compile(
    r"(?<![\w$€£¥₹])-?[$€£¥₹]\s?(?:" + AMOUNT_NUMBER + r")(?:\s?(?:k|m|bn|million|billion|thousand)\b)?(?![\w.]?\d)"
    r"|\b(?:" + "|".join(CURRENCY_CODES) + r")\s?-?(?:" + AMOUNT_NUMBER + r")(?![\w.]?\d)"
    r"|(?<![\w.,])-?(?:" + AMOUNT_NUMBER + r")\s?(?:" + "|".join(CURRENCY_CODES) + "|" +
    "|".join(CURRENCY_WORDS) + r")\b")

IDENTIFIER = re.compile(r"(?<![\w.@/-])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*(?![\w@/-]|\.\w)")

NUMBER = re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:%|[A-Za-z]+)?(?![\w])")

ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.IGNORECASE)

QUANTITY = re.compile(r"-?\d+(?:\.\d+)?[A-Za-z%]{1,3}")     # 5GB, 20ms, 64bit: a number with its unit

TRAILING = ".,;:!?'\")]}>"


def _trim(text: str, start: int, end: int) -> int:
    """The end of a URL or path with the sentence's punctuation after it left off (a `)` it opened is kept)."""
    while end > start and text[end - 1] in TRAILING:
        if text[end - 1] == ")" and text[start:end].count("(") >= text[start:end].count(")"):
            break
        end -= 1
    return end


def _valid_date(match: re.Match, text: str) -> bool:
    g = match.groups()
    if g[0] is not None:                              # ISO
        return 1 <= int(g[1]) <= 12 and 1 <= int(g[2]) <= 31
    if g[6] is not None:                              # 12/03/2025: day and month in either order
        a, b = int(g[6]), int(g[7])
        return 1 <= a <= 31 and 1 <= b <= 31 and min(a, b) <= 12
    day = g[9] or g[11]
    return (day is not None and 1 <= int(day) <= 31) or g[12] is not None   # a month needs a day or a year


def _valid_time(match: re.Match, text: str) -> bool:
    return ":" in text or bool(re.search(r"[AaPp]\.?[Mm]", text))


def _valid_ipv4(match: re.Match, text: str) -> bool:
    return all(int(part) <= 255 for part in text.split("."))


def _valid_digest(match: re.Match, text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c in "abcdef" for c in text)


def _valid_identifier(match: re.Match, text: str) -> bool:
    return (len(text) >= 3 and any(c.isalpha() for c in text) and any(c.isdigit() for c in text)
            and not ORDINAL.fullmatch(text) and not QUANTITY.fullmatch(text))


def _valid_number(match: re.Match, text: str) -> bool:
    unit = re.search(r"[A-Za-z]+$", text)
    if unit and (len(unit.group(0)) > 3 or ORDINAL.fullmatch(text)):
        return False
    return sum(c.isdigit() for c in text) >= 2


def _valid_path(match: re.Match, written: str) -> bool:
    text = written.rstrip("/")
    if text.startswith(("/", "~/", "./", "../")) or re.match(r"[A-Za-z]:\\", text):
        return text.count("/") >= 2 or "." in text.rsplit("/", 1)[-1] or text.startswith(("~/", "./", "../"))
    if "/" in text:
        return written.endswith("/") or bool(re.search(r"\.[A-Za-z][A-Za-z0-9]{0,7}$", text))
    return True


# (kind, pattern, validity check, whether trailing punctuation is trimmed)
RULES = (
    ("url", URL, None, True),
    ("email", EMAIL, None, False),
    ("path", PATH, _valid_path, True),
    ("digest", HEX_DIGEST, _valid_digest, False),
    ("date", DATE, _valid_date, False),
    ("time", TIME, _valid_time, False),
    ("identifier", IPV4, _valid_ipv4, False),         # a network address is an identifier, not a version
    ("version", VERSION, None, False),
    ("amount", AMOUNT, None, False),
    ("identifier", IDENTIFIER, _valid_identifier, False),
    ("number", NUMBER, _valid_number, False),
)


def extract_values(text: str) -> list[tuple[str, str, int, int]]:
    """Every exact value in text as (kind, value, start, end), in the order they appear; each character belongs to
    at most one value, given to the first rule (RULES order) that takes it."""
    taken: list[tuple[int, int]] = []
    found = []
    for kind, pattern, valid, trim in RULES:
        for match in pattern.finditer(text):
            start, end = match.start(), match.end()
            if trim:
                end = _trim(text, start, end)
            if end <= start or any(s < end and start < e for s, e in taken):
                continue
            if valid is not None and not valid(match, text[start:end]):
                continue
            taken.append((start, end))
            found.append((kind, text[start:end], start, end))
    return sorted(found, key=lambda item: item[2])


def sentence_around(text: str, start: int, end: int, width: int = 240) -> str:
    """The sentence (or line) a span is in, cut to about `width` characters around it."""
    left = max(text.rfind("\n", 0, start), *(text.rfind(p, 0, start) for p in (". ", "! ", "? ")))
    left = 0 if left < 0 else left + (1 if text[left] == "\n" else 2)
    stops = [i for i in (text.find("\n", end), *(text.find(p, end) for p in (". ", "! ", "? "))) if i >= 0]
    right = min(stops) + 1 if stops else len(text)
    if right - left > width:
        left = max(left, start - width // 2)
        right = min(right, max(end, left + width))
    return " ".join(text[left:right].split())


# --- Comparing a state's values with the transcript's ------------------------------------------------------------
def _decimal(text: str) -> decimal.Decimal | None:
    try:
        return decimal.Decimal(text.replace(",", "").replace("_", ""))
    except decimal.InvalidOperation:
        return None


def _plain(number: decimal.Decimal) -> str:
    text = format(number, "f")
    return (text.rstrip("0").rstrip(".") if "." in text else text) or "0"


MULTIPLIERS = {"k": 1000, "thousand": 1000, "m": 10 ** 6, "million": 10 ** 6, "bn": 10 ** 9, "billion": 10 ** 9}


def amount_parts(value: str) -> tuple[str, decimal.Decimal | None]:
    """(currency code, amount) of an amount as written."""
    code = next((c for s, c in CURRENCY_SYMBOLS.items() if s in value), None)
    code = code or next((c for c in CURRENCY_CODES if c in value), None)
    code = code or next((c for w, c in CURRENCY_WORDS.items() if w in value.lower()), "?")
    number = re.search(r"\d[\d,]*(?:\.\d+)?", value)
    amount = _decimal(number.group(0)) if number else None
    scale = re.search(r"(k|m|bn|million|billion|thousand)\b", value[number.end():] if number else "")
    if amount is not None and scale:
        amount *= MULTIPLIERS[scale.group(1)]
    if amount is not None and "-" in value.split(number.group(0))[0]:
        amount = -amount
    return code, amount


def normalize_value(kind: str, value: str) -> str:
    """A value's form for comparison: the same value written another way normalizes alike (1,250 and 1250, $48
    and USD 48.00, v2.3.1 and 2.3.1, an ISO date and 12 March 2025 are not: see the date rule)."""
    text = value.strip()
    if kind == "number":
        unit = re.search(r"(%|[A-Za-z]+)$", text)
        number = _decimal(text[:unit.start()] if unit else text)
        return (_plain(number) if number is not None else text) + (unit.group(0).lower() if unit else "")
    if kind == "amount":
        code, amount = amount_parts(text)
        return f"{code} {_plain(amount) if amount is not None else text}"
    if kind == "date":
        return normalize_date(text)
    if kind == "time":
        match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s?(?:([AaPp])\.?[Mm]\.?)?", text)
        if not match:
            return text.lower()
        hour, half = int(match.group(1)), match.group(4)
        if half:
            hour = hour % 12 + (12 if half.lower() == "p" else 0)
        return f"{hour:02d}:{match.group(2) or '00'}" + (f":{match.group(3)}" if match.group(3) else "")
    if kind == "version":
        return text.lstrip("vV").lower()
    if kind in ("digest", "email"):
        return text.lower()
    if kind == "identifier":
        return re.sub(r"[-_]", "", text).upper()
    if kind == "path":
        text = text.replace("\\", "/")
        return (text[2:] if text.startswith("./") else text).rstrip("/")
    if kind == "url":
        scheme, _, rest = text.partition("://")
        host, slash, path = rest.partition("/")
        return f"{scheme.lower()}://{host.lower()}{slash}{path}".rstrip("/")
    return text


def normalize_date(text: str) -> str:
    """A date as YYYY-MM-DD (and THH:MM[:SS]); a month-name date without a year as ----MM-DD; a numeric date whose day
    and month could be either way round keeps both numbers in the order written, marked with ~."""
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?.*)?", text)
    if iso:
        year, month, day, hour, minute, second = iso.groups()
        return f"{year}-{month}-{day}" + (f"T{hour}:{minute}" + (f":{second}" if second else "") if hour else "")
    numeric = re.fullmatch(r"(\d{1,2})[/.](\d{1,2})[/.](\d{4})", text)
    if numeric:
        a, b, year = int(numeric.group(1)), int(numeric.group(2)), numeric.group(3)
        if a > 12 or b > 12:
            day, month = (a, b) if a > 12 else (b, a)
            return f"{year}-{month:02d}-{day:02d}"
        return f"{year}-{a:02d}-{b:02d}~"
    named = re.fullmatch(r"(?:(\d{1,2})(?:st|nd|rd|th)?\s+)?([A-Z][a-z]+)\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?)?"
                         r"(?:,?\s+(\d{4}))?", text)
    if named and named.group(2)[:3] in MONTHS:
        day, year = named.group(1) or named.group(3), named.group(4)
        return f"{year or '----'}-{MONTHS.index(named.group(2)[:3]) + 1:02d}" + (f"-{int(day):02d}" if day else "")
    return text


def edit_distance(a: str, b: str, limit: int = 3) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count one) between a and b, capped at limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous, current = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, current = previous, current, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
    return min(current[-1], limit + 1)


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _rounded(source: decimal.Decimal, state: decimal.Decimal) -> bool:
    """The state's number is the source's rounded to fewer significant digits (1,247 -> 1,250 or 1,200)."""
    if source == state or not source or abs(state - source) > abs(source) * decimal.Decimal("0.05"):
        return False
    for places in range(-6, 13):
        try:
            if source.quantize(decimal.Decimal(1).scaleb(places), rounding=decimal.ROUND_HALF_UP) == state:
                return True
        except decimal.InvalidOperation:         # more digits than the context holds at this place
            continue
    return False


def is_close(kind: str, source: str, state: str) -> bool:
    """Whether a state's value (of the same kind, absent from the transcript) reads as this transcript value with a
    small change: a digit altered, added, dropped or swapped, a number rounded, a digest or version cut short, a
    path moved to another folder, an amount's currency changed. Normalized forms are compared."""
    if kind == "digest":
        return (min(len(source), len(state)) >= 7 and (source.startswith(state) or state.startswith(source))) or \
            (len(source) == len(state) and sum(a != b for a, b in zip(source, state)) <= 2)
    if kind in ("number", "amount"):
        (code_a, a), (code_b, b) = (amount_parts(v) if kind == "amount" else ("", _decimal(re.sub(r"[^\d.,-]", "", v)))
                                    for v in (source, state))
        if a is None or b is None:
            return False
        if code_a != code_b:
            return a == b
        digits = _digits(source)
        return len(digits) >= (2 if kind == "amount" else 3) and (edit_distance(digits, _digits(state), 1) <= 1 or _rounded(a, b))
    if kind == "version":
        old, new = source.split("."), state.split(".")
        return (len(old) == len(new) and sum(x != y for x, y in zip(old, new)) == 1) or \
            (min(len(old), len(new)) >= 2 and (old[:len(new)] == new or new[:len(old)] == old))
    if kind == "path":
        return (source.rsplit("/", 1)[-1] == state.rsplit("/", 1)[-1] and "/" in source + state) or \
            edit_distance(source, state, 2) <= 2
    if kind in ("date", "time"):
        return len(source) == len(state) and edit_distance(source, state, 2) <= 2
    if kind == "identifier":
        return len(source) >= 4 and edit_distance(source, state, 1) <= 1
    return edit_distance(source, state, 2) <= 2           # url, email


def occurs_verbatim(value: str, text: str) -> bool:
    """Whether value is written in text exactly, as a whole: not as part of a longer word, number or path (12 is
    not in 1,250, 3.12 or 12.5; /etc/hosts is not in /var/etc/hosts or /etc/hosts/old)."""
    if not value:
        return False
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        before, after, after2 = text[start - 1:start], text[end:end + 1], text[end + 1:end + 2]
        joined_before = bool(before) and (
            ((before.isalnum() or before == "_") and (value[0].isalnum() or value[0] == "/")) or
            (value[0].isdigit() and before in ".,"))
        joined_after = bool(after) and (
            (value[-1].isalnum() and (after.isalnum() or after == "_")) or
            (value[-1].isdigit() and after in ".," and after2.isdigit()) or (after == "/" and "/" in value))
        if not joined_before and not joined_after:
            return True
        start = text.find(value, start + 1)
    return False


VALUE_CLASSES = ("kept", "reformatted", "changed", "dropped")


def classify_values(source_values: list[dict], state: str, source_norms: dict) -> list[tuple[str, str | None]]:
    """For each transcript value ({kind, text}) its class in a state and what the state wrote instead: kept
    verbatim; reformatted (the same value in another form); changed (the closest value of its kind in the state that
    the transcript never gives, where is_close holds); or dropped. source_norms: kind -> every normalized value the
    transcript gives of that kind."""
    found = extract_values(state or "")
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for kind, text, _, _ in found:
        by_kind.setdefault(kind, []).append((text, normalize_value(kind, text)))
    out = []
    for value in source_values:
        kind, text = value["kind"], value["text"]
        if occurs_verbatim(text, state or ""):
            out.append(("kept", None))
            continue
        norm = normalize_value(kind, text)
        same = next((t for t, n in by_kind.get(kind, []) if n == norm), None)
        if same is not None:
            out.append(("reformatted", same))
            continue
        novel = [(t, n) for t, n in by_kind.get(kind, []) if n not in source_norms.get(kind, ())]
        close = [(edit_distance(norm, n, 8), i, t) for i, (t, n) in enumerate(novel) if is_close(kind, norm, n)]
        out.append(("changed", min(close)[2]) if close else ("dropped", None))
    return out


# --- Standing instructions ---------------------------------------------------------------------------------------
# A user's sentence gives a standing instruction when it has a scope marker (how long the order holds) and is an
# order: it opens with the marker, or with a verb rather than a subject, or it tells "you" or "we" what to do.
# A question never is one, and neither is a statement about what happened ("I never saw it", "CI always fails").
SCOPE_MARKERS = re.compile(r"\b(from now on|from here on|going forward|for the rest of|for the remainder of|"
                           r"until further notice|until i|always|never|every time|whenever|at all times)\b",
                           re.IGNORECASE)

FILLERS = ("and", "also", "but", "so", "ok", "okay", "oh", "then", "one", "more", "thing", "please", "just")

SUBJECTS = frozenset("""i it this that these those the a an they he she there my our your his her their its some all
each every nobody everyone someone something people which what who when where if because while since although though
as how why nothing no yes""".split())

ADDRESSED = re.compile(r"\b(?:you|we)\b(?:[\s,]+\w+){0,3}?[\s,]+(?:should|must|need to|have to|are to|will|shall|"
                       r"always|never)\b|\b(?:i want you to|i need you to|i'd like you to|please)\b|"
                       r"\b(?:you|we)(?:'ll| will)\b", re.IGNORECASE)

SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")

STOPWORDS = frozenset("""a an the and or but if then so to of in on at by for with from into onto about as is are was
were be been being do does did done don't not no yes this that these those it its it's i me my we our you your they
them their he she his her there here what which who whom when where why how all any each every some such only own
same than too very can could will would should must may might shall just also please now ever always never until
rest remainder further notice going forward time times whenever sure make remember keep use let before after again
more most other another one two first last next new ok okay thing things way really want need like i'd i'm you're
we're that's let's get got have has had otherwise say tell anything something everything nothing whole
without within via per too""".split())


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_SPLIT.split(text or "") if s.strip()]


def is_standing_instruction(sentence: str) -> bool:
    """Whether a user's sentence gives a standing instruction (see the rule above)."""
    text = sentence.strip()
    if not text or text.endswith("?") or not SCOPE_MARKERS.search(text):
        return False
    words = re.findall(r"[A-Za-z']+", text)
    while words and words[0].lower() in FILLERS:
        words = words[1:]
    if not words:
        return False
    opening = " ".join(words[:4]).lower()
    if SCOPE_MARKERS.match(opening) or opening.startswith(("do not", "don't", "make sure", "be sure")):
        return True
    first = words[0]
    verb_first = (first.lower() not in SUBJECTS and not (first.isupper() and len(first) > 1) and
                  not re.search(r"(?:ed|[^s]s)$", first.lower()))
    return verb_first or bool(ADDRESSED.search(text))


def key_terms(instruction: str, limit: int = 2) -> list[str]:
    """The terms the retention rule looks for: the instruction's exact values, then its longest content words (not
    a stopword, not an -ly adverb), each cut to a stem of at most six letters so that `committing` finds `commit`."""
    found = extract_values(instruction)
    words_text = re.sub(r"\buntil i \w+|" + SCOPE_MARKERS.pattern[2:-2], " ", instruction, flags=re.IGNORECASE)
    found = [f for f in found if f[1] in words_text]
    found = [(k, v, words_text.find(v), words_text.find(v) + len(v)) for k, v, _, _ in found]
    for _, _, start, end in found:
        words_text = words_text[:start] + " " * (end - start) + words_text[end:]
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]+", words_text)]
    content = [w for w in dict.fromkeys(words) if w not in STOPWORDS and len(w) >= 3 and not w.endswith("ly")]
    ranked = sorted(content, key=lambda w: (-len(w), content.index(w)))
    stems = [re.sub(r"(?:ing|ed|er|es|s)$", "", w)[:6] if len(w) > 4 else w for w in ranked]
    return list(dict.fromkeys([v for _, v, _, _ in found] + stems))[:limit] or [instruction.strip()[:40]]


# --- Failed and denied steps -------------------------------------------------------------------------------------
DENIED = re.compile(r"\bpermission denied\b|\baccess denied\b|\b(?:was |been |is )?(?:denied|declined|rejected|"
                    r"forbidden|not permitted|not allowed|unauthori[sz]ed)\b|doesn't want to proceed|"
                    r"\b403\b", re.IGNORECASE)

FAILED = re.compile(r"^\s*(?:error|fatal|exception|failed|failure)\b\s*[:!\[]|Traceback \(most recent call last\)|"
                    r"\b[1-9]\d* (?:failed|errors?)\b|(?-i:\bFAILED\b)|\bexit(?:ed)?(?: with)?(?: code| status)?[ :=]+[1-9]\d*\b|"
                    r"command not found|No such file or directory|\btimed out\b|\bnon-zero exit\b|\bunavailable\b|"
                    r"\berror\s*(?:code\s*)?[:=]?\s*[1-9]\d*\b|"
                    r"\b(?:could not|couldn't|cannot|can't|unable to) \w+", re.IGNORECASE | re.MULTILINE)


def step_outcome(result_text: str, is_error: bool = False) -> str:
    """A tool result's outcome: denied (refused for want of permission or approval), failed (an error the log marks,
    or one the text reports), or ok."""
    if DENIED.search(result_text or ""):
        return "denied"
    if is_error or FAILED.search(result_text or ""):
        return "failed"
    return "ok"


# --- Secrets -----------------------------------------------------------------------------------------------------
# Matched by pattern and shown masked in every report, CSV and printed line (raw/ keeps what was sent). A known
# prefix (sk-, ghp_, AKIA) is kept, since it says what kind of key it was and is no secret itself.
SECRET_PATTERNS = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"),
    re.compile(r"\b(sk-(?:ant-|proj-)?)[A-Za-z0-9_-]{16,}"),
    re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"),
    re.compile(r"\b(github_pat_)[A-Za-z0-9_]{20,}"),
    re.compile(r"\b(xox[abposr]-)[A-Za-z0-9-]{10,}"),
    re.compile(r"\b(AKIA)[0-9A-Z]{16}\b"),
    re.compile(r"\b(AIza)[0-9A-Za-z_-]{30,}"),
    re.compile(r"\b(glpat-)[A-Za-z0-9_-]{20,}"),
    re.compile(r"\b(hf_)[A-Za-z0-9]{20,}"),
    re.compile(r"\b(eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{12,}"),
    re.compile(r"(?i)(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),
    re.compile(r"(?i)(?:\b|_)(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|access[_-]?key|"
               r"private[_-]?key|client[_-]?secret|auth)\b[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"',;]{4,})"),
)

MASK = "[masked]"


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kept prefix) of every secret in text."""
    spans = []
    for pattern in SECRET_PATTERNS:
        for match in pattern.finditer(text or ""):
            if "value" in pattern.groupindex:
                spans.append((match.start("value"), match.end("value"), ""))
            else:
                prefix = match.group(1) if pattern.groups and match.group(1) else ""
                spans.append((match.start(), match.end(), prefix))
    return spans


SECRET_LIKE = re.compile(r"[\w+/=.~-]{4,}")


def mask_secrets(text: str, known: Iterable[str] = ()) -> str:
    """text with every secret a pattern finds, every known secret value, and every word within two edits of a known
    secret of six characters or more (a key with a digit altered is still the key) replaced by its prefix and
    [masked]."""
    if not text:
        return text
    spans = secret_spans(text)
    known = [secret for secret in known if len(secret) >= 4]
    for secret in known:
        spans += [(m.start(), m.end(), "") for m in re.finditer(re.escape(secret), text)]
    near = [secret for secret in known if len(secret) >= 6]
    if near:
        spans += [(m.start(), m.end(), "") for m in SECRET_LIKE.finditer(text)
                  if any(edit_distance(m.group(0), secret, 2) <= 2 for secret in near)]
    out, position = [], 0
    for start, end, prefix in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start < position:
            continue
        out += [text[position:start], prefix + MASK]
        position = end
    return "".join(out) + text[position:]


def is_secret(start: int, end: int, spans: list[tuple[int, int, str]]) -> bool:
    """Whether a value at [start, end) lies inside a secret's span."""
    return any(s <= start and end <= e or (s < end and start < e) for s, e, _ in spans)
