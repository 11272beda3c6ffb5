#!/bin/bash
# report_html.sh - the HTML report is one well-formed, self-contained file:
# no external reference, a hostile part label is escaped, and headless
# Chromium renders it to a non-blank screenshot.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"

tmp=$(mktemp -d /tmp/emmclab-report-html-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db="$tmp/lab.db"

"$EMMCLAB" import --db "$db" "$EMMCLAB_SRC/results/reference/fs-copy-benchmark.csv" >/dev/null
# A part whose label tries to inject markup.
cat > "$tmp/hostile.csv" <<'CSV'
board,controller,queue_fua,workload,run,mib_per_s
<script>alert('x')</script>&<b>,"sdhci""x",1,seq_write,1,150.1
<script>alert('x')</script>&<b>,"sdhci""x",1,seq_write,2,151.3
<script>alert('x')</script>&<b>,"sdhci""x",1,seq_write,3,149.7
<script>alert('x')</script>&<b>,"sdhci""x",0,seq_write,1,200.2
<script>alert('x')</script>&<b>,"sdhci""x",0,seq_write,2,198.9
<script>alert('x')</script>&<b>,"sdhci""x",0,seq_write,3,201.4
CSV
"$EMMCLAB" import --db "$db" "$tmp/hostile.csv" >/dev/null
"$EMMCLAB" report --db "$db" --all --format html -o "$tmp/report.html"
html="$tmp/report.html"
[ -s "$html" ] || fail "no html"
grep -qi '<script' "$html" && fail "unescaped <script in the report"
grep -q '&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&lt;b&gt;' "$html" || fail "hostile label not shown escaped"
grep -Eqi 'https?:|src=|href=|@import|url\(' "$html" && fail "external reference in the report"

python3 - "$html" <<'PY'
import sys
from html.parser import HTMLParser
VOID = {"meta", "br", "line", "rect", "circle", "path", "polyline", "img", "hr", "input", "link"}
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.svgs = [], [], 0
    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.svgs += 1
        if tag not in VOID:
            self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        pass
    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unbalanced </%s> (open: %s)" % (tag, self.stack[-3:]))
        else:
            self.stack.pop()
p = P()
p.feed(open(sys.argv[1], encoding="utf-8").read())
p.close()
assert not p.errors, p.errors[:5]
assert not p.stack, p.stack
assert p.svgs >= 6, p.svgs
print("well-formed, %d inline SVG" % p.svgs)
PY

# --dut-detail: box plots and tables for the first N DUTs, every other DUT named
# in a note (escaped), the latency charts likewise; `all` and the default (64)
# draw all six DUTs here
ndut() { grep -o '<h3>' "$1" | wc -l; } # one h3 per DUT, one for the CQE x FUA table
[ "$(ndut "$html")" = 7 ] || fail "default: $(ndut "$html") h3, want 6 DUTs + 1"
"$EMMCLAB" report --db "$db" --all --format html --dut-detail 2 -o "$tmp/d2.html"
[ "$(ndut "$tmp/d2.html")" = 3 ] || fail "--dut-detail 2: $(ndut "$tmp/d2.html") h3, want 2 DUTs + 1"
grep -q "Box plots and tables for the first 2 of 6 DUTs; the other 4" "$tmp/d2.html" \
	|| fail "--dut-detail 2: no note saying 2 of 6"
nd=$(grep -o "<p class='note'>Not drawn here: .*</p>" "$tmp/d2.html" | grep -o '\[imported\]' | wc -l)
[ "$nd" = 4 ] || fail "--dut-detail 2: $nd DUTs named as not drawn, want 4"
grep -qi '<script' "$tmp/d2.html" && fail "--dut-detail 2: unescaped <script"
"$EMMCLAB" report --db "$db" --all --format html --dut-detail all -o "$tmp/dall.html"
[ "$(sed /generated/d "$tmp/dall.html")" = "$(sed /generated/d "$html")" ] \
	|| fail "--dut-detail all differs from the default on 6 DUTs"
rc=0; "$EMMCLAB" report --db "$db" --all --format html --dut-detail some -o "$tmp/x.html" 2>"$tmp/x.err" || rc=$?
[ "$rc" = 2 ] && grep -q "dut-detail wants a count or 'all'" "$tmp/x.err" || fail "--dut-detail some: rc $rc"

command -v chromium >/dev/null || fail "chromium is not installed (apt-get install chromium)"
prof=$(mktemp -d "$tmp/chromium-XXXXXX")
timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --user-data-dir="$prof" \
	--screenshot="$tmp/shot.png" --window-size=1200,2000 "file://$html" >/dev/null 2>&1 || true
[ -s "$tmp/shot.png" ] || fail "chromium wrote no screenshot"
size=$(stat -c %s "$tmp/shot.png")
[ "$size" -gt 20000 ] || fail "screenshot suspiciously small ($size bytes)"
python3 - "$tmp/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        w, h, depth, ctype, _, _, inter = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and inter == 0, (depth, ctype, inter)
        bpp = 3 if ctype == 2 else 4
    elif typ == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours, rows, i = {}, [], 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 4 == 0:
        for x in range(0, stride, bpp * 2):
            k = bytes(line[x:x + 3]); colours[k] = colours.get(k, 0) + 1
total = sum(colours.values())
top = max(colours.values()) / total
print("%dx%d, %d distinct colours, most common %.1f%%" % (w, h, len(colours), 100 * top))
assert len(colours) >= 20, "too few colours: blank page?"
assert top < 0.97, "almost one colour: blank page?"
PY
echo "PASS"
