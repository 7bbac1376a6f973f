"""The command's entry point (python -m reportgen and the reportgen script): Ctrl-C while the
modules load is answered as during a command, in one line, not with a traceback."""
import sys

from .errors import Interrupted


def run() -> None:
    try:
        from .cli import main
    except KeyboardInterrupt:
        interrupt = Interrupted()
        sys.stderr.write(interrupt.message() + "\n")
        sys.exit(interrupt.exit_status)
    main()
