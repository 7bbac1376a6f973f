"""NumPy, imported at first use, with the interrupt signals blocked.

A command that computes one scenario (`estimate`, `plan` of a single layout, `--help`) never reads an
array, and NumPy's import is the largest part of its start-up (0.1 s of 0.3 s, #35): `np` is a stand-in
that imports NumPy when a name is first read from it, then holds NumPy's names itself.

NumPy's BLAS may start worker threads when it is imported (one, unless OPENBLAS_NUM_THREADS says
otherwise: _imported sets it to 1 where unset). An interrupt goes to any thread that does not
block it, and a build's commit (writers/atomic.py) holds interrupts back by blocking them in the main
thread: a thread started while they are blocked keeps them blocked, so they stay the main thread's.
Every module of the package takes NumPy from here. (An interrupt that arrives meanwhile is delivered
when the mask is restored.)
"""
import os
import signal
from types import ModuleType

from ..errors import INTERRUPTS


class _NumPy:
    def __getattr__(self, name: str):
        numpy = _imported()
        self.__dict__.update(vars(numpy))  # later reads find NumPy's names here, at the cost of a dict lookup
        return getattr(numpy, name)


def _imported() -> ModuleType:
    # The arrays are element by element: BLAS threads buy nothing, and where one cannot start (a tight
    # memory limit) OpenBLAS raises SIGINT, which would read as the user's interrupt.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
    try:
        import numpy
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return numpy


np = _NumPy()

__all__ = ["np"]
