"""What a sentence of a state claims (protocol/SESSIONS.md section 5, scripts/README.md "What it
checks"): that a step was done or that it failed, that something must or must not be done, and
whether it says the opposite of an instruction; and when a sentence withdraws or corrects an
instruction (the one revocation rule: withdrawn, corrected_away). Pure functions of text, shared by
the release gate (gate.py) and the sessions study's scoring (studies/sessions/truth.py), so that
the two read a claim alike.

Words are compared as stems (the first six letters of a word with a common suffix taken off), with
a few spellings of one action made one (`e-mail` and `email`, `remove` and `delete`, `PR` and `pull
request`).
"""
from __future__ import annotations

import collections
import functools
import re

from .spellings import normalize_value, numeric_key
from .states import ORDER_END, split_units
from .values import extract_values

# --- Words
# --------------------------------------------------------------------------------------------------
# A claim that a thing was done, verified or approved, by family.
CLAIM_FAMILIES = {
    "done": re.compile(
        r"\b(done|completed?|succeeded|success(?:ful(?:ly)?)?|finished|processed|issued|settled|"
        r"paid|"
        r"sent|applied|saved|resolved|went "
        r"through|underway|deployed|merged|pushed|installed|fixed|"
        r"implemented|migrated|uploaded|published|delivered|refunded|transferred|executed|shipped|"
        r"passed|pass(?:es|ing)|green|emailed|e-mailed|mailed|shared|deleted|removed|cleaned "
        r"up|created|wrote|updated|upgraded|released|tagged|committed|restarted|rolled "
        r"back|cleared|booked|changed)\b",
        re.IGNORECASE,
    ),
    "verified": re.compile(
        r"\b(verified|confirmed|checked|validated|reconciled|cross-checked|audited|read back)\b",
        re.IGNORECASE,
    ),
    "approved": re.compile(r"\b(approved|authori[sz]ed|signed off|granted)\b", re.IGNORECASE),
}

# Further words that present a ledger item (a version, a record) in a good status.
STATUS_WORDS = re.compile(r"\b(current|up[ -]to[ -]date|latest|in "
                          r"effect|accepted|scanned|recorded|cleared|"
                          r"authori[sz]ed|ok|okay|fine|green|live|available|ready)\b",
                          re.IGNORECASE)

# A clause that says a thing did not (or not yet, or only perhaps) happen claims nothing done.
NOT_DONE = re.compile(
    r"\b(not|no|never|failed|fails?|failing|denied|rejected|refused|declined|pending|unverified|"
    r"awaiting|stale|superseded|outdated|obsolete|errors?|unapproved|attempted|tried|proposed|"
    r"without|unconfirmed|until|nobody|nothing|neither|nor|yet|would|will|whether|if|asked|once|"
    r"blocked|timed out|could "
    r"not|cannot|unable|aborted|needs?|must|should|awaits|instead|whenever|to be|"
    # an action in progress ("the helper, being changed") is no claim that it is done
    r"(?<!after )being)\b|n't\b",
    re.IGNORECASE,
)

# A string every match of a claim family holds (the first word of each alternative, or the part of
# it all its forms share), at the start of a word of the clause as written: blanking a clause's
# values (source_events matches the families against the clause so blanked) never makes letters,
# so a clause without any of these strings makes no claim and is passed over before its values are
# read. Only a position with no letter before it is tried (several times faster): a claim word of
# the blanked clause stands after a character that is no word's, or after a value blanked, and a
# value that ends right before a letter ends in a digit (`12/03/2025done`); tests/test_gate.py.
CLAIM_WORDS = (
    "done", "complete", "succeeded", "success", "finished", "processed", "issued", "settled",
    "paid", "sent", "applied",
    "saved", "resolved", "went", "underway", "deployed", "merged", "pushed", "installed", "fixed",
    "implemented",
    "migrated", "uploaded", "published", "delivered", "refunded", "transferred", "executed",
    "shipped", "pass", "green",
    "mailed", "emailed", "shared", "deleted", "removed", "cleaned", "created", "wrote", "updated",
    "upgraded", "released",
    "tagged", "committed", "restarted", "rolled", "cleared", "booked", "changed", "verified",
    "confirmed", "checked",
    "validated",
    "reconciled", "audited", "read", "approved", "authori", "signed", "granted")

