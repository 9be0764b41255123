# Issue #18: can the two consumer warpgroups of the last step take turns at the epilogue, as ping-pong's do, while
# still sharing every tile of A and B (cooperative, half ping-pong's L2 bytes)? In the last step both consumers wait
# on the same full barriers, finish a tile together and store it together, and the tensor cores wait for both
# (ping-pong does 1.6% more work per cycle at 4096^3, results/power-h200.txt). Here consumer 1 starts D ns late
# (%globaltimer), once, at the start of the launch. Nothing else changes: consumer 0 then runs ahead as far as the
# ring lets it (the producer refills a stage only when both have released it), finishes each tile first and stores it
# while consumer 1 computes its last K-tiles alone, which one warpgroup's wgmma can do at the full rate; the lag
# renews itself at every tile. Parity waits stay exact: each consumer waits on every fill of every stage in turn.
# D = 500, 1000, 2000 ns (a K-tile takes about 640 ns with both consumers, the ring holds 4). Checked at awkward
# sizes, timed interleaved with cuBLAS and the last step at 4096^3, 8192^3, 2048^3 and 6144x4096x2048, and with
# --once launched for Nsight Compute.
# Run on a Hopper GPU with CuPy:   timeout 300 python3 drafts/09_lag_experiment.py [--once]
import argparse, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from drafts.variants import WS_CONSUMER, last_step_experiment



def lagging(delay_ns: int) -> list:
    """Consumer 1 of ws_gemm waits ``delay_ns`` of %globaltimer before its first K-tile."""
    wait = f"""        if (PERSISTENT && CLUSTER == 2 && c == 1) {{                 // experiment: consumer 1 starts late
            unsigned long long start, now;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
            do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); while (now - start < {delay_ns}ull);
        }}
"""
    return [(WS_CONSUMER, WS_CONSUMER + wait)]


EDITS = {f"lag{d}": lagging(d) for d in (500, 1000, 2000)}
SIZES = ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (6144, 4096, 2048))


def main(once: bool):
    last_step_experiment(EDITS, ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (8192, 8192, 1024)),
                         SIZES, once, check_timed=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--once", action="store_true", help="each kernel launched twice at 4096^3, for ncu")
    main(parser.parse_args().once)
