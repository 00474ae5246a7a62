#!/bin/bash
# bundles.sh REPO OUTDIR: the fake bundles of the reliability review's findings (fakegt.py targets; mkbundle.py), by name.
P=$1; O=$2; export P; R="$(dirname "$(readlink -f "$0")")"; mkdir -p "$O"; cd "$O"
mk() { python3 $R/mkbundle.py "$@" --src $P >/dev/null; }
# 1. forged results
mk b_forge 'fj={"cases":["S.A","S.B=fail"],"forge_journal":["Ghost.ForgedJ"]}' \
           'fx={"cases":["S.A","S.B"],"forge_xml":["Ghost.ForgedX"]}' \
           'pre={"cases":["S.A",{"id":"S.B","act":["prepass","crash"]},"S.C"]}' \
           'prehang={"cases":["S.A",{"id":"S.B","act":["prepass","hang"]}]}' \
           'prexml={"at_exit":"exit:0","cases":["S.A",{"id":"S.B","act":["prepass","exit:0"]},"S.C"]}' --timeout 4
mk b_prexml 'prexml={"cases":["S.A",{"id":"S.B","act":["prepass","exit:0"]},"S.C"]}'
mk b_fx 'fx={"cases":["S.A","S.B"],"forge_xml":["Ghost.ForgedX"]}'
mk b_rundup0 'rundup={"run_dup":"S.A","at_exit":"exit:0","cases":["S.A","S.B"]}'
# 2. duplicate listing, changing listing, a case run twice (FAIL then PASS)
mk b_dup 'dup={"list":"dup","cases":["S.A","S.B=fail"]}' 'flip={"list":"flip","cases":["S.A","S.B=fail"]}' \
         'rundup={"run_dup":"S.A","cases":["S.A","S.B"]}'
# 9. long and odd names
python3 - "$R" <<'PY'
import json, subprocess, sys
R = sys.argv[1]
long4k = "S." + "L" * 4096
long70k = "S." + "K" * 70000
specs = {
  "long4k": {"cases": [{"id": long4k, "act": ["fail"]}, "S.ok"]},
  "long70k": {"cases": [{"id": long70k, "act": ["fail"]}, "S.ok"]},
  "nl": {"cases": [{"id": "S.new\nline", "act": ["fail"]}, "S.ok"]},
  "nul": {"cases": [{"id": "S.nul\u0000byte", "act": ["fail"]}, "S.ok"]},
  "ctl": {"cases": [{"id": "S.esc\u001b[31mred\u0001\u2028x", "act": ["fail"]}, "S.ok"]},
  "ffff": {"cases": [{"id": "S.bad\udcff", "act": []}, "S.ok"]} if False else {"cases": ["S.ok"]},
}
args = [f"{k}={json.dumps(v)}" for k, v in specs.items()]
subprocess.check_call([sys.executable, f"{R}/mkbundle.py", "b_names", "--src", __import__("os").environ["P"], *args], stdout=subprocess.DEVNULL)
PY
# 6. non-ASCII failure message
mk b_utf 'u={"cases":["S.A",{"id":"S.Ünï","act":["prop:k=värde"]},"S.B=fail"]}'
mk b_utf_msg 'u={"cases":["S.A","S.B=fail"],"xml":"badbytes"}'
# 3. qualify killed: a long-running, a hanging binary
mk b_kill --timeout 60 'slow={"cases":["S.A",{"id":"S.B","act":["sleep:40"]}]}' 'hang={"cases":[{"id":"S.H","act":["hang"]}]}'
# 10. a child stopped past its timeout, 1 GB of stdout
mk b_stop --timeout 3 'sc={"cases":["S.A",{"id":"S.B","act":["stopchild"]},"S.C"]}'
mk b_flood --timeout 300 'f={"cases":["S.A",{"id":"S.B","act":["flood:1024"]},"S.C"]}'
# plain bundles
mk b_basic 'basic={}'
mk b_ok 'x={"cases":["S.A","S.B"]}'
mk b_slow --timeout 60 'x={"cases":["S.A",{"id":"S.B","act":["sleep:6"]},"S.C"]}'
echo "$O: $(ls -d b_* | wc -l) bundles"
