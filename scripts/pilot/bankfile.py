"""Reading a large results bank (PROTOCOL.md section 4): a results.json of a million probes read as
columns, in pieces and on two cores, without a million probe objects held at once.

The probes array is cut into pieces of about a megabyte at the `}, {` between two probes; each piece
is parsed as a JSON array of its own, turned into columns at once and dropped, and the second half
of the array is parsed by a second Python process meanwhile. A cut can only fall between two probes:
a cut inside a string or inside a nested object leaves a piece that is not a whole JSON array, and
then the file is read whole, as json reads it. So is any file this path does not recognise (small,
with no top-level `probes` array of objects, with a surrogate escape), so that what every check says
of a file never depends on which path read it. The probes come back as ProbeRows: the columns, and a
probe as an object where one is asked for (the ones with fields beyond the columns kept whole).

This module imports nothing of the package, so that the second process starts in a few tens of
milliseconds. """
from __future__ import annotations

import itertools
import json
import operator
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

# smaller files are read whole: the pieces would save nothing
FAST_MIN_BYTES = 8 * 2 ** 20
PARALLEL_MIN_BYTES = 24 * 2 ** 20       # a probes array this large is parsed on two processes
PIECE_BYTES = 2 ** 20
# between two probes, unless inside a string or object
BOUNDARY = re.compile(rb"\}\s*,\s*\{")
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# json.dumps(indent=1): a top-level array closes here
TOP_LEVEL_ARRAY_END = re.compile(rb"\n \]")


class NotFast(Exception):
    """The file is not one this path reads: read it whole."""


class ProbeRows(Sequence):
    """The probes of a bank read as columns: a probe is an object made from the columns when it is
    asked for, a field at its default left out (the probe itself where it has fields beyond the
    columns); `take(indices)` is the probes at those places, as a view."""

    def __init__(self, columns: dict[str, list], defaults: dict[str, Any], whole: dict[int, dict],
                 places: Sequence[int] | None = None, kinds: dict[str, set] | None = None):
        self.columns, self.defaults, self.whole, self.places = columns, defaults, whole, places
        self.kinds = kinds                  # the types each column holds (None for a view)

    def __len__(self) -> int:
        return (len(self.places) if self.places is not None
                else len(next(iter(self.columns.values()))))

    def _row(self, place: int) -> dict:
        kept = self.whole.get(place)
        if kept is not None:
            return kept
        row = {}
        for field, column in self.columns.items():
            value = column[place]
            if field not in self.defaults or value != self.defaults[field]:
                row[field] = value
        return row

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._row(self.places[index] if self.places is not None else index)

    def __iter__(self):
        return map(self._row, self.places if self.places is not None else range(len(self)))

    def take(self, indices: Iterable[int]) -> "ProbeRows":
        picked = list(indices)
        places = picked if self.places is None else list(map(self.places.__getitem__, picked))
        return ProbeRows(self.columns, self.defaults, self.whole, places)


