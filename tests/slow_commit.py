"""`python tests/slow_commit.py SECONDS ARGS…`: `reportgen ARGS…` whose commits sleep SECONDS before
each rename after the first, so that a test can signal a build between two renames.

The delay is injected here, by wrapping the commit's rename step: nothing in reportgen reads a
test-only setting (issue #36: an environment variable that did could make a build mix its outputs).
"""
import sys
import time

from reportgen.entry import run
from reportgen.writers import atomic


def slowed(install, delay_s: float):
    renamed = []

    def install_slowly(tmp, path):
        if renamed:
            time.sleep(delay_s)
        install(tmp, path)
        renamed.append(path)
    return install_slowly


if __name__ == "__main__":
    atomic._install = slowed(atomic._install, float(sys.argv[1]))
    run(sys.argv[2:], prog_name="reportgen")
