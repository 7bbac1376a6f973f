"""python -m reportgen: the command line."""
from .cli import main

main()
