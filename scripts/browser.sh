#!/usr/bin/env bash
# Make sure headless Chromium and its driver are here, for the web page's browser tests.
#
# The tests drive Debian's chromium with Debian's chromium-driver through Selenium, never a
# browser or driver that Selenium Manager would download. When either is missing and we are
# root, install both (apt-get update once, then install). Exits 0 when both are there; 1 (with
# the reason) otherwise.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
CHROMEDRIVER=/usr/bin/chromedriver

if [ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
    echo "browser: $CHROMIUM or $CHROMEDRIVER is missing, and only root can install them here" >&2
    exit 1
fi
echo "browser: installing Debian's chromium and chromium-driver" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
if [ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ]; then exit 0; fi
echo "browser: chromium or chromium-driver did not install to $CHROMIUM / $CHROMEDRIVER" >&2
exit 1
