"""Line diffs that stay fast on large files: the preview's unified diff, and the line map
of a file as written (report.py).

difflib's SequenceMatcher looks for the longest matching block again and again: on a
large file with many changed lines that is quadratic (a 400 KB file of XRT calls: 2 s, a
1 MB one far longer). Above ``SMALL`` lines the matching blocks come instead from the lines
each side holds once (patience diff, as ``git diff --patience``): those that appear once
in both, in the longest increasing run, anchor the match, the gaps between anchors are
matched the same way, and a gap without such lines falls back to difflib when small. A
rewrite changes lines in place, so nearly every unchanged line is such an anchor and the
cost is near linear. Below ``SMALL`` lines difflib itself is used, so a small file's diff
is exactly what it always was.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter

SMALL = 2_000  # lines: difflib below, patience above
_FALLBACK_CELLS = 250_000  # a gap without anchors is handed to difflib up to this many line pairs


class PatienceMatcher(difflib.SequenceMatcher):
    """A SequenceMatcher whose matching blocks come from unique lines (see the module)."""

    def __init__(self, a: list[str], b: list[str]):
        super().__init__(None, a, b, autojunk=False)

    def set_seq2(self, b) -> None:  # difflib indexes b for its own search; not needed here
        self.b = b
        self.matching_blocks = self.opcodes = None

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is None:
            self.matching_blocks = _blocks(_pairs(self.a, self.b), len(self.a), len(self.b))
        return self.matching_blocks


def matcher(a: list[str], b: list[str]) -> difflib.SequenceMatcher:
    if len(a) <= SMALL and len(b) <= SMALL:
        return difflib.SequenceMatcher(None, a, b, autojunk=False)
    return PatienceMatcher(a, b)


def unified(a: list[str], b: list[str], fromfile: str, tofile: str, n: int = 3):
    """Lines of a unified diff, as ``difflib.unified_diff`` writes them."""
    if len(a) <= SMALL and len(b) <= SMALL:
        yield from difflib.unified_diff(a, b, fromfile, tofile, n=n)
        return
    started = False
    for group in PatienceMatcher(a, b).get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's range as unified diffs give it (difflib's _format_range_unified)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _pairs(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Matched (i, j) line pairs, in increasing order of both."""
    out: list[tuple[int, int]] = []
    work = [(0, len(a), 0, len(b))]
    while work:
        alo, ahi, blo, bhi = work.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:  # the common head
            out.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        tail = []
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:  # the common tail
            ahi, bhi = ahi - 1, bhi - 1
            tail.append((ahi, bhi))
        out += tail
        if alo == ahi or blo == bhi:
            continue
        anchors = _anchors(a, b, alo, ahi, blo, bhi)
        if not anchors:
            if (ahi - alo) * (bhi - blo) <= _FALLBACK_CELLS:
                sub = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
                out += [(alo + m.a + k, blo + m.b + k) for m in sub.get_matching_blocks() for k in range(m.size)]
            continue  # else: the gap is one replaced block
        out += anchors
        edges = [(alo - 1, blo - 1), *anchors, (ahi, bhi)]
        work += [(i + 1, k, j + 1, m) for (i, j), (k, m) in zip(edges, edges[1:]) if i + 1 < k and j + 1 < m]
    return sorted(out)


def _anchors(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int]]:
    """Lines found once on each side of the gap, in the longest run increasing on both."""
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    where_b = {line: j for j, line in enumerate(b[blo:bhi], blo) if count_b[line] == 1}
    candidates = [
        (i, where_b[line]) for i, line in enumerate(a[alo:ahi], alo) if count_a[line] == 1 and line in where_b
    ]
    # longest increasing subsequence by j (patience sorting), candidates already ordered by i
    tops: list[int] = []  # j at the top of each pile
    back: list[int] = []  # for each candidate, the index of its predecessor (or -1)
    top_index: list[int] = []
    for k, (_, j) in enumerate(candidates):
        pile = bisect.bisect_left(tops, j)
        back.append(top_index[pile - 1] if pile else -1)
        if pile == len(tops):
            tops.append(j)
            top_index.append(k)
        else:
            tops[pile], top_index[pile] = j, k
    run, k = [], top_index[-1] if top_index else -1
    while k >= 0:
        run.append(candidates[k])
        k = back[k]
    return run[::-1]


def _blocks(pairs: list[tuple[int, int]], la: int, lb: int) -> list[difflib.Match]:
    blocks: list[difflib.Match] = []
    for i, j in pairs:
        if blocks and blocks[-1].a + blocks[-1].size == i and blocks[-1].b + blocks[-1].size == j:
            last = blocks[-1]
            blocks[-1] = difflib.Match(last.a, last.b, last.size + 1)
        else:
            blocks.append(difflib.Match(i, j, 1))
    blocks.append(difflib.Match(la, lb, 0))
    return blocks
