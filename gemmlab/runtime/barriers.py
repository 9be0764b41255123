"""A static check for the chapter 3 pitfall: an exit that some threads can take before a barrier.

``__syncthreads()`` must be reached by every thread of the block (CUDA C++ Programming Guide);
a thread that has returned never arrives. :func:`check_source` flags, in each function of a CUDA
source, every ``return`` (or ``asm("exit;")``) that can run before a barrier of the same function:
one that stands before a later barrier, or inside a loop whose body holds a barrier (the next
iteration reaches it). A call to a function of the same file that contains a barrier counts as a
barrier. A ``return`` inside a lambda leaves the lambda only: it is checked against the barriers of
that lambda's body. An exit that every thread of a block takes or none does is allowed, as the Programming Guide
allows a barrier under a condition that is the same across the block: one guarded only by ``if`` conditions that
read nothing but ``blockIdx``, ``gridDim``, ``blockDim``, the function's parameters, constants and names in
capitals (template parameters, macros). Parameters count as the same across the block, as the course passes them to
every function that holds a barrier (a kernel's own parameters are so by definition); a local variable, a call or a
memory read counts as one thread's own, even where it is not. It reads text, not the compiler's control flow: it
can be fooled by macros or by barriers in other files, and it is meant for the course's kernels, not as a general
verifier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

BARRIER = re.compile(r"\b(__syncthreads(?:_count|_and|_or)?|__barrier_sync)\s*\(")
EXIT = re.compile(r"\breturn\b|asm\s*(?:volatile\s*)?\(\s*\"exit;\"")
# A lambda's introducer and parameters up to its body's brace: `[&](int k) {`, `[=] mutable {`.
LAMBDA = re.compile(r"\[[^\[\];{}]*\]\s*(?:\([^;{}]*\))?\s*(?:mutable\s*)?(?:->\s*[\w:<>]+\s*)?\{")
FUNCTION = re.compile(r"(?:__global__|__device__)[^;{}()]*?\b(\w+)\s*\([^;{}]*\)\s*(?:const\s*)?\{")


@dataclass(frozen=True)
class Finding:
    path: str
    function: str
    line: int
    barrier_line: int

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: an exit in {self.function}() can be taken before the barrier at line "
                f"{self.barrier_line}; threads that leave never arrive there")


def strip_comments_and_strings(src: str) -> str:
    """Blank out comments and string/char literals, keeping every newline (so line numbers hold).
    The string of an ``asm("exit;")`` is kept: it is code."""
    out, i, n = [], 0, len(src)
    while i < n:
        two = src[i:i + 2]
        if two == "//":
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src[i] in "\"'":
            q, j = src[i], i + 1
            while j < n and src[j] != q:
                j += 2 if src[j] == "\\" else 1
            literal = src[i:j + 1]
            out.append(literal if literal == '"exit;"' else q + re.sub(r"[^\n]", " ", literal[1:-1]) + q)
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def _body_end(code: str, open_brace: int) -> int:
    depth = 0
    for j in range(open_brace, len(code)):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        if depth == 0:
            return j
    return len(code) - 1


def _opening(code: str, close: int) -> int:
    """The index of the ``(`` or ``{`` that the ``)`` or ``}`` at ``close`` closes (-1 if none)."""
    pair = {")": "(", "}": "{"}[code[close]]
    depth, j = 0, close
    while j >= 0:
        depth += {code[close]: 1, pair: -1}.get(code[j], 0)
        if depth == 0:
            return j
        j -= 1
    return -1


def _functions(code: str) -> dict[str, tuple[int, int]]:
    """name -> (index of its opening brace, index of its closing brace)."""
    found = {}
    for m in FUNCTION.finditer(code):
        start = m.end() - 1
        found[m.group(1)] = (start, _body_end(code, start))
    return found


def _is_loop_body(code: str, brace: int) -> bool:
    """Whether the ``{`` at ``brace`` opens the body of a for, while or do loop."""
    j = brace - 1
    while j >= 0 and code[j].isspace():
        j -= 1
    if code[j] == ")":                      # for (...) {  /  while (...) {
        j = _opening(code, j)
        return re.search(r"\b(for|while)\s*$", code[:j]) is not None
    return re.search(r"\bdo\s*$", code[:j + 1]) is not None


def _loops(code: str, start: int, end: int) -> list[tuple[int, int]]:
    """(open, close) of every braced loop body between start and end."""
    return [(j, _body_end(code, j)) for j in range(start + 1, end) if code[j] == "{" and _is_loop_body(code, j)]


def _lambdas(code: str, start: int, end: int) -> list[tuple[int, int]]:
    """(open, close) of every lambda body between start and end. A `[` right after a name, `]` or `)` is an
    index or a declarator (`float acc[4] {}`), not a lambda."""
    found = []
    for m in LAMBDA.finditer(code, start, end):
        before = code[:m.start()].rstrip()[-1:]
        if not (before.isalnum() or before in "_])"):
            found.append((m.end() - 1, _body_end(code, m.end() - 1)))
    return found


UNIFORM_NAMES = {"blockIdx", "gridDim", "blockDim", "x", "y", "z", "static_cast", "int", "unsigned", "long", "size_t",
                 "const", "true", "false"}
"""Names a block-uniform condition may read besides the function's parameters and names in capitals."""


def _parameters(code: str, open_brace: int) -> set[str]:
    """The parameter names of the function whose body opens at ``open_brace``."""
    close = code.rindex(")", 0, open_brace)
    j = _opening(code, close)
    names = set()
    for part in code[j + 1:close].split(","):
        words = re.findall(r"[A-Za-z_]\w*", part.split("=")[0].split("[")[0])
        if words:
            names.add(words[-1])
    return names


def _condition_before(code: str, end: int) -> str | None:
    """The condition of an ``if (...)`` that ends just before ``end`` (ignoring spaces), or None."""
    j = end - 1
    while j >= 0 and code[j].isspace():
        j -= 1
    if j < 0 or code[j] != ")":
        return None
    close, j = j, _opening(code, j)
    return code[j + 1:close] if re.search(r"\bif\s*$", code[:j]) else None


def _condition_of_else(code: str, brace: int) -> str | None:
    """The condition of the ``if`` whose braced body ends just before the ``else`` that opens at ``brace``."""
    close = code.rindex("else", 0, brace) - 1
    while close >= 0 and code[close].isspace():
        close -= 1
    if close < 0 or code[close] != "}":
        return None
    return _condition_before(code, _opening(code, close))


def _uniform(condition: str, params: set[str]) -> bool:
    """Whether ``condition`` reads only what is the same for every thread of a block (see the module's notes)."""
    bare = condition.replace("&&", " ").replace("||", " ")
    if "[" in bare or "->" in bare or re.search(r"(^|[(,!=<>+\-*/%?:])\s*[*&]\s*\w", bare):
        return False                                    # a memory read or a dereference
    if re.search(r"\b(?!static_cast\b)[A-Za-z_]\w*\s*\(", bare):
        return False                                    # a call
    return all(n in UNIFORM_NAMES or n in params or n.isupper() for n in re.findall(r"[A-Za-z_]\w*", bare))


def _exit_is_uniform(code: str, p: int, body_lo: int, params: set[str]) -> bool:
    """Whether every thread of a block takes the exit at ``p`` or none does: each block between it and the body
    it leaves (``body_lo``, a function's or a lambda's opening brace) is the body of an ``if`` (or of its ``else``)
    with a uniform condition, and so is an ``if`` without braces right before it."""
    guards = []
    bare = _condition_before(code, p)
    if bare is not None:
        guards.append(bare)
    depth, j = 0, p - 1
    while j > body_lo:
        c = code[j]
        if c == "}":
            depth += 1
        elif c == "{":
            if depth == 0:
                cond = _condition_before(code, j)
                if cond is None and re.search(r"\belse\s*$", code[:j]):
                    cond = _condition_of_else(code, j)
                if cond is None:
                    return False                        # a loop, a plain block: not followed
                guards.append(cond)
            else:
                depth -= 1
        j -= 1
    return bool(guards) and all(_uniform(g, params) for g in guards)


def check_source(src: str, path: str = "<source>") -> list[Finding]:
    """Every exit that some thread can take before a barrier, in every function of ``src``."""
    code = strip_comments_and_strings(src)
    line = lambda pos: code.count("\n", 0, pos) + 1
    funcs = _functions(code)
    has_barrier = {name: bool(BARRIER.search(code, a, b)) for name, (a, b) in funcs.items()}
    callers = re.compile(r"\b(" + "|".join(re.escape(f) for f, b in has_barrier.items() if b) + r")\s*(?:<[^;{}()]*>)?\s*\(") \
        if any(has_barrier.values()) else None
    findings = []
    for name, (a, b) in funcs.items():
        barriers = [m.start() for m in BARRIER.finditer(code, a, b)]
        if callers:
            barriers += [m.start() for m in callers.finditer(code, a, b) if m.group(1) != name]
        if not barriers:
            continue
        loops = _loops(code, a, b)
        lambdas = _lambdas(code, a, b)
        for m in EXIT.finditer(code, a, b):
            p = m.start()
            inside = [(lo, hi) for lo, hi in lambdas if lo < p < hi]
            body_lo, body_hi = max(inside) if inside else (a, b)    # the innermost body the exit leaves
            mine = [q for q in barriers if body_lo < q < body_hi]
            later = [q for q in mine if q > p]
            looped = [q for lo, hi in loops if body_lo < lo < p < hi for q in mine if lo < q < hi]
            hit = sorted(later + looped)
            if hit and _exit_is_uniform(code, p, body_lo, set() if inside else _parameters(code, a)):
                continue                                # the whole block leaves together
            if hit:
                findings.append(Finding(path, name, line(p), line(hit[0])))
    return sorted(findings, key=lambda f: f.line)


def check_file(path: str | Path) -> list[Finding]:
    from . import provenance

    p = Path(path)
    return check_source(p.read_text(encoding="utf-8"), provenance.display_path(p))
