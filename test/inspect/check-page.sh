#!/usr/bin/env bash
# Renders an attn-inspect report in headless Chromium and checks what a
# reader would see: the screenshot is a PNG that is not blank (enough pixels
# off the background, enough colours), the DOM after the page's script ran
# has exactly LAYERS x HEADS head cells and the drawn large view (the script
# sets data-shown on #detail last), and every L<l>H<h>.png decodes.
#
#   check-page.sh DIR LAYERS HEADS
#
# ATTN_PNG_INFO names the attn-png-info program (test/inspect; python3 here
# has no imaging library); CHROMIUM the browser (default chromium). Exits 77
# (skipped) when the browser is missing, except under CI=true, where that
# fails: CI must run this check (scripts/setup.sh installs chromium).
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: check-page.sh DIR LAYERS HEADS" >&2
  exit 2
fi
dir=$1 layers=$2 heads=$3
png_info=${ATTN_PNG_INFO:?set ATTN_PNG_INFO to the attn-png-info program}
chromium=${CHROMIUM:-chromium}
fail() { echo "error: $*" >&2; exit 1; }

if ! command -v "$chromium" > /dev/null; then
  [[ ${CI:-} == true ]] && fail "$chromium is missing: CI must run this test"
  echo "skipped: $chromium is missing"
  exit 77
fi
[[ -f $dir/index.html ]] || fail "$dir/index.html is missing"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
page="file://$(cd "$dir" && pwd)/index.html"
# A private profile, no first-run or GPU work; the virtual time budget lets
# the images load and the script run before the capture.
browse() {
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
    --user-data-dir="$work/profile" --no-first-run --disable-extensions \
    --hide-scrollbars --window-size=1280,1600 --virtual-time-budget=5000 \
    "$@" "$page"
}

browse --screenshot="$work/shot.png" > "$work/shot.log" 2>&1 ||
  fail "chromium took no screenshot of $page: $(tail -n 5 "$work/shot.log")"
info=$("$png_info" "$work/shot.png") || fail "the screenshot is not a PNG"
read -r width height colours fraction <<< "$info"
[[ $width == 1280 && $height == 1600 ]] ||
  fail "the screenshot is ${width}x$height, not 1280x1600"
# The page's text, thumbnails and tables cover far more than 3% of the
# window and use far more than 16 colours; a blank or failed page does not.
awk -v c="$colours" -v f="$fraction" 'BEGIN { exit !(c >= 16 && f >= 0.03) }' ||
  fail "the screenshot looks blank: $colours colours, $fraction of it off the background"

browse --dump-dom > "$work/dom.html" 2> "$work/dom.log" ||
  fail "chromium dumped no DOM of $page: $(tail -n 5 "$work/dom.log")"
cells=$(grep -o 'class="cell[ "]' "$work/dom.html" | wc -l)
[[ $cells -eq $((layers * heads)) ]] ||
  fail "the page has $cells head cells, expected $layers x $heads"
grep -q 'id="detail" data-shown="L[0-9]*H[0-9]*"' "$work/dom.html" ||
  fail "the page's script did not draw the large view"

for ((l = 0; l < layers; ++l)); do
  for ((h = 0; h < heads; ++h)); do
    "$png_info" "$dir/L${l}H$h.png" > /dev/null || fail "$dir/L${l}H$h.png does not decode"
  done
done
echo "ok: $page: $cells cells; screenshot with $colours colours, $fraction off the background"
