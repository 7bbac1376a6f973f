"""python -m reportgen: the command line."""
from .entry import run

run()
