"""NumPy, imported with the interrupt signals blocked.

NumPy starts a BLAS worker thread when it is imported. An interrupt goes to any thread that does not
block it, and a build's commit (writers/atomic.py) holds interrupts back by blocking them in the main
thread: a thread started while they are blocked keeps them blocked, so they stay the main thread's.
Every module of the package takes NumPy from here. (An interrupt that arrives meanwhile is delivered
when the mask is restored: while the CLI loads, reportgen.entry answers it.)
"""
import signal

from .errors import INTERRUPTS

_mask = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
try:
    import numpy as np
finally:
    signal.pthread_sigmask(signal.SIG_SETMASK, _mask)

__all__ = ["np"]
