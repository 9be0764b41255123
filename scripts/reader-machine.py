#!/usr/bin/env python3
"""Execute every chapter as on a reader's GPU machine that has only the GPU requirements.

That machine has a GPU, its driver, nvcc and PyCUDA, but no CuPy, no ``cuobjdump``/``nvdisasm``, no
``compute-sanitizer``, and an ``ncu`` that is refused the performance counters (``ERR_NVGPUCTRPERM``),
as on most shared and cloud machines. This script builds exactly that view of the machine it runs on
(a PATH holding only an ``nvcc`` wrapper and a refusing ``ncu``, and a ``cupy`` that cannot be
imported), checks that the tools are really out of sight, executes copies of the chapters (the
committed notebooks are not touched) and prints one line per chapter: its outcome, its time and the
one-sentence notes it printed for what was missing. Exits 1 if any chapter failed.

    python3 scripts/reader-machine.py OUTDIR [chapters/NN_*.ipynb ...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab.measure import bench  # noqa: E402  (the checkout's gemmlab, importable without a GPU)
from gemmlab.runtime import compiler, watchdog  # noqa: E402  (the checkout's gemmlab, importable without a GPU)
HIDDEN = ("cuobjdump", "nvdisasm", "compute-sanitizer")
REFUSING_NCU = """#!/bin/sh
echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0."
exit 1
"""
# What each missing tool makes a chapter say: the first words of gemmlab's own sentences.
NOTES = {"no CuPy": bench.NO_CUBLAS[:40], "no cuobjdump": compiler.NO_CUOBJDUMP[:40],
         "no compute-sanitizer": watchdog.NO_SANITIZER[:40], "ncu refused": "ERR_NVGPUCTRPERM"}


def reader_environment(out: Path) -> dict[str, str]:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        sys.exit("reader-machine: nvcc is needed (PyCUDA compiles the kernels with it)")
    bin_dir, shadow = out / "bin", out / "python"
    (shadow / "cupy").mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    # a wrapper, not a link: tools are looked for beside nvcc's real path, which is then this folder
    (bin_dir / "nvcc").write_text(f'#!/bin/sh\nexec "{os.path.realpath(nvcc)}" "$@"\n')
    (bin_dir / "ncu").write_text(REFUSING_NCU)
    for tool in ("nvcc", "ncu"):
        (bin_dir / tool).chmod(0o755)
    (shadow / "cupy" / "__init__.py").write_text('raise ImportError("CuPy is hidden: this run imitates a machine without it")\n')
    keep = [str(bin_dir), os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]
    env = dict(os.environ, PATH=os.pathsep.join(dict.fromkeys(keep)), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(shadow), str(ROOT), os.environ.get("PYTHONPATH", "")])))
    env.pop("GEMMLAB_ARCH", None)
    return env


def check_hidden(env: dict[str, str]) -> None:
    """Fail loudly if a tool is still visible, to gemmlab or to the shell: the run would prove nothing."""
    probe = ("import importlib.util as u, gemmlab.runtime.watchdog as w; "
             f"print([t for t in {HIDDEN!r} if w.find_tool(t)], u.find_spec('cupy') is not None)")
    seen = subprocess.run([sys.executable, "-c", probe + "\ntry:\n import cupy\nexcept ImportError: print('no cupy')"],
                          env=env, capture_output=True, text=True, cwd=ROOT)
    visible = [t for t in HIDDEN if shutil.which(t, path=env["PATH"])]
    if visible or "[]" not in seen.stdout or "no cupy" not in seen.stdout:
        sys.exit(f"reader-machine: still visible: {visible} / {seen.stdout.strip()} {seen.stderr.strip()[-300:]}")


def execute(path: Path, out: Path, env: dict[str, str]) -> tuple[str, float, list[str]]:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start, outcome = time.monotonic(), "ok"
    saved = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)                       # the kernel inherits this process's environment
    try:
        client.execute()
    except CellExecutionError as exc:
        lines = [l for l in str(exc).splitlines() if l.strip()]
        outcome = "ERROR " + (lines[-1][:200] if lines else "")
    except Exception as exc:                     # a dead kernel, a timeout
        outcome = f"ERROR {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        os.environ.clear()
        os.environ.update(saved)
    seconds = time.monotonic() - start
    nbformat.write(nb, out / path.name)
    text = "\n".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    return outcome, seconds, [name for name, needle in NOTES.items() if needle in text]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0]).resolve()
    chapters = [Path(p).resolve() for p in argv[1:]] or sorted((ROOT / "chapters").glob("*.ipynb"))
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    env = reader_environment(out)
    check_hidden(env)
    failed = 0
    print("chapter                          outcome  seconds  notes printed for what is missing")
    for path in chapters:
        outcome, seconds, notes = execute(path, out / "notebooks", env)
        failed += outcome != "ok"
        print(f"{path.name:<32} {outcome if outcome == 'ok' else 'ERROR':<7}  {seconds:7.0f}  {', '.join(notes) or '-'}")
        if outcome != "ok":
            print("    " + outcome)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
