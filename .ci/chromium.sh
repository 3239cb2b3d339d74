#!/usr/bin/env bash
# The report's browser test (tests/platform/test_report_browser.py) renders report.html in
# headless Chromium, driven through ChromeDriver: Debian's `chromium` and `chromium-driver`.
# Install them where they are missing and this is root with apt-get. Never fails the
# build: without a browser that test skips and says why.
set -u
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: no chromium/chromedriver and no root apt-get to install them: the browser" \
         "test will skip"
    exit 0
fi
echo "installing Debian's chromium and chromium-driver for the report's browser test"
if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
       && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              chromium chromium-driver >/dev/null; }; then
    echo "note: could not install chromium: the browser test will skip"
fi
exit 0
