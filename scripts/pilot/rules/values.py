"""Exact values in text (protocol/SESSIONS.md section 3.1): the lexical rules that find each whole
value (its kind, its text and where it stands), the tokens that look like values and are not (stack
positions, process ids, names with digits, keys and tokens), the sentence around a value, and the
masking of keys and tokens. How two spellings of one value compare, and when a value reads as
another one changed, is spellings.py. Pure functions of text: no model, no file, no clock. The
sessions study takes its ground truth with them, and the release gate checks a state's values
against its source with them.

Every rule is linear in the text: each pattern runs once over it, and a character already taken by
an earlier rule is looked up in a mask, not in a list of spans. Each rule is one record of
VALUE_RULES (a secret's, of SECRET_RULES): its pattern as the rule reads, and what lets it run
fast, from which the rules as they run (FAST_RULES) are derived: behind guards, over the texts that
can hold a match and from the positions where one can start, finding the same matches faster
(tests/test_truth_regression.py checks that they do).
"""
from __future__ import annotations

import bisect
import functools
import re
from typing import Callable, Iterable, NamedTuple

from .states import SENTENCE_END


class Value(NamedTuple):
    kind: str
    text: str
    start: int
    end: int


# The kinds, in the order their rules run: a span one rule takes is never read again by a later one
# (the port of a
# URL is not a number, the date in a file name is part of the path).
VALUE_KINDS = ("url", "email", "path", "digest", "date", "time", "version", "amount", "identifier",
               "number")

# --- Keys and tokens: never values, and masked in every report ---------------------------------
# A known prefix (sk-, ghp_, AKIA) is kept when masked, since it says what kind of key it was and is
# no secret itself.
class SecretRule(NamedTuple):
    """A secret's pattern, and the strings of which every match holds one (in the text as written,
    or, with lower, in the lower-cased text, where the pattern ignores case): the pattern runs only
    over a text that holds one of them, which most texts do not."""
    pattern: re.Pattern
    needs: tuple[str, ...] | None     # None: runs over every text
    lower: bool = False         # looked for in the lower-cased text (with CASE_FOLDS: outside
                                # ASCII a letter such as the dotless i matches `i`)


def _any_of(needs: tuple[str, ...] | re.Pattern | None) -> re.Pattern | None:
    """What a text must hold as one pattern (one call, where a loop over the strings costs more on
    short texts)."""
    if needs is None or isinstance(needs, re.Pattern):
        return needs
    return re.compile("|".join(re.escape(need) for need in needs))


# A URL that carries a password is one value, shown masked.
URL_CREDENTIALS = re.compile(r"(?i)(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")

