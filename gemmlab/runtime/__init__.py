"""Finding PyCUDA, the driver and a GPU (or one sentence saying what is missing), and what every kernel needs to run:
compiling with its provenance line, the device's limits, driver calls PyCUDA has no binding for (tensor maps),
timing, and the watchdog for code that may hang. Knows no kernel family: those are :mod:`gemmlab.gemm`'s.
"""