CLAIM_WORD_LETTERS = re.compile(
    r"(?<![^\W\d])(?=[" + "".join(sorted({word[0] for word in CLAIM_WORDS})) + "])(?:"
    + "|".join(CLAIM_WORDS) + ")", re.IGNORECASE)

# A source sentence that reports a step failing, being refused or not happening.
FAILURE_EVENT = re.compile(
    r"\b(failed|fails?|failure|denied|rejected|refused|declined|errors?|errored|aborted|timed "
    r"out|could not|cannot|unable|did not|never|blocked|forbidden|not allowed|not granted|marked "
    r"as an error)\b|n't\b",
    re.IGNORECASE,
)

# A clause about what may, can or must happen claims nothing done (it may grant a permission,
# checked apart).
MODAL = re.compile(r"\b(may|might|could|can|should|must|shall)\b", re.IGNORECASE)

# A word of the done family right after a determiner names a thing, not an event: "the shared
# folder", "the
# completed orders".
ADJECTIVE_USE = re.compile(
    r"\b(?:the|a|an|one|its|their|our|your|his|her|this|that|these|those|each|every|any|no)\s+$",
    re.IGNORECASE,
)

# A word that says an action is not to happen (an odd number of them forbids: "no apply without the
# plan" orders the
# plan), and one that says it did not happen (a refusal, a failure, a rule withdrawn), which forbids
# whatever else
# the sentence says.
NEGATION = re.compile(
    r"\b(not|no|never|none|nothing|nobody|neither|nor|without|unless|avoid|stop|skip|no longer|"
    r"anymore|instead of)\b|n't\b",
    re.IGNORECASE,
)

DID_NOT_HAPPEN = re.compile(
    r"\b(refused|denied|declined|rejected|blocked|failed|withdr[ae]wn?|withdrew|revoked|"
    r"dropped|lifted|cancell?ed|kept|not granted|stopped|prevented)\b",
    re.IGNORECASE,
)

# Words that carry no subject when a claim is matched with a source event.
CLAIM_STOPWORDS = frozenset(
    "the a an of to for and or in on at by with was were is are be been being has have had it its "
    "this that these those all every each any now as from into against after before than then also "
    "still so but which who whom there their our we they he she i you me my your them his her us "
    "per via out up over under about again once since while where when what how".split())

# And, in what an instruction or a clause is about (terms), the words every instruction may hold.
STOPWORDS = CLAIM_STOPWORDS | frozenset(
    "user user's users always never from now forward going here rule rules please instruction "
    "instructions standing session rest until ever just only do does did don't not no let lets "
    "let's make sure keep next time one same".split())

SAME_ACTION = {"e-mail": "email", "e-mails": "email", "emails": "email", "mail": "email",
               "remove": "delete",
               "removed": "delete", "rm": "delete", "pr": "pull", "prs": "pull",
               "pull request": "pull",
               "pull requests": "pull", "tests": "test", "pytest": "test", "jest": "test",
               "spec": "test",
               "specs": "test", "check with": "ask", "confirm with": "ask"}


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    word = SAME_ACTION.get(word, word)
    if word.endswith(("ied", "ies")) and len(word) > 4:          # applied, replies
        word = word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[:-len(suffix)]
            break
    return SAME_ACTION.get(word, word)[:6]


@functools.lru_cache(maxsize=16384)
def held_by_words_of(stemmed: str) -> tuple[str, ...]:
    """Strings of which every word whose stem is `stemmed` holds one: the stem itself (less a final
    `y`, which stands for `ied` and `ies`), and the spellings SAME_ACTION makes one with it (`rm`
    for `delet`). A text that holds none of them, in lower case, has no word of that stem."""
    held = {stemmed[:-1] if stemmed.endswith("y") else stemmed}
    held |= {word for word, same in SAME_ACTION.items()
             if stemmed in (stem(word), stem(same), same[:6])}
    return tuple(sorted(held))


UNDERSCORED_NAME = re.compile(r"\b\w+_\w+\b")


@functools.lru_cache(maxsize=16384)
def without_values(text: str, names: bool = True) -> str:
    """text with every exact value (and, with names, every name_with_underscores) blanked: a claim
    word inside a path, a name or an id (`notes/done-list`, `completed_orders`, `verified_at`) is no
    claim."""
    out = list(text)
    for value in extract_values(text):
        out[value.start:value.end] = " " * (value.end - value.start)
    out = "".join(out)
    return UNDERSCORED_NAME.sub(lambda m: " " * len(m.group(0)), out) if names else out


