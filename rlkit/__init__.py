"""rlkit: the runtime that the rl-capstones handouts import.

Environments (vectorised CartPole, the section's four-prompt verifier
problem), a small numpy MLP with backprop, Adam, progress bars and plots.
It holds no solution of any assignment.
"""
__version__ = "0.1.0"

from .memory import keep_freed_memory as _keep_freed_memory
from .threads import limit_blas_threads as _limit_blas_threads

# Small matrices: a second BLAS thread made training runs 5-8x slower here.
_limit_blas_threads(1)
# Reuse freed (B, 64) temporaries instead of page-faulting fresh ones: -1/3 per update.
_keep_freed_memory()
