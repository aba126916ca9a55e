"""Hand-run check that aci reads the 138 SWE-bench 1.x harness logs as swebench does.

Usage: python compare_parsers.py SITE_PACKAGES ACI_OUT, where SITE_PACKAGES holds the swebench
to compare with and ACI_OUT is `aci eval --instances lite.jsonl --from-logs harness-logs
--output ACI_OUT`. Needs `cargo build --example status_map` (or ACI_STATUS_MAP); reads the
data from ACI_SWEBENCH_DATA. Prints every verdict, listed test and status map that differ.
"""
import json, os, sys
sys.path.insert(0, sys.argv[1])  # site-packages holding the swebench to compare with
from swebench.harness.log_parsers import python as P
here = os.path.dirname(os.path.abspath(__file__))
data = os.environ.get("ACI_SWEBENCH_DATA", os.path.join(here, "../../shared/swebench"))
out = sys.argv[2]
recs = {json.loads(l)["instance_id"]: json.loads(l) for l in open(f"{data}/lite.jsonl")}
verdicts = json.load(open(f"{data}/harness-verdicts.json"))
PASS = ("PASSED", "XFAIL")
agree_pub = agree_aci = 0
test_diffs = 0
for name in sorted(os.listdir(f"{data}/harness-logs")):
    iid = name.split(".")[0]
    r = recs[iid]
    log = open(f"{data}/harness-logs/{name}", errors="replace").read()
    parser = P.MAP_REPO_TO_PARSER_PY[r["repo"]]
    if "Prediction patch is `None`" in log or any(s in log for s in (">>>>> Tests Timed Out", ">>>>> Patch Apply Failed", ">>>>> Init Failed")) or ">>>>> Applied Patch (pred)" not in log:
        sm = None
    else:
        region = log[log.rfind(">>>>> Applied Patch (pred)") + len(">>>>> Applied Patch (pred)"):]
        sm = parser(region, None)
    if sm is None:
        resolved = False
    else:
        f2p, p2p = json.loads(r["FAIL_TO_PASS"]), json.loads(r["PASS_TO_PASS"])
        ok = lambda t: sm.get(t) in PASS
        resolved = all(map(ok, f2p)) and all(map(ok, p2p))
    agree_pub += resolved == verdicts[iid]["resolved"]
    rep = f"{out}/{iid}/report.json"
    aci_res = os.path.isfile(rep) and json.load(open(rep))[iid]["resolved"]
    agree_aci += aci_res == resolved
    if aci_res != resolved:
        print("VERDICT", iid, "swebench", resolved, "aci", aci_res, "published", verdicts[iid]["resolved"])
    if sm is not None and os.path.isfile(rep):
        ts = json.load(open(rep))[iid]["tests_status"]
        for k in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            for t in ts[k]["success"]:
                if not ok(t): test_diffs += 1; print("TEST", iid, k, repr(t), "aci success, swebench", sm.get(t))
            for t in ts[k]["failure"]:
                if ok(t): test_diffs += 1; print("TEST", iid, k, repr(t), "aci failure, swebench", sm.get(t))
print(f"swebench agrees with published on {agree_pub}/138; aci agrees with swebench on {agree_aci}/138; listed-test disagreements {test_diffs}")

# Whole status maps: aci's (examples/status_map) against swebench's, per log.
import subprocess, collections
exe = os.environ.get("ACI_STATUS_MAP", os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(here, "../target")), "debug/examples/status_map"))
by_parser = collections.defaultdict(list)
for name in sorted(os.listdir(f"{data}/harness-logs")):
    iid = name.split(".")[0]
    by_parser[P.MAP_REPO_TO_PARSER_PY[recs[iid]["repo"]]].append(f"{data}/harness-logs/{name}")
same = differ = unknown = 0
KNOWN = {"PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"}
for parser, paths in by_parser.items():
    aci = json.loads(subprocess.run([exe, parser.__name__, *paths], capture_output=True, text=True, check=True).stdout)
    for path in paths:
        log = open(path, errors="replace").read()
        if aci[path] is None:
            continue
        region = log[log.rfind(">>>>> Applied Patch (pred)") + len(">>>>> Applied Patch (pred)"):]
        sm = parser(region, None)
        # A status word swebench stores but does not grade is SKIPPED in aci (graded the same).
        unknown += sum(v not in KNOWN for v in sm.values())
        sm = {k: (v if v in KNOWN else "SKIPPED") for k, v in sm.items()}
        if sm == aci[path]:
            same += 1
            continue
        differ += 1
        keys = sorted(set(sm) | set(aci[path]))
        d = [(k, sm.get(k), aci[path].get(k)) for k in keys if sm.get(k) != aci[path].get(k)]
        print("MAP", os.path.basename(path).split(".")[0], parser.__name__, len(d), "ids differ, e.g.", d[:4])
print(f"status maps: {same} identical, {differ} differ ({unknown} unknown status words read as SKIPPED)")