def terms(text: str) -> set[str]:
    """What a clause is about: its content words, stemmed."""
    return set(_terms(text))


@functools.lru_cache(maxsize=16384)
def _terms(text: str) -> frozenset[str]:
    low = text.lower()
    for phrase in ("pull request", "check with", "confirm with"):
        low = low.replace(phrase, SAME_ACTION[phrase])
    return frozenset({stem(w) for w in re.findall(r"[a-z][a-z0-9-]*[a-z0-9]|[a-z]", low)
                      if w not in STOPWORDS and len(w) >= 2} - {""})


def claim(clause: str, status: bool = False) -> tuple[str, str] | None:
    """(family, word) of the first claim of done, verified or approved a clause makes (with status,
    also of a good status: current, latest ...), outside values and names and not as an adjective;
    None when it makes none."""
    text = without_values(clause)
    for family, pattern in [*CLAIM_FAMILIES.items(), *([("status",
                                                         STATUS_WORDS)] if status else [])]:
        for match in pattern.finditer(text):
            if not ADJECTIVE_USE.search(text[:match.start()]):
                return family, match.group(0).lower()
    return None


def says_not_done(clause: str) -> bool:
    return bool(NOT_DONE.search(without_values(clause)))


def reports_failure(clause: str) -> bool:
    return bool(FAILURE_EVENT.search(without_values(clause))
                or NOT_DONE.search(without_values(clause)))


def claim_terms(text: str) -> set[str]:
    """What a clause is about: its words (the claim, failure and negation words and the little words
    left out), stemmed; numbers of two digits or more count."""
    return set(_claim_terms(text))


@functools.lru_cache(maxsize=16384)
def _claim_terms(text: str) -> frozenset[str]:
    for pattern in (*CLAIM_FAMILIES.values(), FAILURE_EVENT, NOT_DONE):
        text = pattern.sub(" ", text)
    return frozenset({stem(w) for w in re.findall(r"[a-z0-9]+", text.lower())
                      if w not in CLAIM_STOPWORDS and (len(w) >= 3 if not w.isdigit() else len(w)
                                                       >= 2)})


# A name qualified by what holds it (billing.0042_add_invoice_index, app.migrations.0007_auto): its
# parts that hold a
# digit name the same thing as the whole, as a state may write them alone.
QUALIFIED_NAME = re.compile(r"(?<![\w.])[a-z_]\w*(?:\.\w+)+")


def event_terms(text: str) -> set[str]:
    """What a clause of a state or a source is about: its words (claim and failure words aside),
    stemmed, and its exact values as written."""
    return set(_event_terms(text))


@functools.lru_cache(maxsize=16384)
def _event_terms(text: str) -> frozenset[str]:
    found = extract_values(text)
    pieces = {p for v in found for p in re.split(r"[@/:^~]+", v.text.lower()) if re.search(r"\d",
        p)}
    pieces |= {p for name in QUALIFIED_NAME.findall(text.lower()) for p in name.split(".")
               if re.search(r"\d", p)}
    return _claim_terms(without_values(text)) | _claim_terms(" ".join(re.sub(r"[@/:^~_.-]+", " ",
        v.text)
                                                                        for v in found)) | \
        {v.text.lower() for v in found} | pieces


def term_index(term_sets: list[set]) -> dict[str, list[int]]:
    """term -> the numbers of the events (in order) whose terms hold it."""
    index: dict[str, list[int]] = {}
    for number, held in enumerate(term_sets):
        for term in held:
            index.setdefault(term, []).append(number)
    return index


def sharing(terms: set, need: int, index: dict[str, list[int]],
            required: str | None = None) -> list[int]:
    """The events (in source order) that share at least `need` of these terms (and hold `required`,
    if given)."""
    counts = collections.Counter(number for term in terms for number in index.get(term, ()))
    holding = set(index.get(required, ())) if required is not None else None
    return sorted(number for number, count in counts.items()
                  if count >= need and (holding is None or number in holding))


# A sentence that says the user ordered something, whatever words stand between "user" and the verb
# ("the user also asked to ...", "the user, after reading the plan, explicitly requested ...").
# A question ("the user asked what is not covered", "the user wants to know why") is no order.
ORDER_CLAIM = re.compile(r"\buser\b[^.\n]{0,80}?\b(?:asked|requested|told|instructed|wants|wanted|"
                         r"insisted|demanded|required|directed)\b(?!\s+(?:(?:me|us|you|him|her|"
                         r"them)\s+)?(?:to (?:know|see|understand|learn|find out)\b|what|whether|"
                         r"how|why|if|when|where|which|who|about)\b)(?P<what>[^.\n]*)",
                         re.IGNORECASE)

