"""Output writers: each reads one Report and writes one format."""

# The workbook's Scenarios rows with live formulas by default; a bigger sweep's other rows are values. LibreOffice 7.4
# loads a 10,000-scenario book in 52 s with every row live, 12 s with 2,000 (6.6 s with none): benchmarks/lo_load.py.
LIVE_ROWS = 2000