SECRET_RULES = (
    SecretRule(re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?"
                          r"(?:-----END [A-Z ]*PRIVATE KEY-----|$)"), ("-----BEGIN ",)),
    SecretRule(re.compile(r"\b(sk-(?:ant-|proj-)?)[A-Za-z0-9_-]{16,}"), ("sk-",)),
    SecretRule(re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"),
               ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    SecretRule(re.compile(r"\b(github_pat_)[A-Za-z0-9_]{20,}"), ("github_pat_",)),
    SecretRule(re.compile(r"\b(xox[abposr]-)[A-Za-z0-9-]{10,}"), ("xox",)),
    SecretRule(re.compile(r"\b((?:sk|rk)_(?:live|test)_)[A-Za-z0-9]{16,}"),
               ("sk_live_", "sk_test_", "rk_live_", "rk_test_")),
    SecretRule(re.compile(r"\b((?:AKIA|ASIA))[0-9A-Z]{16}\b"), ("AKIA", "ASIA")),
    # an AWS secret access key: 40 characters of base64 with a capital, a small letter and a digit,
    # standing alone (a hex digest has no capital; a path is longer or holds a dot)
    SecretRule(re.compile(r"(?<![A-Za-z0-9/+=._-])(?=[A-Za-z0-9/+]{0,39}[A-Z])"
                          r"(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])"
                          r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=._-])"), None),
    SecretRule(re.compile(r"\b(AIza)[0-9A-Za-z_-]{30,}"), ("AIza",)),
    SecretRule(re.compile(r"\b(glpat-)[A-Za-z0-9_-]{20,}"), ("glpat-",)),
    SecretRule(re.compile(r"\b(hf_)[A-Za-z0-9]{20,}"), ("hf_",)),
    SecretRule(re.compile(r"\b(eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
               ("eyJ",)),
    SecretRule(re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{12,}"), ("bearer ",), lower=True),
    SecretRule(URL_CREDENTIALS, ("://",)),
    SecretRule(re.compile(r"(?i)(?:\b|_)(?:password|passwd|pwd|passphrase|secret|token|"
                          r"api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|auth)\b"
                          r"[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"',;]{4,})"),
               ("pass", "pwd", "secret", "token", "api", "access", "private", "client", "auth"),
               lower=True),
)

SECRET_PATTERNS = tuple(rule.pattern for rule in SECRET_RULES)

SECRET_HINTS = tuple((rule.pattern, _any_of(rule.needs), rule.lower) for rule in SECRET_RULES)

MASK = "[masked]"


# The letters outside ASCII that a pattern ignoring case reads as an ASCII letter, each as the
# letter it reads as, where lower() does not make them that letter alone (it makes the Kelvin sign
# `k`, but the dotted capital I an `i` and a combining dot): a text is looked at in lower case with
# these made ASCII first, so that no hint is missed (tests/test_truth_regression.py finds every
# such letter)
CASE_FOLDS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))


def folded(text: str) -> str:
    """text in lower case, each letter of CASE_FOLDS made the ASCII letter it reads as."""
    for letter, ascii_letter in CASE_FOLDS:
        if letter in text:
            text = text.replace(letter, ascii_letter)
    return text.lower()


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kept prefix) of every secret in text."""
    spans = []
    text = text or ""
    lower = text.lower() if text.isascii() else folded(text)
    for pattern, hint, in_lower in SECRET_HINTS:
        seen = (lower if in_lower else text)
        if hint is not None and not hint.search(seen):
            continue
        for match in pattern.finditer(text):
            if "value" in pattern.groupindex:
                spans.append((match.start("value"), match.end("value"), ""))
            else:
                prefix = match.group(1) if pattern.groups and match.group(1) else ""
                spans.append((match.start(), match.end(), prefix))
    return spans


def is_secret(start: int, end: int, spans: list[tuple[int, int, str]]) -> bool:
    """Whether a value at [start, end) overlaps a secret's span."""
    return any(s < end and start < e for s, e, _ in spans)


# --- The patterns
# ------------------------------------------------------------------------------------------------
URL = re.compile(
    r"\b(?:https?|s3|gs|ftp|sftp|ssh|git|wss?|postgres(?:ql)?|mysql|redis|mongodb|"
    r"amqp)://[^\s<>\"'`]+"
)

EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}(?![\w-])"
)

# An npm package with its version, or a container image with its tag: one value, not a name and a
# version.
PACKAGE = re.compile(
    r"(?<![\w@/.-])@?[a-z0-9][\w.-]*/[\w.-]+@[\^~]?\d[\w.+-]*(?<![.-])"
    r"|(?<![\w@/.-])[a-z0-9][\w-]*(?:\.[\w-]+)*(?:/[\w.-]+)*:(?=[\w.-]*\d)[\w][\w.-]*(?<![.-])"
    r"(?![\w:/])"
)

FILE_EXTENSIONS = ("py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "json", "jsonl", "md", "txt",
                   "yaml", "yml", "toml",
                   "ini", "cfg", "conf", "csv", "tsv", "sh", "bash", "go", "rs", "java", "kt", "c",
                   "h", "cc", "cpp",
                   "hpp", "cs", "rb", "php", "html", "css", "scss", "sql", "log", "lock", "xml",
                   "env", "ipynb", "pdf",
                   "png", "jpg", "svg", "zip", "gz", "tar", "parquet", "db", "sqlite", "proto",
                   "tf", "vue", "swift",
                   "blend", "example", "bak", "tgz", "whl", "dump")

PATH_CHARS = r"[\w.@+~*-]"

PATH = re.compile(
    # /etc/hosts
    r"(?<![\w:/.~\\-])/(?:" + PATH_CHARS + r"+/)*" + PATH_CHARS + r"+/?"
    # ./run.sh ~/notes
    r"|(?<![\w/.])(?:~|\.{1,2})/(?:" + PATH_CHARS + r"+/?)+"
    # src/app/api.py
    r"|(?<![\w/.@-])[A-Za-z_.][\w.@+-]*(?:/" + PATH_CHARS + r"+)+/?"
    # C:\work\a.txt
    r"|\b[A-Za-z]:\\(?:[\w .-]+\\)*[\w.-]+"
    # api.py
    r"|(?<![\w/.@-])\.?[\w][\w-]*(?:\.[\w-]+)*\.(?:" + "|".join(FILE_EXTENSIONS) + r")(?![\w/-])")