# an order a text gives the user is invented when fewer of its words than this share are the user's
# (a paraphrase keeps more of them)
INVENTED_SHARE = 0.25


def unsaid(what: str, said: set[str]) -> bool:
    """Whether fewer than INVENTED_SHARE of the terms of what a text gives as the user's are among
    the terms the user's own words hold (said)."""
    words = terms(what)
    return bool(words) and len(words & said) / len(words) < INVENTED_SHARE


def invented_order(unit: str, said: set[str]) -> str | None:
    """The order a sentence says the user gave (the words after the verb) when the user's own words
    do not hold it (unsaid); else None."""
    match = ORDER_CLAIM.search(unit)
    if match and unsaid(match.group("what"), said):
        return match.group("what").strip()
    return None


# --- Instructions
# ------------------------------------------------------------------------------------------------
# Within an order (states.ORDER_END), a clause starts at a joining word after a comma, and at `and`
# before a person.
ORDER_JOIN = re.compile(r",\s*(?=(?:and|but|then|instead|so)\b)|\band\b(?=\s+(?:i|we|you)\b)",
                        re.IGNORECASE)

# The one revocation rule: the words that withdraw an earlier instruction, naming what they
# withdraw ("forget what I said about pnpm", "the staging rule no longer applies", "you don't need
# to ask about /tmp anymore", "you can reply in English now"). An instruction's own orders read
# only its first form (rule_clauses: "forget what I said about pnpm" forbids pnpm); a user's
# sentence, every form (withdrawn).
FORGET = (r"\b(?:forget|scratch|drop|ignore|disregard|cancel)\b(?: (?:what i said|my "
          r"(?:earlier|last|previous) \w+))?(?: (?:about|on|regarding))?(?P<what>[^.;,]+)")

REVOKING = re.compile(FORGET, re.IGNORECASE)

# What a withdrawal names is a phrase: at most PHRASE characters before the words that withdraw it
# (unbounded, a long sentence with no stop was tried from each of its positions: quadratic)
PHRASE = 200
REVOKES = re.compile(FORGET + r"|(?P<thing>[^.;,]{1,%d}?) no longer applies"
                     r"|you (?:don't|do not) need to (?P<need>[^.;,]+?)(?: any ?more)?(?=[.;,]|$)"
                     r"|(?:you can|feel free to) (?P<can>[^.;,]{1,%d}?) (?:now|again|from now on)\b"
                     r"|(?P<over>[^.;,]{1,%d}?) (?:is|are|has been|have been|was|were) (?:now )?"
                     r"(?:over|lifted|off|ended|cancell?ed)\b"
                     r"|\blift(?:ed|ing)? (?P<lift>[^.;,]+)"
                     r"|\bno longer (?:need to |have to |must )?(?P<longer>[^.;,]+)"
                     % (PHRASE, PHRASE, PHRASE), re.IGNORECASE)
# Every match of REVOKES holds one of these (lower case, anywhere): a sentence with none withdraws
# nothing, and is not searched
REVOKE_WORDS = ("forget", "scratch", "drop", "ignore", "disregard", "cancel", "no longer",
                "need to", "you can", "feel free to", "over", "lift", "off", "ended")

# With a withdrawal in the sentence, a permission names what the withdrawn rule forbade ("the
# freeze is over, you can deploy")
PERMITS = re.compile(r"\b(?:you can|you may|feel free to|go ahead and) (?P<can>[^.;,]+)",
                     re.IGNORECASE)

ONE_OFF = re.compile(r"\bjust this once\b|\bthis one\b|\bonly this time\b", re.IGNORECASE)


def withdrawn(sentence: str) -> str | None:
    """The words naming what a sentence withdraws (every phrase of it that withdraws, and with one a
    permission it gives), None when it withdraws nothing: a one-off exception ("just this once")
    withdraws nothing."""
    lower = sentence.lower()
    if not any(word in lower for word in REVOKE_WORDS) or ONE_OFF.search(sentence):
        return None
    named = [g for match in REVOKES.finditer(sentence) for g in match.groups() if g]
    if not named:
        return None
    return " ".join(named + [m.group("can") for m in PERMITS.finditer(sentence)])


