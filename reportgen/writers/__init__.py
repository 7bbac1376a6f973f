"""Output writers: each reads one Report and writes one format."""

# The workbook's Scenarios rows with live formulas by default; a bigger sweep's other rows are values. LibreOffice 7.4
# loads a 10,000-scenario book in 52 s with every row live, 11 s with 2,000 (docs/performance.md, Live rows).
LIVE_ROWS = 2000
