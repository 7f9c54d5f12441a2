"""Runtime helpers shared by the ML modules. No Django."""

from __future__ import annotations

from typing import Any


def blas_threads(n: int = 1) -> Any:
    """Limit BLAS/OpenMP threads. On a small shared CPU, oversubscribed BLAS threads make a
    logistic-regression fit 20-50x slower than a single thread (measured: 0.06 s vs 2.8 s)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n)
