"""reportgen: GPU memory capacity planning for large-language-model work."""
import signal as _signal

from .errors import INTERRUPTS as _INTERRUPTS

__version__ = "0.1.0"

# NumPy starts a BLAS worker thread when it is imported. An interrupt goes to any thread that does not
# block it, and a build's commit (writers/atomic.py) holds interrupts back by blocking them in the main
# thread: a thread started while they are blocked keeps them blocked, so they stay the main thread's.
_mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, _INTERRUPTS)
try:
    import numpy  # noqa: F401
finally:
    _signal.pthread_sigmask(_signal.SIG_SETMASK, _mask)
