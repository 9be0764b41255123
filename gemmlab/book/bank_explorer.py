"""The Bank Conflict Explorer page: one warp's shared-memory access, lane by lane and bank by bank.

The reader picks an access: a stride in words between lanes, a column of a padded tile, a row or a
column of a swizzled tile (:func:`gemmlab.models.banks.swizzled_word`), 4, 8 or 16 bytes per lane, or one of
the tiled kernels' own instructions (:func:`gemmlab.models.banks.tiled_shared_instructions`). The page shows
each lane's words and banks, the words stacked in their banks group by group of lanes, the wavefronts
against the ideal, and why. Python computes every case the page can select with
:func:`gemmlab.models.banks.bank_access` and renders them into the page, so there is one set of numbers; the
page's JavaScript (``explorer_assets/banks.js``) only looks them up and draws them, and the browser
tests set the page's inputs to every case and compare what it shows with the bank model.
Self-contained HTML: no network request.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Sequence

from ..models import banks
from . import explorer_html

ASSETS = explorer_html.ASSETS
MODES = ("stride", "padded", "swizzled", "kernel")
WIDTHS = (4, 8, 16)                     # bytes per lane: float, float2, float4
MAX_STRIDE = 64                         # words between neighbouring lanes, 0 to this
PAD_COLUMNS = (8, 16, 32, 64)           # T, the columns of the padded tile
MAX_PAD = 8                             # words of padding per row, 0 to this
ROW_WORDS = (32, 64)                    # words per row of the swizzled tile (128 or 256 bytes)
PATTERNS = ("column", "row")
KEY_FIELDS = {"stride": ("stride", "width"), "padded": ("columns", "pad", "width"),
              "swizzled": ("row", "pattern", "column", "swizzle", "width"),
              "kernel": ("tile", "layout", "instruction")}
"""The inputs that select a case in each mode, in the order of the page's keys (:func:`key`)."""
DEFAULTS = {"mode": "stride", "stride": 2, "width": 4, "columns": 32, "pad": 1, "row": 32,
            "pattern": "column", "column": 0, "swizzle": "chunks", "tile": 32, "layout": "transposed",
            "instruction": 1}
"""Where the page starts, for every input (:func:`show` changes some)."""


def key(case: dict[str, Any]) -> str:
    """The page's name for a case, from its mode's inputs: ``stride:32/4``, ``kernel:32/padded/1``."""
    return case["mode"] + ":" + "/".join(str(case[f]) for f in KEY_FIELDS[case["mode"]])


def cases() -> Iterator[dict[str, Any]]:
    """Every case the page can select, one dict of inputs each (the row pattern ignores the column)."""
    for stride in range(MAX_STRIDE + 1):
        for width in WIDTHS:
            yield {"mode": "stride", "stride": stride, "width": width}
    for columns in PAD_COLUMNS:
        for pad in range(MAX_PAD + 1):
            for width in WIDTHS:
                yield {"mode": "padded", "columns": columns, "pad": pad, "width": width}
    for row in ROW_WORDS:
        for pattern in PATTERNS:
            for column in range(0, row, 4) if pattern == "column" else (0,):
                for swizzle in banks.SWIZZLES:
                    for width in WIDTHS:
                        yield {"mode": "swizzled", "row": row, "pattern": pattern, "column": column,
                               "swizzle": swizzle, "width": width}
    for tile in (8, 16, 32):
        for layout in banks.TILE_LAYOUTS:
            for i in range(4):
                yield {"mode": "kernel", "tile": tile, "layout": layout, "instruction": i}


