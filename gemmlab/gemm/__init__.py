"""The course's GEMM kernels: each family's named configurations (which generate its entry points) and launcher,
the compile units of the course's kernel files, the input checks before every launch, and the registry of every
kernel by name (``gemmlab.kernels()``, ``gemmlab.lookup()``).
"""
