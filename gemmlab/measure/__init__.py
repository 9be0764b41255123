"""Measuring the kernels: the bench against cuBLAS and its JSON, the precisions' ladders, ceilings and the probes
that find them, the autotuner, Nsight Compute counters, the driver's occupancy answer, and the exercise checks.
"""
