"""What every kernel needs to run, whatever its family: finding PyCUDA, the driver and a GPU (or one sentence saying
what is missing; installing PyCUDA on Colab), the device's limits and the software of the run, compiling a unit with
its provenance line, chapter 3's static barrier check of a kernel file, driver calls PyCUDA has no binding for (tensor
maps), timing, sizes scaled to the GPU, and the watchdog for code that may hang. The kernel families are
:mod:`gemmlab.gemm`'s.
"""
