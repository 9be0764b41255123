"""Finding PyCUDA, the CUDA driver and a GPU: the bottom layer of gemmlab's GPU side.

Every GPU entry point of gemmlab goes through :func:`cuda`. When something is missing it
raises :class:`GPUUnavailable` whose message is one sentence saying what and what to do,
instead of a traceback from deep inside PyCUDA.
"""

from __future__ import annotations

import ctypes
import functools
import shutil
from typing import Any

COLAB_HINT = "on Colab, choose Runtime > Change runtime type > T4 GPU and run the setup cell again"


class GPUUnavailable(RuntimeError):
    """No usable GPU: PyCUDA, the CUDA driver, a device or nvcc is missing."""


class DriverError(RuntimeError):
    """A CUDA driver call made through ``ctypes`` failed; the message names the call and the driver's error."""


@functools.cache
def libcuda() -> ctypes.CDLL:
    """The CUDA driver library, for the few calls PyCUDA has no binding for (occupancy, tensor maps)."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise GPUUnavailable("the CUDA driver library (libcuda) was not found on this machine.")


def driver_error_text(status: int) -> str:
    """The driver's own words for a ``CUresult`` other than success (``cuGetErrorString``)."""
    text = ctypes.c_char_p()
    libcuda().cuGetErrorString(status, ctypes.byref(text))
    return (text.value or b"error %d" % status).decode()


def driver_call(fn_name: str, *args: object) -> None:
    """Call ``fn_name`` of :func:`libcuda`; a status other than success raises :class:`DriverError`."""
    status = getattr(libcuda(), fn_name)(*args)
    if status != 0:
        raise DriverError(f"{fn_name} failed: {driver_error_text(status)}")


_driver: Any = None     # pycuda.driver once found (PyCUDA has no type information)


def cuda() -> Any:
    """Return ``pycuda.driver`` with the primary context of device 0 current.

    Raises :class:`GPUUnavailable` with a one-sentence reason when PyCUDA, the driver
    or a GPU is missing. The primary context is the one the CUDA runtime (and so CuPy and
    cuBLAS) uses too, so gemmlab's kernels and the cuBLAS baseline share one context.
    """
    global _driver
    if _driver is not None:
        return _driver
    try:
        import pycuda.driver as drv
    except ImportError as exc:
        if "libcuda" in str(exc):
            raise GPUUnavailable(
                "The CUDA driver (libcuda) is not installed on this machine, so no kernel can run here; "
                + COLAB_HINT + ".") from None
        raise GPUUnavailable(
            "PyCUDA is not installed, so gemmlab cannot run kernels here: install it with "
            "`pip install pycuda` on a machine with an NVIDIA GPU and the CUDA toolkit "
            "(on Colab the setup cell does this).") from None
    try:
        drv.init()
        count = drv.Device.count()
    except drv.Error as exc:
        raise GPUUnavailable(f"The CUDA driver found no usable GPU ({exc}); {COLAB_HINT}.") from None
    if count == 0:
        raise GPUUnavailable(f"The CUDA driver sees no GPU; {COLAB_HINT}.")
    import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes device 0's primary context)
    _driver = drv
    return drv


def require_nvcc() -> str:
    """Return the path of ``nvcc``, or raise :class:`GPUUnavailable` if it is not on PATH."""
    path = shutil.which("nvcc")
    if path is None:
        raise GPUUnavailable(
            "nvcc, the CUDA compiler PyCUDA uses to build the course's kernels, is not on PATH: "
            "install the CUDA toolkit or add its bin/ folder (often /usr/local/cuda/bin) to PATH.")
    return path


def unavailable_reason() -> str | None:
    """``None`` if a GPU is usable here, else the one-sentence reason (used to skip GPU tests)."""
    try:
        cuda()
        require_nvcc()
    except GPUUnavailable as exc:
        return str(exc)
    return None
