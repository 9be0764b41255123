"""The Workbench's replay against gemmlab.models.traffic and a brute-force count of every thread's loads."""

import itertools
import json
import re

import pytest

from gemmlab.book import workbench
from gemmlab.models import traffic

SIZES = [(16, 16, 16, 2), (16, 16, 16, 1), (16, 16, 16, 16), (13, 10, 7, 4), (5, 9, 11, 2), (8, 8, 3, 8), (1, 1, 1, 1)]


@pytest.mark.parametrize("M,N,K,T", SIZES)
def test_naive_replay_equals_the_model(M, N, K, T):
    p = workbench.plan("naive", M, N, K, T)
    gx, gy = traffic.grid_for(M, N, T)
    tot = p.totals()
    assert tot["global"] == traffic.naive_traffic(M, N, K).loads
    assert (tot["shared"], tot["barriers"]) == (0, 0)
    assert tot["steps"] == gx * gy * (K + 1)


@pytest.mark.parametrize("M,N,K,T", SIZES)
def test_tiled_replay_equals_the_model(M, N, K, T):
    p = workbench.plan("tiled", M, N, K, T)
    gx, gy = traffic.grid_for(M, N, T)
    phases = traffic.ceil_div(K, T)
    tot = p.totals()
    assert tot["global"] == traffic.tiled_traffic(M, N, K, T).loads
    assert tot["shared"] == traffic.tiled_shared_loads(M, N, K, T)
    assert tot["barriers"] == gx * gy * 2 * phases
    assert tot["steps"] == gx * gy * (4 * phases + 1)
    kinds = [s["kind"] for s in p.templates[0]]
    assert kinds[:4] == ["load", "sync", "compute", "sync"] and kinds[-1] == "write"


def brute_thread_loads(mode, M, N, K, T):
    """{(row, col) of a thread: (global loads, shared reads)} by walking the kernel's loops."""
    gx, gy = traffic.grid_for(M, N, T)
    out = {}
    for by, bx, ty, tx in itertools.product(range(gy), range(gx), range(T), range(T)):
        row, col = by * T + ty, bx * T + tx
        if mode == "naive":
            out[row, col] = (2 * K, 0) if row < M and col < N else (0, 0)
            continue
        g = s = 0
        for k0 in range(0, K, T):
            g += (row < M and k0 + tx < K) + (k0 + ty < K and col < N)
            s += 2 * T
        out[row, col] = (g, s)
    return out


@pytest.mark.parametrize("mode", ["naive", "tiled"])
@pytest.mark.parametrize("M,N,K,T", SIZES)
def test_per_thread_counts_match_a_trace(mode, M, N, K, T):
    p = workbench.plan(mode, M, N, K, T)
    gx, _ = p.grid
    got = {}
    for b, step in p.steps():
        by, bx = divmod(b, gx)
        for i in range(T * T):
            ty, tx = divmod(i, T)
            g, s = got.get((by * T + ty, bx * T + tx), (0, 0))
            got[by * T + ty, bx * T + tx] = (g + (step["tg"][i] if step["tg"] else 0), s + (step["ts"][i] if step["ts"] else 0))
    assert got == brute_thread_loads(mode, M, N, K, T)


def test_shared_loads_formula_matches_a_trace():
    for M, N, K, T in SIZES:
        assert traffic.tiled_shared_loads(M, N, K, T) == sum(s for g, s in brute_thread_loads("tiled", M, N, K, T).values())


def test_reuse_table_for_the_demo():
    r2, r16 = workbench.reuse_table(16, 16, 16, 2), workbench.reuse_table(16, 16, 16, 16)
    assert (r2["blocks"], r2["reuse"], r2["shared_bytes"]) == (64, 2, 32)
    assert (r16["blocks"], r16["reuse"], r16["shared_bytes"]) == (1, 16, 2048)       # 2 KB at T = 16
    assert traffic.tiled_shared_bytes(32) == 8192                                       # 8 KB at T = 32
    assert r2["naive_loads_per_block"] == 2 * 16 * 4 and r2["tiled_loads_per_block"] == 2 * 16 * 4 / 2


def test_demo_defaults_and_tile_choices():
    d = workbench.data()
    assert (d["M"], d["N"], d["K"], d["T"]) == (16, 16, 16, 2)
    assert d["tiles"] == [1, 2, 4, 8, 16]
    assert d["plans"]["naive"]["2"]["blocks"] == 64


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="M must be a positive integer"):
        workbench.plan("naive", 0, 4, 4, 2)
    with pytest.raises(ValueError, match="keep each matrix at 4096 elements"):
        workbench.show(100, 100, 100, 4)
    with pytest.raises(ValueError, match="at most 1024"):
        workbench.plan("tiled", 64, 64, 64, 64)
    with pytest.raises(ValueError, match="mode must be"):
        workbench.show(mode="fast")


def test_html_is_self_contained_and_deterministic():
    a, b = workbench.show(), workbench.show(13, 10, 7, 4, mode="tiled")
    html_a = a._repr_html_()
    assert a.uid != b.uid and f'id="{a.uid}"' in html_a
    assert not re.search(r"(src|href)\s*=|https?://|import\(|fetch\(|XMLHttpRequest", html_a), "no network requests"
    blob = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html_a, re.S).group(1)
    assert json.loads(blob.replace("<\\/", "</"))["plans"]["tiled"]["2"]["totals"] == workbench.plan("tiled", 16, 16, 16, 2).totals()
    assert html_a == workbench.page_html(a.payload, a.uid)
    assert repr(b) == "<Shared Memory Workbench: 13x10x7, T = 4, tiled mode>"
