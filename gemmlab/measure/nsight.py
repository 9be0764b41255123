"""Hardware counters from Nsight Compute (``ncu``), read in a child process.

:func:`counters` runs ``ncu`` on ``python -m gemmlab run NAME MxNxK`` (one launch of one GEMM
kernel) and returns the metrics it measured; :func:`profile_program` does the same for any Python
program and kernel name. The profiled program is a separate process (:mod:`gemmlab.runtime.watchdog`), so a
failure there (no ``ncu``, no permission to read the counters, a crash, a hang) cannot take the
notebook's own CUDA context down: it comes back as :class:`CountersUnavailable` with a one-sentence reason.
"""

from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass
from typing import Callable

from ..gemm import registry
from ..models import banks, traffic
from ..runtime import watchdog

# Global loads, as L1 sees them; then what reached L2 and DRAM; then the kernel's duration.
TRAFFIC_METRICS = {
    "requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1_hit_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l2_read_sectors": "lts__t_sectors_srcunit_tex_op_read.sum",
    "l2_hit_sectors": "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "duration_ns": "gpu__time_duration.sum",
}

# Shared-memory instructions, wavefronts and what ncu calls bank conflicts (chapter 4).
SHARED_METRICS = {
    "load_instructions": "smsp__inst_executed_op_shared_ld.sum",
    "load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "load_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "store_instructions": "smsp__inst_executed_op_shared_st.sum",
    "store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "store_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "duration_ns": "gpu__time_duration.sum",
}

# ldmatrix (LDSM), which the shared-load counters above leave out, and the 16-byte tile stores (chapter 8).
LDMATRIX_METRICS = {
    "ldsm_instructions": "smsp__inst_executed_op_ldsm.sum",
    "ldsm_wavefronts": "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "ldsm_conflicts": "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
    "store_instructions": "smsp__inst_executed_op_shared_st.sum",
    "store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "store_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "duration_ns": "gpu__time_duration.sum",
}

# Theoretical and achieved occupancy and the blocks each resource allows (chapter 5).
OCCUPANCY_METRICS = {
    "theoretical_pct": "sm__maximum_warps_per_active_cycle_pct",
    "achieved_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "registers_per_thread": "launch__registers_per_thread",
    "limit_registers": "launch__occupancy_limit_registers",
    "limit_shared_memory": "launch__occupancy_limit_shared_mem",
    "limit_warps": "launch__occupancy_limit_warps",
    "limit_blocks": "launch__occupancy_limit_blocks",
    "duration_ns": "gpu__time_duration.sum",
}


class CountersUnavailable(RuntimeError):
    """Nsight Compute cannot read counters here; the message says why in one sentence."""


def find_ncu() -> str | None:
    """Path of ``ncu`` (on PATH, beside nvcc, or where Nsight Compute installs itself), or None."""
    return watchdog.find_tool("ncu", "/opt/nvidia/nsight-compute/ncu")


def unavailable_reason() -> str | None:
    """None if ncu can be tried here, else why not (one sentence)."""
    if find_ncu() is None:
        return ("Nsight Compute (ncu) is not installed on this machine, so the counters cannot be read here; "
                "the stored outputs of the book show the H200's.")
    return None


@dataclass(frozen=True)
class Counters:
    kernel: str
    M: int
    N: int
    K: int
    values: dict

    def __getitem__(self, key: str) -> float:
        return self.values[key]


def _number(text: str) -> float:
    return float(text.replace(",", "").replace('"', "").strip() or "nan")


def parse_raw_csv(text: str, metrics: dict[str, str]) -> dict[str, float]:
    """The metric values of the first profiled kernel in ``ncu --page raw --csv`` output."""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 3:
        raise CountersUnavailable("Nsight Compute profiled no kernel launch, so there are no counters to read.")
    header, data = rows[0], rows[2]          # rows[1] holds the units
    out = {}
    for key, metric in metrics.items():
        if metric not in header:
            raise CountersUnavailable(f"this Nsight Compute does not know the metric {metric}.")
        out[key] = _number(data[header.index(metric)])
    return out


