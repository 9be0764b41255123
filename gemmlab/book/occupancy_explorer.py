"""The Occupancy Calculator page: blocks per SM for any block size, registers and shared memory.

The page's JavaScript (``explorer_assets/occupancy.js``) applies the rules of
:func:`gemmlab.models.occupancy.calculate` to the limits of a device preset: the T4, A100, H100 and H200 from
their published limits (:mod:`gemmlab.runtime.device`), and the reader's own GPU when a notebook passes
``device.current()``. Python renders the presets and the rule constants into the page, so there is
one set of numbers; the browser tests set the page's inputs over a grid of cases and compare every
answer with :func:`gemmlab.models.occupancy.calculate`. Self-contained HTML: no network request.
"""

from __future__ import annotations


from ..models import limits, occupancy
from ..runtime import device
from . import explorer_html

ASSETS = explorer_html.ASSETS
PRESETS = (("T4", device.T4), ("A100", device.A100), ("H100", device.H100), ("H200", device.H200))
FIELDS = ("max_threads_per_block", "max_threads_per_sm", "max_blocks_per_sm", "warp_size", "registers_per_sm",
          "registers_per_block", "shared_per_block_optin", "shared_per_sm", "reserved_shared_per_block")


def preset(name: str, spec: device.DeviceSpec) -> dict:
    """The limits of one device that the calculator uses, with its name and compute capability."""
    return {"name": name, "full_name": spec.name, "cc": "%d.%d" % spec.compute_capability,
            **{f: getattr(spec, f) for f in FIELDS}}


def data(spec: device.DeviceSpec | None = None, threads: int = 256, registers: int = 64, shared: int = 0) -> dict:
    """Everything the page needs: the presets (and ``spec``, first, as "this GPU"), the rule constants
    and the starting point."""
    presets = [preset(n, s) for n, s in PRESETS]
    if spec is not None:
        presets.insert(0, preset("this GPU", spec))
    occupancy.calculate(spec or device.H200, threads, registers, shared)     # a clear error for a bad start
    return {"presets": presets, "start": {"threads": threads, "registers": registers, "shared": shared},
            "rules": {"register_unit": occupancy.REGISTER_ALLOCATION_UNIT,
                      "shared_unit": occupancy.SHARED_ALLOCATION_UNIT,
                      "sub_partitions": occupancy.SUB_PARTITIONS,
                      "max_registers": limits.MAX_REGISTERS_PER_THREAD}}


_instances = 0


class OccupancyCalculator:
    """Displays as the interactive calculator (``text/html``) in Jupyter, Colab and the book."""

    def __init__(self, spec: device.DeviceSpec | None = None, threads: int = 256, registers: int = 64,
                 shared: int = 0) -> None:
        global _instances
        self.payload = data(spec, threads, registers, shared)
        _instances += 1
        self.uid = f"occx{_instances}"        # deterministic per process: stable notebook outputs

    def __repr__(self) -> str:
        s = self.payload["start"]
        return (f"<Occupancy Calculator: {len(self.payload['presets'])} devices; {s['threads']} threads, "
                f"{s['registers']} registers, {s['shared']} bytes of shared memory>")

    def _repr_html_(self) -> str:
        return explorer_html.render("occx", self.uid, "Occupancy Calculator", self.payload, "occupancy",
                                    "OccupancyCalculator", ASSETS)


def show(spec: device.DeviceSpec | None = None, threads: int = 256, registers: int = 64,
         shared: int = 0) -> OccupancyCalculator:
    """The calculator, starting at a block of ``threads`` threads with ``registers`` registers per thread
    and ``shared`` bytes of shared memory; pass ``device.current()`` to add this GPU to the presets."""
    return OccupancyCalculator(spec, threads, registers, shared)