# A host name: labels joined by dots, one of them with a digit or a hyphen, ending in a known suffix
# or a letters-only
# top label (db-stage-04.internal, registry.acme.io); its pieces are not values.
HOST = re.compile(
    r"(?<![\w.@/-])(?=[\w.-]*[\d-])[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
    r"(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
    r"\.(?:internal|local|lan|corp|io|com|net|org|dev|cloud|app|example|test)(?![\w.-]*\w)"
)

# A repository or branch name with a slash (acme/ledger-api, release/2.8, fix/tz-offsets), not
# `and/or` or `km/h`.
SLUG = re.compile(
    r"(?<![\w./@:-])(?=[\w.-]*/[\w.-]*[\d_-])[A-Za-z][\w.-]*(?:/[\w.-]+)+(?<![.-])(?![\w/@:-])"
)

# lower case: upper-case codes are identifiers
HEX_DIGEST = re.compile(r"(?<![\w-])[0-9a-f]{7,}(?![\w-])")

MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)

WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"

# A date with its time, as a log line or a commit writes it: one value (Tue Mar 11 16:42:07 2025
# +0100).
DATETIME = re.compile(
    r"\b" + WEEKDAY + r",?\s+(?:" + MONTH + r"\s+\d{1,2}|\d{1,2}\s+" + MONTH + r")\s+"
    r"(?:\d{1,2}:\d{2}(?::\d{2})?\s+\d{4}|\d{4}\s+\d{1,2}:\d{2}(?::\d{2})?)(?:\s+(?:[+-]\d{4}|"
    r"[A-Z]{3,4}))?"
    r"(?![\w:])"
)

DATE = re.compile(
    r"(?<![\w.-])(\d{4})-(\d{2})-(\d{2})(?:[T "
    r"](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w-])"
    r"|(?<![\w/.])(\d{1,2})[/.](\d{1,2})[/.](\d{4})(?![\w/.]?\d)"
    r"|\b(?:(\d{1,2})(?:st|nd|rd|th)?\s+)?(" + MONTH
    + r")\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?\b)?(?:,?\s+(\d{4}))?\b"
    # renews on the 14th
    r"|(?<=\bthe )(\d{1,2})(?:st|nd|rd|th)\b")

HALF_DAY = r"(?:[AaPp][Mm]|[AaPp]\.[Mm]\.)"

TIME = re.compile(r"(?<![\w:.])(?:([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?(?:\s?" + HALF_DAY
                  + r"(?![\w]))?"
                  r"|(1[0-2]|0?[1-9])\s?" + HALF_DAY + r"(?![\w]))(?![\w:])")

IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]?\d)")

PHONE = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]\d{2,6}){2,4}(?![\w.-]?\d)")

ADDRESS = re.compile(
    r"\b\d{1,5}[a-z]? (?:Rue|Avenue|Ave|Street|St|Road|Rd|Lane|Ln|Boulevard|Blvd|Way|Place|Pl|"
    r"Drive|Dr|Strasse|Straße|Weg|Platz|Via|Calle|Carrer)\b[\w .'-]{0,40}?, \d{4,6} [A-Z][\w-]+(?: "
    r"[A-Z][\w-]+)?"
)

IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")

VERSION = re.compile(
    r"(?<![\w.])[vV]?\d+(?:\.\d+){2,}(?:[-+][0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?(?![\w.]?\w)"
    r"|(?<![\w.])[vV]\d+\.\d+(?![\w.]?\d)|(?i:(?<=\bversion )|(?<=\brelease )|(?<=\bversion: "
    r")|(?<=\bmacos )|(?<=\bpostgres )|(?<=\bpython )|(?<=\bnode )|(?<=\bios )|(?<=\bandroid "
    r"))\d+\.\d+(?![\w.]?\d)|(?<![\w.])rc\.\d+(?![\w.])"
)

CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}

CURRENCY_CODES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "INR", "CNY", "SEK",
                  "NOK", "DKK", "PLN",
                  "BRL", "MXN", "ZAR", "SGD", "HKD")

CURRENCY_WORDS = {"dollars": "USD", "euros": "EUR", "pounds": "GBP"}

AMOUNT_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"

