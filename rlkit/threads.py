"""Pin BLAS (OpenBLAS/MKL behind numpy) to a single thread.

Our matrices are tiny (batch x 64), and on them a multi-threaded BLAS spends
more time synchronising threads than multiplying: two BLAS threads made
small-matrix training runs 5-8x slower. Call ``limit_blas_threads()`` once,
early (e.g. at package import).
"""

import numpy as np  # noqa: F401  (loads numpy's BLAS so threadpoolctl can see it)
from threadpoolctl import threadpool_limits

_limiter = None  # keeps the active limit object alive


def limit_blas_threads(num_threads=1):
    """Limit every loaded BLAS library to ``num_threads`` threads (default 1).

    Safe to call more than once; the latest call wins. The limit stays in
    force for the rest of the process.

    Returns:
        the ``threadpoolctl.threadpool_limits`` object (rarely needed).
    """
    global _limiter
    _limiter = threadpool_limits(limits=int(num_threads), user_api="blas")
    return _limiter
