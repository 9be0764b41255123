"""The course's models, in pure Python and NumPy: everything here runs with no GPU, no driver and no compiler.

Global-memory traffic and the roofline, the bank model, the occupancy calculator, tensor-core fragments and
swizzles, chapter 8's ``cp.async`` ring over time, Hopper's tensor maps and ``wgmma`` descriptors, chapter 9's ring
of stages and its mbarriers (the pipeline protocol), waves, split-K, stream-K and the shared last wave, the float64
reference and its error bound, and the plain-text tables that every subpackage prints.
"""