AMOUNT = re.compile(
    r"(?<![\w$€£¥₹])-?[$€£¥₹]\s?(?:" + AMOUNT_NUMBER
    + r")(?:\s?(?:k|m|bn|million|billion|thousand)\b)?(?![\w.]?\d)"
    r"|\b(?:" + "|".join(CURRENCY_CODES) + r")\s?-?(?:" + AMOUNT_NUMBER + r")(?![\w.]?\d)"
    r"|(?<![\w.,])-?(?:" + AMOUNT_NUMBER + r")\s?(?:" + "|".join(CURRENCY_CODES) + "|" +
    "|".join(CURRENCY_WORDS) + r")\b")

# An issue or pull request number (#1873), and ids of digit groups (7731-0042).
NUMBERED = re.compile(r"(?<![\w&#])#\d+\b|(?<![\w.-])\d{2,}(?:-\d{2,})+(?![\w.-]?\d)")

IDENTIFIER = re.compile(r"(?<![\w.@/-])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*(?![\w@/-]|\.\w)")

UNITS = ("ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h",
         "hr", "hrs", "hour",
         "hours", "day", "days", "d", "week", "weeks", "month", "months", "year", "years", "b",
         "kb", "mb", "gb", "tb",
         "kib", "mib", "gib", "tib", "byte", "bytes", "kg", "g", "km", "m", "cm", "mm", "px", "pt",
         "em", "rem",
         "k", "x", "rps", "qps", "rpm", "ghz", "mhz", "hz", "v", "w", "kw", "l", "ml", "c", "f")

UNIT = r"(?:" + "|".join(sorted(UNITS, key=len, reverse=True)) + r")"

NUMBER = re.compile(r"(?<![\w.,$€£¥₹#-])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:%|\s?" + UNIT
                    + r"(?![\w'])|s(?=\b))?"
                    r"(?![\w.,]?\d|[\w])", re.IGNORECASE)

ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.IGNORECASE)

# Tokens that look like values and never are: a file's line and column after its name
# (Table.tsx:88:21), a
# traceback's `line 212`, process ids and memory addresses, HTTP's version, a list's `1)`, a ratio
# such as `0/1`,
# a regular expression's `{3}`, labels such as `7-digit`, an elapsed time a tool prints (`in
# 12.84s`, `(3.2s)`,
# `Up 3 hours`), a cron line, and the counts and dates of `ls -l` and `git diff --stat` lines.
# (skip: the part
# that is not a value where the rest of the match only says where it stands.)
NOT_VALUES = re.compile(
    r"\.(?:" + "|".join(FILE_EXTENSIONS) + r")(?P<skip>(?::\d+){1,2})\b"
    r"|(?<=\")(?:, line \d+)"
    r"|\b0x[0-9a-fA-F]+\b|\[\d+:0x[0-9a-fA-F]+\].*|\((?:node|pid|PID):\d+\)|\bpid[ =:]\d+"
    r"|\bHTTP/\d(?:\.\d)?\b|\b0\.0\.0\.0\b"
    r"|^\s*\d{1,2}\)(?=\s)"
    r"|(?<![\w/.])\d+/\d+(?![\w/.])"
    r"|\{\d+(?:,\d*)?\}"
    r"|\b\d+-(?:digit|bit|byte|char(?:acter)?|line|point|step|star|core|way|page|word|letter)s?\b"
    r"|\b(?:in|took|after) "
    r"\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds?|m|min)(?=\s*(?:=|$|\)))|\(\d+(?:\.\d+)?\s?m?s\)|\bready "
    r"in \d+(?:\.\d+)?\s?m?s\b|\bUp \d+ \w+|\(\d+ rows?\)|(?<![\w*/,-])(?:[\d*/,-]+ "
    r"){4}[\d*/,-]*\*[\d*/,-]*|(?<![\w*/,-])(?:[\d*/,-]+ ){4}[\d*/,-]+(?= "
    r"*`)|^[-dlcbps][rwxsStT-]{9}[.@+]?\s+(?P<links>\d+)"
    r"|(?<=\d )(?:" + MONTH + r")\s+\d{1,2}\s+(?:\d{1,2}:\d{2}|\d{4})(?= \S+$)"
    r"|^\s*\d+ files? changed(?:, \d+ insertions?\(\+\))?(?:, \d+ deletions?\(-\))?"
    r"|^(?:date|content-length|age|server): (?! ).*$"
    r"|^\s+at .*?\((?P<frame>[^()\n]*(?:node_modules|site-packages|dist-packages)[^()\n]*)\)",
    re.MULTILINE | re.IGNORECASE)

TRAILING = ".,;:!?'\")]}>"


