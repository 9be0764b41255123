"""Kernel files with a few lines changed, for the experiments in drafts/: each edit must find its text exactly once,
so that an experiment stops with a clear message when the kernel file it rewrites has changed under it."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def replace_once(text: str, edits, what: str) -> str:
    """``text`` with each ``(old, new)`` of ``edits`` applied; ``what`` names the text in the message."""
    for old, new in edits:
        assert text.count(old) == 1, f"{what} changed: cannot find {old.strip()[:60]!r}"
        text = text.replace(old, new)
    return text


def kernel_variant(name: str, *edits) -> str:
    """``kernels/<name>`` with ``edits`` applied (:func:`replace_once`)."""
    return replace_once((ROOT / "kernels" / name).read_text(), edits, f"kernels/{name}")
