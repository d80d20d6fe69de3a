#!/usr/bin/env bash
# A picture of a KA_TRACE file as Chromium's trace viewer shows it (the viewer
# of chrome://tracing, from the Catapult project), for the documentation:
#
#   scripts/trace_screenshot.sh TRACE.json CATAPULT_DIR OUT.png [SECONDS]
#
# CATAPULT_DIR: a checkout of the Catapult project (github.com/catapult-project/
# catapult); its tracing/bin/trace2html makes one self-contained HTML file of
# the viewer and the trace. That page is opened in Chromium under Xvfb, given
# SECONDS (default 20) to import the trace, and the screen is saved as PNG.
# Needs Debian's chromium, xvfb and x11-apps (xwd), and python3 with numpy and
# matplotlib (to write the PNG). Users need none of this: they open the JSON
# file in chrome://tracing or at ui.perfetto.dev.
set -euo pipefail
trace=$(realpath "${1:?usage: trace_screenshot.sh TRACE.json CATAPULT_DIR OUT.png [SECONDS]}")
catapult=${2:?catapult dir}
out=${3:?OUT.png}
wait_s=${4:-20}
tmp=$(mktemp -d)
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"; }
pids=()
trap cleanup EXIT
python3 "$catapult/tracing/bin/trace2html" "$trace" --output="$tmp/trace.html" >/dev/null
disp=:$((90 + RANDOM % 100))
Xvfb "$disp" -screen 0 1400x700x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
sleep 2
DISPLAY=$disp chromium --test-type --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile" \
  --window-position=0,0 --window-size=1400,700 --app="file://$tmp/trace.html" >/dev/null 2>&1 &
pids+=($!)
sleep "$wait_s"
DISPLAY=$disp xwd -root -silent > "$tmp/screen.xwd"
/usr/bin/python3 - "$tmp/screen.xwd" "$out" <<'PY'
import struct, sys
import numpy as np
import matplotlib.image as mpimg
d = open(sys.argv[1], 'rb').read()
f = struct.unpack('>25I', d[:100])   # XWD header: size, ..., width, height, ..., bytes per line, ..., colours
w, h, bpl, ncolors = f[4], f[5], f[12], f[19]
px = np.frombuffer(d[f[0] + 12 * ncolors:], dtype=np.uint8)[:bpl * h].reshape(h, bpl)[:, :4 * w].reshape(h, w, 4)
mpimg.imsave(sys.argv[2], np.ascontiguousarray(px[:, :, [2, 1, 0]]))
PY
echo "trace_screenshot: $out"
