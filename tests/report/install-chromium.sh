#!/bin/sh
# Installs Debian's Chromium for the browser tests (tests/report/test_browser.py), when this
# machine lets us (root with apt-get; `make test` runs it through `make hostdeps`).
# Playwright drives it as its executable; `playwright install` is not used: it downloads
# browsers from a CDN, where Debian's package comes from the Debian mirror.
# Never fails the build: without Chromium the browser tests skip and say why.
# Keep the names in step with CHROMIUM_NAMES in tests/report/test_browser.py.
for name in chromium chromium-browser google-chrome; do
  command -v $name >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "hostdeps: no Chromium; not root or no apt-get, so the browser tests will skip" >&2
  exit 0
fi
echo "hostdeps: installing chromium for the browser tests (about 30 s)"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium >/dev/null 2>&1 \
  || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } \
  || echo "hostdeps: apt-get install chromium failed; the browser tests will skip" >&2
exit 0
