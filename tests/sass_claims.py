"""What the chapters say of their kernels' machine code, as checks on opcode counts (gemmlab.runtime.compiler.opcode_counts):
the GPU tests apply them to the SASS of the cubin that ran, test_sass.py to nvcc's cubin for the same architecture
with no GPU. Each returns the claims that do not hold, as sentences; an empty list when all hold."""

HOPPER_OPS = ("HGMMA", "UTMALDG", "UTMASTG", "UTMAREDG", "STG", "LDL", "STL")
TENSOR_OPS = ("HMMA", "LDSM", "LDGSTS", "LDG", "STS", "BAR", "REDG")
TMA_STEP_OPS = ("HMMA", "LDSM", "LDGSTS", "UTMALDG", "BAR", "USETMAXREG", "LDL", "STL")


def _total(counts: dict, prefix: str) -> int:
    return sum(n for op, n in counts.items() if op.startswith(prefix))


def hopper_problems(counts: dict, c_map: bool, streamk: bool) -> list[str]:
    """Chapter 9: every GEMM multiplies with HGMMA (wgmma) and copies with the copy engine (UTMALDG), and uses no local
    memory; a copy-engine epilogue (``c_map``) stores with UTMASTG and no thread stores to global memory (STG), the
    others with STG alone; the stream-K kernel, and it only, adds with the engine (UTMAREDG)."""
    out = []
    if _total(counts, "LDL") or _total(counts, "STL"):
        out.append("it uses local memory")
    if not _total(counts, "HGMMA") or not _total(counts, "UTMALDG"):
        out.append("it lacks HGMMA or UTMALDG")
    stores = {op.split(".")[0] for op in counts} & {"UTMASTG", "STG"}
    if stores != ({"UTMASTG"} if c_map else {"STG"}):
        out.append(f"it stores with {sorted(stores)}")
    if bool(_total(counts, "UTMAREDG")) != streamk:
        out.append("UTMAREDG where there is no stream-K, or none where there is")
    return out


def tensor_ladder_problems(counts: dict[str, dict]) -> list[str]:
    """Chapter 8's reading of its FP16 ladder's SASS on sm_80 and later (``counts`` by step name without the suffix:
    tc_wmma, tc_mma, tc_swizzle, tc_async, tc_stages, tc_prefetch, tc_wide, tc_inner): WMMA compiles to HMMA and LDSM too;
    ``tc_async`` replaces the 16 LDG.E.128 and 16 STS.128 of the copies by 16 LDGSTS, and ``tc_stages`` has more of
    them; every mma.sync kernel issues one LDSM per 4 HMMA.16816, the prefetching ones 8 more for the first fragments;
    ``tc_inner`` has ``tc_wide``'s multiplier and fragment loads, and each copy twice (unchecked for inner tiles,
    checked at the edges); ``tc_tail`` (where present) holds ``tc_inner``'s loop twice, for its whole tiles and for
    the shared parts, and adds the parts into C with REDG (a reduction in the L2, no value returned)."""
    out = []
    if not _total(counts["tc_wmma"], "HMMA") or not _total(counts["tc_wmma"], "LDSM"):
        out.append("WMMA does not compile to HMMA and LDSM")
    plain, cp = counts["tc_swizzle"], counts["tc_async"]
    if (_total(plain, "LDG.E.128"), _total(plain, "STS.128"), _total(plain, "LDGSTS")) != (16, 16, 0):
        out.append("tc_swizzle does not copy with 16 LDG.E.128 and 16 STS.128")
    if (_total(cp, "LDGSTS"), _total(cp, "LDG.E.128"), _total(cp, "STS.128")) != (16, 0, 0):
        out.append("tc_async does not copy with 16 LDGSTS alone")
    if not _total(counts["tc_stages"], "LDGSTS") > 16:
        out.append("tc_stages has no more LDGSTS than tc_async")
    for step in ("tc_mma", "tc_swizzle", "tc_async", "tc_stages", "tc_prefetch", "tc_wide", "tc_inner"):
        extra = 8 if step in ("tc_prefetch", "tc_wide", "tc_inner") else 0
        if 4 * (_total(counts[step], "LDSM") - extra) != _total(counts[step], "HMMA.16816"):
            out.append(f"{step} does not issue one LDSM per 4 HMMA.16816 (+ {extra})")
    wide, inner = counts["tc_wide"], counts["tc_inner"]
    if any(_total(inner, op) != _total(wide, op) for op in ("HMMA", "LDSM")) or \
            _total(inner, "LDGSTS") != 2 * _total(wide, "LDGSTS"):
        out.append("tc_inner is not tc_wide with each copy twice")
    if "tc_tail" in counts:
        tail = counts["tc_tail"]
        if any(_total(tail, op) != 2 * _total(inner, op) for op in ("HMMA", "LDSM", "LDGSTS")) or not _total(tail, "REDG"):
            out.append("tc_tail is not tc_inner's loop twice with REDG adds")
    return out