def read(data: bytes, path: Path, fields: tuple[tuple[str, Any], ...]) -> tuple[dict,
    dict[str, list]]:
    """The bank `data` (the bytes of `path`) with its probes as ProbeRows, and their columns
    (`fields`: name, default); NotFast where the file is not one this path reads."""
    if len(data) < FAST_MIN_BYTES or SURROGATE_ESCAPE.search(data):
        raise NotFast()
    key = data.find(b'"probes"')
    if key < 0:
        raise NotFast()
    opening = re.compile(rb'"probes"\s*:\s*\[\s*').match(data, key)
    if opening is None:
        raise NotFast()
    # parses only if the key is one of the top-level object's
    header = loads(data[:key] + b'"probes": 0}')
    if not isinstance(header, dict) or header.get("probes") != 0:
        raise NotFast()
    start = opening.end()
    if data[start:start + 1] != b"{":
        raise NotFast()
    columns: dict[str, list] = {name: [] for name, _ in fields}
    whole: dict[int, dict] = {}
    kinds: dict[str, set] = {name: set() for name, _ in fields}
    guess = TOP_LEVEL_ARRAY_END.search(data, start)
    child = None
    if guess is not None and guess.start() - start >= PARALLEL_MIN_BYTES and (os.cpu_count()
        or 1) > 1:
        middle = BOUNDARY.search(data, start + (guess.start() - start) // 2, guess.start())
        if middle is not None:
            child = start_piece_reader(path, middle.end() - 1, guess.start(), fields)
            stop = middle.start() + 1
            try:
                count, end = read_pieces(data, start, stop, fields, columns, kinds, whole, 0)
                if end != stop:
                    raise NotFast()
            except BaseException:
                child.kill()
                child.communicate()
                raise
            count = join_piece_reader(child, columns, kinds, whole, count)
            end = guess.start()
    if child is None:
        count, end = read_pieces(data, start, len(data), fields, columns, kinds, whole, 0)
    closing = re.compile(rb"\s*\]").match(data, end)
    if closing is None:
        raise NotFast()
    rest = loads(b'{"probes": 0' + data[closing.end():])
    if not isinstance(rest, dict) or rest.pop("probes") != 0 or "probes" in rest:
        raise NotFast()
    rows = ProbeRows(columns, {name: default for name, default in fields if default is not None},
                     whole, kinds=kinds)
    header["probes"] = rows
    header.update(rest)
    return header, {**columns, "rows": rows, "types": kinds}


def loads(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise NotFast() from None


def read_pieces(data: bytes, start: int, stop: int, fields, columns: dict[str, list],
                kinds: dict[str, set],
                whole: dict[int, dict], count: int) -> tuple[int, int]:
    """The probes of data[start:stop] (start at a probe's `{`) into the columns, a piece at a time;
    returns how many there were in all and where the last one ended. Past `stop`'s last probe (the
    array's end within it), the piece is parsed up to the array's end."""
    decoder = json.JSONDecoder()
    known = frozenset(name for name, _ in fields)
    position = start
    while position < stop:
        cut = BOUNDARY.search(data, min(position + PIECE_BYTES, stop), stop)
        end = cut.start() + 1 if cut else stop
        try:
            text = data[position:end].decode("utf-8")
        except UnicodeDecodeError:
            raise NotFast() from None
        try:
            chunk = json.loads("[" + text + "]")
            last = end
        except RecursionError:
            raise NotFast() from None
        except ValueError:
            try:                            # the array ends in this piece: parse up to its end
                chunk, used = decoder.raw_decode("[" + text)
            except (ValueError, RecursionError):
                raise NotFast() from None
            # at its closing bracket
            last, cut = position + len(text[:used - 2].encode("utf-8")), None
        count = add_chunk(chunk, fields, known, columns, kinds, whole, count)
        if cut is None:
            return count, last
        position = cut.end() - 1
    return count, stop


def add_chunk(chunk: list, fields, known: frozenset, columns: dict[str, list],
              kinds: dict[str, set],
              whole: dict[int, dict], count: int) -> int:
    """One piece's probes into the columns (a column of texts sharing each text, so that a million
    probes hold a few hundred strings), and the types each column holds (what the shape check
    reads); a probe with fields beyond the columns is kept whole."""
    if set(map(type, chunk)) - {dict}:
        raise NotFast()
    size = len(chunk)
    present = 0                             # fields of the columns the probes hold, counted
    for name, default in fields:
        try:
            column = list(map(operator.itemgetter(name), chunk))
            present += size
        except KeyError:
            column = list(map(dict.get, chunk, itertools.repeat(name, size),
                              itertools.repeat(default, size)))
            present += sum(map(operator.contains, chunk, itertools.repeat(name, size)))
        found = set(map(type, column))
        # a column of texts shares each text (a model's name, a class)
        if found == {str}:
            column = list(map(sys.intern, column))
        kinds[name] |= found
        columns[name].extend(column)
    if sum(map(len, chunk)) != present:    # some probe has fields beyond the columns
        for i, inside in enumerate(map(known.issuperset, chunk)):
            if not inside:
                whole[count + i] = chunk[i]
    return count + size


# -- the second process: the other half of the probes ----------------------------------------------
def start_piece_reader(path: Path, start: int, stop: int, fields):
    """A Python process reading the probes of path's bytes [start, stop) into columns
    (piece_reader_main)."""
    # only a large bank needs it: no command's start-up pays for it
    import subprocess
    package_parent = str(Path(__file__).resolve().parent.parent)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from pilot.bankfile import "
            "piece_reader_main; piece_reader_main()")
    return subprocess.Popen([sys.executable, "-c", code, package_parent, str(path), str(start),
                             str(stop),
                             json.dumps(fields)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def piece_reader_main() -> None:
    """In the second process: the probes of the byte range into columns, each as its distinct values
    and their codes, pickled to stdout; an empty stdout says the range is not one this path
    reads."""
    import array
    import pickle
    package_parent, path, start, stop, fields = sys.argv[1:6]
    fields = tuple(tuple(f) for f in json.loads(fields))
    with open(path, "rb") as handle:
        handle.seek(int(start))
        data = handle.read(int(stop) - int(start))
    columns: dict[str, list] = {name: [] for name, _ in fields}
    kinds: dict[str, set] = {name: set() for name, _ in fields}
    whole: dict[int, dict] = {}
    try:
        count, end = read_pieces(data, 0, len(data), fields, columns, kinds, whole, 0)
    except NotFast:
        return
    if end != len(data):
        return
    coded = {}
    for name, column in columns.items():
        # no two equal values of different types (1, True)
        if kinds[name] <= {str, int, type(None)}:
            distinct = list(dict.fromkeys(column))
            index = {value: i for i, value in enumerate(distinct)}
            coded[name] = (distinct, array.array("I", map(index.__getitem__, column)))
        else:
            coded[name] = (None, column)
    sys.stdout.buffer.write(pickle.dumps({"count": count, "columns": coded, "kinds": kinds,
                                          "whole": whole},
                                         protocol=4))


def join_piece_reader(child, columns: dict[str, list], kinds: dict[str, set],
                      whole: dict[int, dict],
                      count: int) -> int:
    """The second process's columns after the first half's; NotFast where it could not read its
    range."""
    import pickle
    blob, _ = child.communicate()
    if child.returncode != 0 or not blob:
        raise NotFast()
    part = pickle.loads(blob)
    for name, (distinct, codes) in part["columns"].items():
        if distinct is None:
            columns[name].extend(codes)
            continue
        distinct = [sys.intern(v) if type(v) is str else v for v in distinct]
        columns[name].extend(map(distinct.__getitem__, codes))
    for name, found in part["kinds"].items():
        kinds[name] |= found
    whole.update({count + i: row for i, row in part["whole"].items()})
    return count + part["count"]