def _trim(text: str, start: int, end: int) -> int:
    """The end of a URL or path with the sentence's punctuation after it left off (a `)` it opened
    is kept)."""
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
    if g[13] is not None:                             # the 14th
        return 1 <= int(g[13]) <= 31
    day = g[9] or g[11]
    # a month needs a day or a year
    return (day is not None and 1 <= int(day) <= 31) or g[12] is not None


def _valid_time(match: re.Match, text: str) -> bool:
    return ":" in text or bool(re.search(r"[AaPp]\.?[Mm]", text))


def _valid_ipv4(match: re.Match, text: str) -> bool:
    return all(int(part) <= 255 for part in text.split(".")) and text != "0.0.0.0"


def _valid_digest(match: re.Match, text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c in "abcdef" for c in text)


# python3, sha256, OAuth2, S3, p95, 2FA, 3D
NAME_WITH_DIGITS = re.compile(r"[A-Za-z]+\d{1,3}|\d[A-Za-z]{1,3}")


# p50_ms, retry_count2: a field's name
FIELD_NAME = re.compile(r"[a-z]+\d{0,3}(?:_[a-z]+\d{0,3})+")


HAS_DIGIT = re.compile(r"\d").search

INSTANCE_TYPE, QUANTITY = re.compile(r"[a-z]\d+\.[a-z]+"), re.compile(r"\d+(?:\.\d+)?[A-Za-z]{1,5}")


def _valid_identifier(match: re.Match, text: str) -> bool:
    # (most words: the cheapest of the conditions below that they fail)
    if not HAS_DIGIT(text):
        return False
    if "." in text and not INSTANCE_TYPE.fullmatch(text):          # m5.xlarge, not a.b.c
        return False
    if FIELD_NAME.fullmatch(text):
        return False
    return (len(text) >= 3 and any(c.isalpha() for c in text) and any(c.isdigit() for c in text)
            and not ORDINAL.fullmatch(text) and not NAME_WITH_DIGITS.fullmatch(text)
            and not QUANTITY.fullmatch(text))          # 5GB, 20ms: a quantity


# A single digit is a value only where the text says what it counts or sets: after `=`, `to`, `of`,
# `from`, `at`
# or `by`, or before a noun that is not a tool's incidental tally (2 boxes, pool of 8,
# MAX_RETRIES=5; not `1 skipped`,
# `(1 - rate)`, `1 in 8`).
DIGIT_BEFORE = re.compile(
    r"(?:=|\b(?:to|of|from|at|by|is|are|was|were|set|limit|max|maximum|only|all|first|last|"
    r"every|within|than))\s*$",
    re.IGNORECASE,
)

DIGIT_AFTER = re.compile(
    r"\s+(?!(?:in|and|or|to|of|the|a|an|is|are|was|were|skipped|rows?|files?|changed|"
    r"insertions?|deletions?|warnings?|errors?|passed|ignored|measured|filtered|x|times?)\b)"
    r"(?:[a-z][a-z-]{2,}|[a-z]\d[\w.]*)",
    re.IGNORECASE,
)


def _valid_number(match: re.Match, text: str) -> bool:
    if ORDINAL.fullmatch(text):
        return False
    if len(text) > 2 or not text[-1:].isdigit() or text[:-1] not in ("", "-"):
        return True
    whole = match.string
    before = whole[max(0, match.start() - 12):match.start()]
    return bool(DIGIT_BEFORE.search(before) or DIGIT_AFTER.match(whole, match.end()) or
                re.match(r" of (?:the )?\d", whole[match.end():match.end() + 10]))


def _valid_path(match: re.Match, written: str) -> bool:
    text = written.rstrip("/")
    if text.startswith(("/", "~/", "./", "../")) or re.match(r"[A-Za-z]:\\", text):
        return text.count("/") >= 2 or "." in text.rsplit("/",
                                                          1)[-1] or text.startswith(("~/", "./",
            "../"))
    if "/" in text:
        return written.endswith("/") or bool(re.search(r"\.[A-Za-z][A-Za-z0-9]{0,7}$", text))
    return True


def _valid_package(match: re.Match, text: str) -> bool:
    name, _, tag = text.rpartition(":")
    return "@" in text or ("/" in name or "." in tag or "-" in tag) and not re.fullmatch(r"\d+",
        name)


