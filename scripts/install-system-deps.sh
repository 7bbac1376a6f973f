#!/usr/bin/env bash
# Install the Debian packages that reportgen's tests and reports need, only
# when they are missing. Idempotent: a second run does nothing (no apt-get
# update, no network) when everything is already installed.
#
#   libreoffice-calc-nogui  headless LibreOffice Calc: recalculates the
#                           workbook's formulas in tests (tests/lo.py)
#   poppler-utils           pdffonts / pdftoppm / pdfinfo / pdftotext for
#                           checking the PDF report
#   libharfbuzz-subset0     lets WeasyPrint (PDF) and the HTML writer subset fonts
#                           with HarfBuzz (20-50x faster than fontTools with CJK fonts)
#   chromium                a real browser for the HTML report's tests (tests/test_browser.py,
#                           driven by the playwright Python package; no browser download)
#
# Usage: scripts/install-system-deps.sh   (as root, or with sudo available)
set -euo pipefail

PACKAGES=(libreoffice-calc-nogui poppler-utils libharfbuzz-subset0 chromium)

missing=()
for pkg in "${PACKAGES[@]}"; do
    # dpkg -s exits 0 for packages in state "deinstall" too; check the status.
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-system-deps: all present (${PACKAGES[*]})"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-system-deps: missing ${missing[*]} and not root (no sudo)" >&2
        exit 1
    fi
fi

echo "install-system-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"

# Verify the tools the project calls are really there now.
for cmd in soffice pdffonts pdftoppm chromium; do
    command -v "$cmd" >/dev/null 2>&1 || {
        echo "install-system-deps: '$cmd' not found after install" >&2
        exit 1
    }
done
echo "install-system-deps: done"