def addresses(case: dict[str, Any]) -> tuple[list[int], int]:
    """The case's byte address for each of the 32 lanes, and the bytes each lane reads.

    ``stride``: lane l at word ``stride * l``. ``padded``: ``tile[lane][0]`` of a tile with rows of
    ``columns + pad`` words. ``swizzled``: rows of ``row`` words stored under ``swizzle``; in the
    ``column`` pattern lane l reads row l at word ``column``, in the ``row`` pattern lane l reads the
    l-th access of the tile in row-major order. ``kernel``: the instruction's own addresses."""
    mode, width = case["mode"], case.get("width", 4)
    lanes = range(banks.BANKS)
    if mode == "stride":
        return banks.strided_addresses(case["stride"]), width
    if mode == "padded":
        return banks.array_addresses(lanes, [0] * 32, case["columns"] + case["pad"]), width
    if mode == "swizzled":
        if case["swizzle"] == "words" and width > 4:
            raise ValueError(f"A word swizzle scatters the words of {_a(width)}-byte access over the row, so one "
                             f"lane could no longer read them at once: swizzle 16-byte chunks, or read 4 bytes.")
        R = case["row"]
        rows: Sequence[int]
        words: Sequence[int]
        if case["pattern"] == "column":
            rows, words = list(lanes), [case["column"]] * 32
        else:
            rows, words = zip(*(divmod(lane * width // 4, R) for lane in lanes))
        return banks.tile_addresses(rows, words, R, case["swizzle"]), width
    if mode == "kernel":
        ins = banks.tiled_shared_instructions(case["tile"], case["layout"])[case["instruction"]]
        return list(ins.addresses), ins.access_bytes
    raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def _a(width: int) -> str:
    return ("an " if width == 8 else "a ") + str(width)


def _join(items: Iterable[int]) -> str:
    said = [str(i) for i in items]
    if len(said) > 4:
        return ", ".join(said[:3]) + ", …, " + said[-1]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def _wavefronts(n: int) -> str:
    return f"{n} wavefront" + ("" if n == 1 else "s")


def result(addrs: list[int], width: int) -> dict[str, Any]:
    """What the page shows for one access: the addresses (``a``) and width (``w``); from
    :func:`gemmlab.models.banks.bank_access`, the wavefronts (``wf``) and the ideal; from
    :func:`gemmlab.models.banks.lane_groups`, the lanes per group (``g``) and each group's wavefronts
    (``p``); the sentence that says why (``why``); and, where banks conflict, the group, the bank and
    the lanes that the sentence names (``hl``)."""
    access = banks.bank_access(addrs, width)
    groups = banks.lane_groups(addrs, width)
    per_lane = width // banks.BANK_BYTES
    words = [[a // banks.BANK_BYTES + i for i in range(per_lane)] for a in addrs]
    passes = [banks.bank_access([addrs[lane] for lane in g], width).wavefronts for g in groups]
    assert sum(passes) == access.wavefronts
    size = len(groups[0])
    paired = per_lane > 1 and size > 32 // per_lane
    served = "" if len(groups) == 1 and not paired else (
        f"neighbouring lanes read the same address, so {width}-byte accesses go {size} lanes at a time" if paired
        else f"{width}-byte accesses go {size} lanes ({size * width} bytes) at a time")
    out = {"a": list(addrs), "w": width, "wf": access.wavefronts, "ideal": access.ideal, "g": size, "p": passes,
           "hl": None}
    if access.wavefronts == access.ideal:
        distinct = sorted({w for ws in words for w in ws})
        if len(set(addrs)) == 1 and len(addrs) > 1:
            said = f"word {distinct[0]}" if per_lane == 1 else f"words {distinct[0]}–{distinct[-1]}"
            why = (f"All {len(addrs)} lanes read {said}: one broadcast, {_wavefronts(access.wavefronts)}, the ideal."
                   if len(groups) == 1 else
                   f"All {len(addrs)} lanes read {said}; {served}, one broadcast per group: "
                   f"{_wavefronts(access.wavefronts)}, the ideal.")
        else:
            shared = " (lanes that read the same word share it)" if len(distinct) < per_lane * len(addrs) else ""
            ideal = f": {_wavefronts(access.wavefronts)}, the ideal."
            why = (f"{served}, and no group asks a bank for two different words{shared}{ideal}" if served else
                   f"no bank is asked for two different words{shared}{ideal}")
        out["why"] = why[0].upper() + why[1:]
        return out
    gi = passes.index(max(passes))
    group = groups[gi]
    by_bank: dict[int, dict[int, int]] = {}          # bank -> word -> the first lane of the group that wants it
    for lane in group:
        for w in words[lane]:
            by_bank.setdefault(w % banks.BANKS, {}).setdefault(w, lane)
    bank = max(sorted(by_bank), key=lambda b: len(by_bank[b]))
    wanted = sorted(by_bank[bank].items(), key=lambda wl: wl[1])
    lanes = [lane for _, lane in wanted]
    n = len(lanes)
    core = (f"lanes {_join(lanes)}{f' ({n} lanes)' if n > 4 else ''} {'both' if n == 2 else 'all'} want bank {bank}, "
            f"words {_join(w for w, _ in wanted)}")
    if len(groups) == 1 and not served:
        why = f"{core}: {_wavefronts(access.wavefronts)} where {access.ideal} would do."
    else:
        why = (f"{served}; in lanes {group[0]}–{group[-1]}, {core}, so that group alone takes "
               f"{_wavefronts(passes[gi])}: {access.wavefronts} in all where {access.ideal} would do.")
    out["why"] = why[0].upper() + why[1:]
    out["hl"] = [gi, bank, lanes]
    return out


def _refusal(case: dict[str, Any], addrs: list[int], width: int) -> str:
    lane = next(i for i, a in enumerate(addrs) if a % width)
    hint = {"stride": f"choose a stride that is a multiple of {width // 4} words",
            "padded": f"choose a padding that keeps the row, T + pad, a multiple of {width // 4} words"
            }.get(case["mode"], "choose another access")
    return (f"{_a(width).capitalize()}-byte access must start at a multiple of {width} bytes, and "
            f"lane {lane} starts at byte {addrs[lane]}: {hint}.")


def data(**start: int | str) -> dict[str, Any]:
    """Everything the page needs: every case's result (:func:`result`, or ``error``: the sentence that
    refuses it), the cases by :func:`key`, the inputs' choices, and the starting point (:data:`DEFAULTS`
    updated with ``start``)."""
    unknown = sorted(set(start) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"the explorer has no input {', '.join(unknown)}; it has {', '.join(DEFAULTS)}")
    begin = {**DEFAULTS, **start}
    results: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    table: dict[str, int] = {}
    for case in cases():
        try:
            addrs, width = addresses(case)
            try:
                r = result(addrs, width)
            except ValueError:               # misaligned: the bank model refuses it
                r = {"error": _refusal(case, addrs, width)}
        except ValueError as exc:
            r = {"error": str(exc)}
        blob = json.dumps(r, sort_keys=True)
        if blob not in index:
            index[blob] = len(results)
            results.append(r)
        table[key(case)] = index[blob]
    if begin["mode"] not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {begin['mode']!r}")
    if key(begin) not in table:
        raise ValueError(f"the explorer has no case {key(begin)}: see bank_explorer.cases()")
    instructions = {layout: [[i.what, i.opcode] for i in banks.tiled_shared_instructions(32, layout)]
                    for layout in banks.TILE_LAYOUTS}
    options = {"mode": list(MODES), "width": list(WIDTHS), "stride": [0, MAX_STRIDE], "columns": list(PAD_COLUMNS),
               "pad": list(range(MAX_PAD + 1)), "row": list(ROW_WORDS), "pattern": list(PATTERNS),
               "swizzle": list(banks.SWIZZLES), "tile": [8, 16, 32], "layout": list(banks.TILE_LAYOUTS)}
    return {"fields": KEY_FIELDS, "options": options, "instructions": instructions, "cases": table,
            "results": results, "start": begin, "banks": banks.BANKS}


_instances = 0


class BankExplorer:
    """Displays as the interactive explorer (``text/html``) in Jupyter, Colab and the book."""

    def __init__(self, **start: int | str) -> None:
        global _instances
        self.payload = data(**start)
        _instances += 1
        self.uid = f"bkx{_instances}"        # deterministic per process: stable notebook outputs

    def __repr__(self) -> str:
        s = self.payload["start"]
        return (f"<Bank Conflict Explorer: {len(self.payload['cases'])} accesses; starting at {key(s)}>")

    def _repr_html_(self) -> str:
        return explorer_html.render("bkx", self.uid, "Bank Conflict Explorer", self.payload, "banks", "BankExplorer", ASSETS)


def show(**start: int | str) -> BankExplorer:
    """The explorer, starting at :data:`DEFAULTS` updated with ``start``: for example
    ``show(mode="padded", columns=32, pad=0)`` or ``show(mode="kernel", tile=16, layout="plain")``."""
    return BankExplorer(**start)