def profile_program(args: list[str], function: str, metrics: dict[str, str], timeout_s: int = 600) -> dict[str, float]:
    """Run ``python args...`` under Nsight Compute and return ``metrics`` of the first launch of
    kernel ``function``. Caches are flushed before each replay pass (ncu's default), so the counts are
    those of a launch that starts cold; clocks are left alone (``--clock-control none``)."""
    reason = unavailable_reason()
    if reason:
        raise CountersUnavailable(reason)
    ncu = find_ncu()
    assert ncu is not None                 # unavailable_reason() said it is there
    cmd = [ncu, "--clock-control", "none", "--metrics", ",".join(metrics.values()),
           "--kernel-name", function, "--launch-count", "1", "--page", "raw", "--csv", "--print-units", "base",
           sys.executable, *args]
    run = watchdog.run_command(cmd, timeout_s)
    if run.status == "timeout":
        raise CountersUnavailable(f"Nsight Compute did not finish within {timeout_s} s and was stopped.")
    out = run.stdout + run.stderr
    if "ERR_NVGPUCTRPERM" in out:
        raise CountersUnavailable("Nsight Compute has no permission to read this GPU's performance counters "
                                  "(ERR_NVGPUCTRPERM), as on many shared and cloud machines; the stored outputs of the book show the H200's.")
    if run.status != "ok":
        last = next((l for l in reversed(out.splitlines()) if l.strip()), "no output")
        raise CountersUnavailable(f"Nsight Compute failed (exit {run.returncode}): {last.strip()[:200]}")
    return parse_raw_csv(run.stdout, metrics)


def counters(kernel: str, M: int, N: int, K: int, metrics: dict[str, str] | None = None,
             timeout_s: int = 600, extra_shared: int = 0) -> Counters:
    """Profile one launch of kernel ``kernel`` (a name :func:`gemmlab.gemm.registry.lookup` knows) at
    ``M x N x K`` with Nsight Compute, optionally with ``extra_shared`` unused bytes of dynamic shared
    memory per block (through ``python -m gemmlab run``, see :func:`profile_program`)."""
    function = registry.lookup(kernel).entry_point
    args = ["-m", "gemmlab", "run", kernel, f"{M}x{N}x{K}", "--extra-shared", str(extra_shared)]
    return Counters(kernel, M, N, K, profile_program(args, function, metrics or TRAFFIC_METRICS, timeout_s))


def traffic_rows(c: Counters) -> list[tuple[str, str, str]]:
    """Model next to counters for one profiled launch: (quantity, model, measured)."""
    w = traffic.warp_traffic(c.kernel, c.M, c.N, c.K)
    t = traffic.thread_traffic(c.kernel, c.M, c.N, c.K)
    mb = lambda b: f"{b / 1e6:,.1f} MB"
    pct = lambda a, b: f"{100 * a / b:.1f}%" if b else "-"
    return [
        ("float loads by threads", f"{t.loads:,}", "-"),
        ("warp load requests", f"{w.requests:,}", f"{c['requests']:,.0f}"),
        ("32-byte sectors requested", f"{w.sectors:,}", f"{c['sectors']:,.0f}"),
        ("L1 hit rate (sectors)", "-", pct(c["l1_hit_sectors"], c["sectors"])),
        ("L1 -> L2 reads", "-", mb(32 * c["l2_read_sectors"])),
        ("L2 hit rate (sectors)", "-", pct(c["l2_hit_sectors"], c["l2_read_sectors"])),
        ("DRAM reads", f"{mb(4 * (c.M * c.K + c.K * c.N))} (A and B once)", mb(c["dram_read_bytes"])),
        ("kernel time under the profiler", "-", f"{c['duration_ns'] / 1e6:.3f} ms"),
    ]


def shared_rows(c: Counters, model: banks.SharedTraffic) -> list[tuple[str, str, str]]:
    """The shared-memory model (:func:`gemmlab.models.banks.tiled_shared_traffic`) next to the counters of one launch."""
    return [
        ("shared load instructions", f"{model.load_instructions:,}", f"{c['load_instructions']:,.0f}"),
        ("shared load wavefronts", f"{model.load_wavefronts:,}", f"{c['load_wavefronts']:,.0f}"),
        ("load bank conflicts", f"{model.load_conflicts:,}", f"{c['load_conflicts']:,.0f}"),
        ("shared store instructions", f"{model.store_instructions:,}", f"{c['store_instructions']:,.0f}"),
        ("shared store wavefronts", f"{model.store_wavefronts:,}", f"{c['store_wavefronts']:,.0f}"),
        ("store bank conflicts", f"{model.store_conflicts:,}", f"{c['store_conflicts']:,.0f}"),
        ("kernel time under the profiler", "-", f"{c['duration_ns'] / 1e6:.3f} ms"),
    ]


def comparison(cs: list[Counters], rows_of: Callable[[Counters], list[tuple]] = traffic_rows) -> tuple[list[str], list[tuple]]:
    """Several profiled launches side by side: headers and rows of (quantity, model | measured per launch).
    ``rows_of(counters)`` gives one launch's (quantity, model, measured) rows."""
    headers = ["quantity"] + [f"{c.kernel} {h}" for c in cs for h in ("model", "measured")]
    per = [rows_of(c) for c in cs]
    rows = [tuple([per[0][i][0]] + [x for p in per for x in p[i][1:]]) for i in range(len(per[0]))]
    return headers, rows
