#!/usr/bin/env bash
# tests/report_browser_test.sh BLKLAB_BINARY SOURCE_DIR
#
# `blklab compare --plot=DIR` writes report.html; this loads it in a real
# headless browser (Debian's Chromium), takes a screenshot and checks the
# picture: the requested size, mostly not blank, and the bar charts drawn (a
# good share of pixels in the bars' colour). A page that fails to render,
# an SVG that does not load or a chart without bars fails the test.
# Exit 77 (skip) when chromium is missing (scripts/setup installs it).
set -u
BLKLAB=${1:?usage: report_browser_test.sh BLKLAB_BINARY SOURCE_DIR}
SRC=${2:?usage: report_browser_test.sh BLKLAB_BINARY SOURCE_DIR}
. "$(dirname "$0")/checks.sh"
checks_begin report-browser

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "SKIP: chromium not found (scripts/setup installs it)"; exit 77; }

if ! "$BLKLAB" compare "$SRC/examples/compare/schedulers.yaml" --plot="$TMP/plot" >"$TMP/table.txt" 2>"$TMP/compare.err"; then
  fail "compare --plot: $(head -c 300 "$TMP/compare.err")"
  checks_end report-browser
fi
[ -s "$TMP/plot/report.html" ] || fail "no report.html"

# Headless Chromium as root needs --no-sandbox; its own profile and cache
# under $TMP so nothing leaks into the user's home.
export HOME="$TMP/home"
mkdir -p "$HOME"
if timeout 120 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
     --user-data-dir="$TMP/profile" --window-size=1280,2400 --screenshot="$TMP/shot.png" \
     "file://$TMP/plot/report.html" >"$TMP/chromium.log" 2>&1 && [ -s "$TMP/shot.png" ]; then
  pass "chromium rendered report.html ($(stat -c %s "$TMP/shot.png") bytes of PNG)"
else
  fail "chromium: $(tail -c 500 "$TMP/chromium.log")"
  checks_end report-browser
fi

if python3 - "$TMP/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, hdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = hdr
assert depth == 8 and ctype in (2, 6) and interlace == 0, hdr
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
rows, prev, i = [], bytearray(stride), 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
assert (w, h) == (1280, 2400), (w, h)
total = w * h
ink = blue = 0
for line in rows:
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        if r < 240 or g < 240 or b < 240:
            ink += 1
        if b > 150 and r < 100 and b - r > 80:  # the bars' blue
            blue += 1
print(f"{w}x{h}: {100 * ink / total:.1f}% ink, {100 * blue / total:.2f}% bar blue")
assert ink / total > 0.05, "the page is (nearly) blank"
assert blue / total > 0.005, "no bars drawn"
PY
then
  pass "the screenshot shows the page and its bar charts"
else
  fail "the screenshot is blank or lacks the charts"
fi
checks_end report-browser