# An identifier needs a digit and a letter (_valid_identifier): one without is not matched at all,
# rather than matched and refused (a word's other positions are never a match's start, so the
# matches found are the same, with no word of prose and no bare number among them). The looks stand
# after the look behind, so that they read each word once.
DIGITED_IDENTIFIER = re.compile(IDENTIFIER.pattern.replace(
    "(?<![\\w.@/-])", "(?<![\\w.@/-])(?=[A-Za-z0-9_.-]*\\d)(?=[0-9_.-]*[A-Za-z])", 1))

CURRENCY_INITIALS = "".join(sorted({code[0] for code in CURRENCY_CODES}))

HOST_ENDS = tuple("." + end for end in ("internal", "local", "lan", "corp", "io", "com", "net",
                                         "org", "dev", "cloud", "app", "example", "test"))


class ValueRule(NamedTuple):
    """A value rule, written once: its kind, its pattern as the rule reads, the check a match must
    pass and whether the sentence's punctuation after it is trimmed; then what lets it run fast
    while finding the same matches (tests/test_truth_regression.py checks that it does):
    - anywhere, word_start: the characters a match can start with (one of `word_start` only with
      no word character before it);
    - needs: the strings of which a text holds one wherever the pattern can match (or a quick
      pattern every match holds; None: no such thing);
    - digit: a text without a digit holds no match (each match holds one, or the check refuses
      one without);
    - sparse: its matches start at so few of a text's positions that a finder looks for them;
    - runs_as: the pattern it runs as, where that is not the one written."""
    kind: str
    pattern: re.Pattern
    valid: Callable[[re.Match, str], bool] | None = None
    trim: bool = False
    anywhere: str = ""
    word_start: str = ""
    needs: tuple[str, ...] | re.Pattern | None = None
    digit: bool = False
    sparse: bool = False
    runs_as: re.Pattern | None = None


# The rules in the order they run (VALUE_KINDS says why the order matters).
VALUE_RULES = (
    ValueRule("url", URL, trim=True, word_start="hsgfwpmra", needs=("://",)),
    ValueRule("email", EMAIL, word_start="A-Za-z0-9", needs=("@",)),
    ValueRule("identifier", PACKAGE, _valid_package, anywhere="@", word_start="a-z0-9",
              needs=re.compile(r"@|:[\w.-]*\d"), digit=True),
    ValueRule("path", PATH, _valid_path, trim=True, anywhere="/~.", word_start=r"\w",
              needs=re.compile(r"[/\\]|\.(?:" + "|".join(FILE_EXTENSIONS) + r")(?![\w/-])")),
    ValueRule("identifier", HOST, word_start="a-z0-9", needs=HOST_ENDS),
    ValueRule("identifier", SLUG, word_start="A-Za-z", needs=("/",)),
    ValueRule("digest", HEX_DIGEST, _valid_digest, word_start="0-9a-f", digit=True, sparse=True),
    ValueRule("date", DATETIME, word_start="MTWFS",
              needs=("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"), digit=True, sparse=True),
    ValueRule("date", DATE, _valid_date, word_start=r"\dJFMASOND",
              needs=re.compile(r"\d{4}-\d\d-\d|\d[/.]\d\d?[/.]\d|the \d|\b" + MONTH + r"(?!\w)"),
              digit=True, sparse=True),
    ValueRule("time", TIME, _valid_time, word_start=r"\d",
              needs=re.compile(r"\d:\d|\d\s?[AaPp]\.?[Mm]"), digit=True, sparse=True),
    # (a network address is an identifier, not a version)
    ValueRule("identifier", IPV4, _valid_ipv4, word_start=r"\d", needs=re.compile(r"\d\.\d"),
              digit=True, sparse=True),
    ValueRule("identifier", PHONE, anywhere="+", needs=("+",), digit=True, sparse=True),
    ValueRule("identifier", ADDRESS, word_start=r"\d", needs=(", ",), digit=True, sparse=True),
    ValueRule("identifier", IBAN, word_start="A-Z", digit=True, sparse=True),
    ValueRule("version", VERSION, word_start=r"vVr\d", needs=re.compile(r"\d\.\d|rc\."),
              digit=True, sparse=True),
    ValueRule("amount", AMOUNT, anywhere=r"\-$€£¥₹", word_start=r"\d" + CURRENCY_INITIALS,
              needs=(*CURRENCY_SYMBOLS, *CURRENCY_CODES, *CURRENCY_WORDS), digit=True, sparse=True),
    ValueRule("identifier", NUMBERED, anywhere="#", word_start=r"\d",
              needs=re.compile(r"#\d|\d-\d"), digit=True, sparse=True),
    ValueRule("identifier", IDENTIFIER, _valid_identifier, word_start="A-Za-z0-9", digit=True,
              runs_as=DIGITED_IDENTIFIER),
    ValueRule("number", NUMBER, _valid_number, anywhere=r"\-", word_start=r"\d", digit=True,
              sparse=True),
)