# A correction: the value after `not`, `instead of` or `rather than` is the one it corrects away
# ("the port is 8443, not 8080").
CORRECTED_AWAY = re.compile(r"\b(?:not|instead of|rather than)\s+(?P<old>[^\s,;.]+(?:\.\d+)*)",
                            re.IGNORECASE)


# A user's sentence that corrects an earlier value: the value it gives replaces one of that kind
# (studies/sessions/truth.py says which)
CORRECTION = re.compile(r"\b(?:actually|correction|sorry|i meant|my (?:mistake|bad)|typo|make it|"
                        r"(?:moved|changed|switched) (?:it |that )?to|it's now|is now|rather)\b",
                        re.IGNORECASE)


def corrected_away(text: str) -> list[str]:
    """The values a text says are not the ones, as written."""
    return [v.text for m in CORRECTED_AWAY.finditer(text) for v in extract_values(m.group("old"))]


def forbids(clause: str) -> bool:
    """Whether a clause says its action is not (or is not to be) done."""
    return bool(DID_NOT_HAPPEN.search(clause)) or len(NEGATION.findall(clause)) % 2 == 1


def rule_clauses(instruction: str) -> list[tuple[set[str], bool, str]]:
    """An instruction cut into its orders: (terms, whether the order forbids, its order of events)
    for each clause that has terms of its own: "Don't email customers directly; draft the replies"
    is a prohibition about email and customers and an order about drafting replies; "forget what I
    said about pnpm" forbids pnpm."""
    out = []
    orders = split_units(instruction, ORDER_END)
    for part in (part for order in orders for part in ORDER_JOIN.split(order)):
        revoked = REVOKING.search(part)
        if revoked:
            out.append((terms(revoked.group("what")), True, ""))
            part = part[:revoked.start()] + part[revoked.end():]
        words = terms(part)
        if words:
            order = "before" if re.search(r"\bbefore\b|\bfirst\b", part, re.IGNORECASE) else ""
            out.append((words, forbids(part), order))
    return out


FORMER_MARK = re.compile(r"\b(?:not|was|from|formerly|previously|old|instead of|rather "
                         r"than|corrected from|"
                         r"replac\w*|no longer)\s*[:=(]?\s*$", re.IGNORECASE)


def contradicts(unit: str, instruction: str) -> bool:
    """Whether a sentence of a state says the opposite of an instruction: one of its clauses holds
    most of the terms of one of the instruction's orders (two at least), with the opposite sign (a
    prohibition stated, planned or granted as done, or an order stated as lifted), or with the order
    of events turned round; or it gives as current a value the instruction corrected away ("8080"
    after "the port is 8443, not 8080")."""
    olds, orders = _instruction_orders(instruction)
    for value in extract_values(unit) if olds else ():
        if value.text in olds and not FORMER_MARK.search(unit[:value.start]) and \
                not re.match(r"\s*\((?:was|old|former)", unit[value.end:]):
            return True
    own = _own_clauses(instruction)
    for mine, negated, turned in _unit_clauses(unit):
        if not turned and restates(mine, negated, own):
            continue
        for words, forbidden, order in orders:
            shared = words & mine
            if len(shared) >= min(2, len(words)) and len(shared) * 2 >= len(words) and \
                    (forbidden != negated or order == "before" and turned and not negated):
                return True
    return False


def restates(mine: frozenset[str], negated: bool, own: tuple) -> bool:
    """Whether a state's clause says what one of the instruction's own clauses (cut as a state's
    are) says, with the same sign, adding no term of a clause of the other sign: "report latencies
    in milliseconds" of "report latencies in milliseconds, never seconds" (the instruction's order
    read whole forbids, as its `never` does), not "report latencies in seconds"."""
    if not mine:
        return False
    other_sign = frozenset().union(*(words for words, sign in own if sign != negated))
    return any(sign == negated and len(mine & words) >= min(2, len(mine)) and
               not (mine - words) & other_sign for words, sign in own)


@functools.lru_cache(maxsize=4096)
def _own_clauses(instruction: str) -> tuple[tuple[frozenset[str], bool], ...]:
    """An instruction cut into clauses as a state's sentence is, a clause without terms of its own
    (`Never,` of "Never, ever push to main") read with the next one."""
    return tuple((words, forbids(part)) for words, part in
                 _glued_clauses(without_values(instruction, names=False)) if words)


