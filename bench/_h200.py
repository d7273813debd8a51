"""The H200 assumptions of the full-scale estimates, shared by ``bench_ch6_full_scale.py``
and ``bench_ch7_full_scale.py`` (benchmark-estimate constants, not library behaviour).

Both bounds are pessimistic (the scripts' docstrings, step 3): a step takes at least its
FLOPs at ``EFFICIENCY`` of ``H200_FP32_FLOPS`` and at least ``LAUNCH_SECONDS`` per kernel.
The scripts run as ``python bench/<script>.py``, which puts ``bench/`` on the import path.
"""

#: FLOP/s of one H200 in FP32 without tensor cores, order of magnitude (~60 TFLOP/s)
H200_FP32_FLOPS = 60e12
#: the share of that peak the chapters' small matrix products are assumed to reach
EFFICIENCY = 0.10
#: seconds per kernel: an eager-mode launch + dispatch cost
LAUNCH_SECONDS = 10e-6