def probe_problems(counts: dict[str, dict]) -> list[str]:
    """Chapter 8's ceiling probe (``counts`` by entry point, with HMMA and the register moves MOV and IMAD.MOV): its
    mma.sync take their operands where they are, fewer than one move per 8 HMMA. With one operand register for every
    operand the compiler copied it into the consecutive registers each mma.sync takes, 13 moves per 40 HMMA, and the
    probe measured 3.3% less than the instruction does (results/probe-data-h200.txt)."""
    out = []
    for name, c in counts.items():
        hmma, moves = _total(c, "HMMA"), _total(c, "MOV") + _total(c, "IMAD.MOV")
        if not hmma or 8 * moves >= hmma:
            out.append(f"{name}: {hmma} HMMA and {moves} register moves")
    return out


def bank_model_problems(ops: dict, layout: str) -> list[str]:
    """Chapter 4: per phase of 32 FMAs (one k-tile of a 32 x 32 block), the shared-memory instructions of the SASS are
    those of the bank model (gemmlab.models.banks.tiled_shared_instructions): ``ops`` counts LDS, STS and FFMA."""
    from gemmlab.models import banks

    per_phase = {op: n * 32 // ops["FFMA"] for op, n in ops.items() if op != "FFMA"}
    model = {}
    for ins in banks.tiled_shared_instructions(32, layout):
        model[ins.opcode] = model.get(ins.opcode, 0) + ins.per_phase
    return [] if per_phase == model else [f"{layout}: SASS {per_phase}, model {model}"]


def vector_load_problems(vector: dict, scalar: dict) -> list[str]:
    """Chapter 7: the fast kernel loads with LDG.E.128 (and LDG.E.64 for rows of an even length), its scalar switch
    with 4-byte loads alone."""
    out = []
    if not _total(vector, "LDG.E.128"):
        out.append("the vector path has no LDG.E.128")
    if _total(scalar, "LDG.E.128") or _total(scalar, "LDG.E.64"):
        out.append("the scalar path has wide loads")
    return out


def counted_loop_problems(counted: str, strided: str) -> list[str]:
    """Chapter 6: the same 512 FFMA and 32 LDS.128 in both kernels; the loop that counts passes (regtile2d_t) has
    exactly 8 global loads and 8 shared stores, all the loads first, and fewer branches than the strided loop
    (regtile2d_t_strided), which has more loads in its code. Arguments: the two SASS listings."""
    out = []
    from gemmlab.runtime import compiler

    full = {"counted": compiler.opcodes(counted), "strided": compiler.opcodes(strided)}
    ops = {name: [op.split(".")[0] for op in listing] for name, listing in full.items()}
    wide = {name: listing.count("LDS.128") for name, listing in full.items()}
    if {n: o.count("FFMA") for n, o in ops.items()} != {"counted": 512, "strided": 512} or set(wide.values()) != {32}:
        out.append("not the same 512 FFMA and 32 LDS.128 in both")
    c = ops["counted"]
    loads, stores = [i for i, op in enumerate(c) if op == "LDG"], [i for i, op in enumerate(c) if op == "STS"]
    if len(loads) != 8 or len(stores) != 8 or max(loads) > min(stores):
        out.append("the counted loop does not load 8 values, all before its 8 stores")
    if not c.count("BRA") < ops["strided"].count("BRA") or not ops["strided"].count("LDG") > 8:
        out.append("the strided loop is not the one with more branches and more loads in its code")
    return out


def tma_step_problems(counts: dict) -> list[str]:
    """Chapter 8's Hopper step (``tc_tma_ws``, sm_90a): its copies are the copy engine's, five boxes per tile (one of
    A, four of B) and no ``cp.async`` (LDGSTS); the multiplying warps keep ``tc_inner``'s one LDSM per 4 HMMA.16816
    (+ 8 for the first fragments) and meet one ``__syncthreads()`` only, before the loop (the barriers' set-up); the
    producer gives registers back and the others take them (``setmaxnreg``: USETMAXREG); no local memory."""
    out = []
    if _total(counts, "LDL") or _total(counts, "STL"):
        out.append("it uses local memory")
    if _total(counts, "UTMALDG") != 5 or _total(counts, "LDGSTS"):
        out.append(f"it copies with {_total(counts, 'UTMALDG')} UTMALDG and {_total(counts, 'LDGSTS')} LDGSTS, not 5 and 0")
    if not _total(counts, "HMMA.16816") or 4 * (_total(counts, "LDSM") - 8) != _total(counts, "HMMA.16816"):
        out.append("it does not issue one LDSM per 4 HMMA.16816 (+ 8)")
    if _total(counts, "BAR") != 1:
        out.append(f"it has {_total(counts, 'BAR')} block barriers, not the one before the loop")
    if not _total(counts, "USETMAXREG.DEALLOC") or not _total(counts, "USETMAXREG.TRY_ALLOC"):
        out.append("it does not hand registers from the producer to the multiplying warps")
    return out