# --- The rules as they run: derived from VALUE_RULES -------------------------------------------
def _guard(anywhere: str, word_start: str) -> str:
    """The guard a rule's pattern runs behind: a character of `anywhere`, or one of `word_start` at
    a word's start (where the pattern looks behind for no word character before one)."""
    return "|".join(([f"(?=[{anywhere}])"] if anywhere else []) +
                    ([rf"\b(?=[{word_start}])"] if word_start else []))


def _guarded(guard: str, pattern: re.Pattern) -> re.Pattern:
    """pattern behind a guard that every position a match of it can start at passes, so that the
    other positions are passed over at once: the same matches, found several times faster."""
    return re.compile(f"(?:{guard})(?:{pattern.pattern})", pattern.flags)


def _finder(anywhere: str, word_start: str) -> re.Pattern:
    """A pattern that finds, one by one, the positions where a match of a rule can start: a
    character of `anywhere`, or one of `word_start` with no word character before it. It opens
    with the characters it consumes, so that `re` skips to them in C; a rule whose matches start at
    few of a text's positions is then tried only there."""
    checks = ([f"(?<=[{anywhere}])"] if anywhere else []) + ([r"(?<!\w.)"] if word_start else [])
    return re.compile(f"[{anywhere}{word_start}](?:{'|'.join(checks)})")


FINDER_CHARS = 200              # a shorter text is scanned whole: the finder would cost more than
                                # it saves


def matches(pattern: re.Pattern, finder: re.Pattern | None, text: str):
    """pattern.finditer(text), trying the pattern only where finder finds a position a match can
    start at: the same matches in the same order (no rule matches an empty span), since finditer
    tries each position in turn and goes on after each match's end."""
    if finder is None:
        yield from pattern.finditer(text)
        return
    end = 0
    for candidate in finder.finditer(text):
        start = candidate.start()
        if start < end:
            continue
        match = pattern.match(text, start)
        if match:
            end = match.end()
            yield match


# Each rule as written, (kind, pattern, check, trim), and as it runs: (kind, its pattern behind its
# guard, its finder or None, what a text must hold or None, whether a text needs a digit, check,
# trim).
RULES = tuple((rule.kind, rule.pattern, rule.valid, rule.trim) for rule in VALUE_RULES)

FAST_RULES = tuple((rule.kind, _guarded(_guard(rule.anywhere, rule.word_start),
                                        rule.runs_as or rule.pattern),
                    _finder(rule.anywhere, rule.word_start) if rule.sparse else None,
                    _any_of(rule.needs), rule.digit, rule.valid, rule.trim)
                   for rule in VALUE_RULES)

FAST_NOT_VALUES = _guarded(r"^|(?=[.,\[({*/\-\d])|\b(?=[phitarujfmsond])", NOT_VALUES)


# texts up to this long keep their values (a state's sentences, a call's
CACHED_CHARS = 1024
                                        # arguments, a step's match terms, a source's lines are read
                                        # again and again)


def extract_values(text: str) -> list[Value]:
    """Every exact value in text as Value(kind, text, start, end), in the order they appear; each
    character belongs to at most one value, given to the first rule (RULES order) that takes it.
    Keys and tokens, stack positions, process ids and the like are never values (a URL that carries
    a password is one, masked where it is shown)."""
    text = text or ""
    if len(text) <= CACHED_CHARS:
        return list(_values_cached(text))
    return list(_long_values_cached(text) if len(text) <= LONG_CACHED_CHARS else _values(text))


@functools.lru_cache(maxsize=32768)                     # (at most 32 MB of texts)
def _values_cached(text: str) -> tuple[Value, ...]:
    return _values(text)


# longer texts keep their values too, fewer of them (a turn and a call's arguments are read by the
# ground truth, the needed items and the gate alike)
LONG_CACHED_CHARS = 200_000


@functools.lru_cache(maxsize=512)                       # (at most 100 MB of texts)
def _long_values_cached(text: str) -> tuple[Value, ...]:
    return _values(text)