@functools.lru_cache(maxsize=4096)
def _instruction_orders(instruction: str) -> tuple[frozenset[str], tuple]:
    """An instruction's values corrected away and its orders (rule_clauses), read once however many
    sentences of however many states are compared with it."""
    olds = frozenset(corrected_away(instruction))
    return olds, tuple(rule_clauses(instruction))


# A clause cut within a state's unit (states.state_units): at a comma, semicolon or colon before a
# space, at a dash between spaces and at `but`; a clause of only a negation read with the next.
@functools.lru_cache(maxsize=16384)
def _unit_clauses(unit: str) -> tuple[tuple[frozenset[str], bool, bool], ...]:
    """A state's sentence cut into clauses, each as (terms, whether it forbids, whether it puts its
    action later)."""
    return tuple((words, forbids(part),
                  bool(re.search(r"\bafterwards?\b|\blater\b", part, re.IGNORECASE)))
                 for words, part in _glued_clauses(without_values(unit, names=False)))


def _glued_clauses(text: str) -> list[tuple[frozenset[str], str]]:
    """A sentence cut into clauses (at a comma, semicolon or colon before a space, at a dash between
    spaces and at `but`), each with its terms; a clause of only a negation, with no terms of its own
    (`Never,` of "Never, ever push to main"), is read with the next one."""
    out, carried = [], ""
    for part in re.split(r"[;:,]\s+|\s+-\s+|\bbut\b", text):
        part = (carried + " " + part) if carried else part
        words = frozenset(terms(part))
        if words or not NEGATION.search(part):
            out.append((words, part))
            carried = ""
        else:
            carried = part
    return out + ([(frozenset(), carried)] if carried else [])


# --- Naming a step
# -----------------------------------------------------------------------------------------------
# Program names and flags a command carries that say nothing about what it does to what.
COMMAND_FILLER = frozenset({"git", "origin", "npm", "npx", "yarn", "pip", "pip3", "python",
                            "python3", "bash", "sh",
                            "sudo", "make", "node", "exec", "cargo", "docker", "kubectl", "helm",
                            "curl", "cd", "rf",
                            "uv", "poetry", "go", "manage", "py", "bin", "scripts"})


def names_item(unit: str, match: str) -> bool:
    """Whether a unit of a state names a ledger item by one of its match terms: the term written in
    it, or, for a command (`git push origin main`), every word of the command that says what it does
    to what (push, main) and every value it names, with no other value of the same kind in its place
    (a refund of 500 is not the refund of 1,249)."""
    written, words, named = _match_parts(match)
    if written.search(unit):
        return True
    if words is None:
        return False
    unit_words, theirs = _unit_parts(unit)
    if not words <= unit_words:
        return False
    return all(key in theirs or text in unit or number is not None and number in theirs for key,
               text, number in named)


@functools.lru_cache(maxsize=8192)
def _match_parts(match: str) -> tuple[re.Pattern, frozenset[str] | None, tuple]:
    """A match term read once: the pattern that finds it written, the words of its command (None
    when it has too few to name a step by), and its values as ((kind, normal form), text,
    number)."""
    written = re.compile(r"(?<![\w])" + re.escape(match) + r"(?![\w])", re.IGNORECASE)
    named = extract_values(match)
    # flags say how, not what
    bare = re.sub(r"(?<!\S)-{1,2}[\w-]+", " ", without_values(match, names=False))
    words = frozenset({stem(w) for w in re.findall(r"[a-z]+|\d+",
                                                   bare.lower()) if w not in COMMAND_FILLER} - {""})
    if not named and len(words) < 2 and not re.search(r"\s", match.strip()):
        words = None
    return written, words, tuple(((v.kind, normalize_value(v.kind, v.text)), v.text,
                                  numeric_key(v.kind, v.text))
                                 for v in named)


@functools.lru_cache(maxsize=16384)
def _unit_parts(unit: str) -> tuple[frozenset[str], frozenset]:
    """A state's sentence read once: its terms and numbers, and the (kind, normal form) and number
    of its values."""
    theirs = set()
    for value in extract_values(unit):
        theirs |= {(value.kind, normalize_value(value.kind, value.text)),
                   numeric_key(value.kind, value.text)}
    return frozenset(_terms(unit) | set(re.findall(r"\d+", unit))), frozenset(theirs)