def _values(text: str) -> tuple[Value, ...]:
    # 1 where a character is already part of a value or a non-value
    taken = bytearray(len(text))

    def take(start: int, end: int) -> None:
        taken[start:end] = b"\x01" * (end - start)

    # (a URL's password
    in_urls = {m.span() for m in URL_CREDENTIALS.finditer(text)} if "://" in text else set()
    # stays
    # inside
    # it)
    for start, end, _ in secret_spans(text):
        if (start, end) not in in_urls:
            take(start, end)
    for match in FAST_NOT_VALUES.finditer(text):
        group = next((g for g in ("skip", "links", "frame") if match.group(g)), 0)
        take(*match.span(group))
    found = []
    digits = HAS_DIGIT(text) is not None
    long = len(text) > FINDER_CHARS
    for kind, pattern, finder, needs, need_digit, valid, trim in FAST_RULES:
        if need_digit and not digits or needs is not None and not needs.search(text):
            continue
        for match in matches(pattern, finder if long else None, text):
            start, end = match.span()
            if trim:
                end = _trim(text, start, end)
            if end <= start or taken.find(1, start, end) >= 0:
                continue
            written = text[start:end]
            if valid is not None and not valid(match, written):
                continue
            taken[start:end] = b"\x01" * (end - start)
            found.append(Value(kind, written, start, end))
    found.sort(key=lambda value: value.start)
    return tuple(found)


# --- Sentences
# --------------------------------------------------------------------------------------------------
class Sentences:
    """Where each sentence (or line) of a text starts and ends (states.SENTENCE_END), found once,
    so that the sentence around any span is a lookup (sentence_around for each of many values of a
    long text stays linear)."""

    def __init__(self, text: str):
        self.text = text
        self.ends = [m.end() for m in SENTENCE_END.finditer(text)]

    def bounds(self, start: int, end: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.ends, start)
        left = self.ends[i - 1] if i else 0
        j = bisect.bisect_left(self.ends, end)
        right = self.ends[j] if j < len(self.ends) else len(self.text)
        return left, right

    def around(self, start: int, end: int, width: int = 240) -> str:
        """The sentence (or line) a span is in, cut to about `width` characters around it."""
        left, right = self.bounds(start, end)
        if right - left > width:
            left = max(left, start - width // 2)
            right = min(right, max(end, left + width))
        return " ".join(self.text[left:right].split())


def sentence_around(text: str, start: int, end: int, width: int = 240) -> str:
    return Sentences(text).around(start, end, width)


# --- Masking
# --------------------------------------------------------------------------------------------------
# (also the measure of a small change that spellings.is_close reads)
def edit_distance(a: str, b: str, limit: int = 3) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count one) between a and b, capped at limit +
    1."""
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


SECRET_LIKE = re.compile(r"[\w+/=.~-]{4,}")


def mask_secrets(text: str, known: Iterable[str] = (),
                 pieces: frozenset[str] = frozenset()) -> str:
    """text with every secret a pattern finds, every known secret value, every word within two
    edits of a known secret of six characters or more (a key with a digit altered is still the key)
    and every run of secret pieces (secret_pieces, found on the whole text an excerpt was cut from)
    replaced by its prefix and [masked]."""
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
    if pieces:
        spans += piece_spans(text, pieces)
    out, position = [], 0
    for start, end, prefix in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start < position:                # overlapping spans: the later one's tail masked too
            position = max(position, end)
            continue
        out += [text[position:start], prefix + MASK]
        position = end
    return "".join(out) + text[position:]


# A run of this many characters of a secret, anywhere in an excerpt, is masked: an excerpt cut
# inside a key shows the rest of it, which no pattern knows as a key any more.
PIECE = 6


def secret_pieces(texts: Iterable[str], known: Iterable[str] = ()) -> frozenset[str]:
    """Every PIECE-character piece of every secret in the whole texts (the prefix a mask keeps left
    out) and of the known secrets: found before any excerpt of those texts is cut, for
    mask_secrets' pieces."""
    secrets = list(known)
    for text in texts:
        secrets += [text[start + len(prefix):end] for start, end, prefix in secret_spans(text)]
    return frozenset(secret[i:i + PIECE] for secret in secrets
                     for i in range(len(secret) - PIECE + 1))


def piece_spans(text: str, pieces: frozenset[str]) -> list[tuple[int, int, str]]:
    """The runs of text made of secret pieces (secret_pieces)."""
    spans: list[tuple[int, int, str]] = []
    for i in range(len(text) - PIECE + 1):
        if text[i:i + PIECE] in pieces:
            if spans and spans[-1][1] >= i:
                spans[-1] = (spans[-1][0], i + PIECE, "")
            else:
                spans.append((i, i + PIECE, ""))
    return spans
