"""Hand-run: the status map swebench's own parser reads from each log of tests/fixtures/logs/
(real runners' output) and tests/fixtures/logs-written/ (lines in the format of runners that
cannot run here).

Usage: python harness_status_maps.py SITE_PACKAGES [--check], where SITE_PACKAGES holds the
swebench to compare with (5.0.2). Each `<root>/<parser>/<log>.txt` is read by swebench's
`parse_log_<parser>`; the maps are written to `<root>/harness-status-maps.json`, which the unit
tests `eval::parse::harness_tests` compare with aci's parsers, log by log. With --check nothing
is written, and the script says whether a file would change.
"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from swebench.harness.log_parsers import PARSER_REGISTRY
here = os.path.dirname(os.path.abspath(__file__))
changed = False
for root_name in ("logs", "logs-written"):
    root = os.path.join(here, "..", "tests", "fixtures", root_name)
    maps = {}
    for parser in sorted(os.listdir(root)):
        folder = os.path.join(root, parser)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            # newline="": the log's \r stay, as the harness reads its files.
            log = open(os.path.join(folder, name), encoding="utf-8", newline="").read()
            try:
                sm = dict(sorted(PARSER_REGISTRY[f"parse_log_{parser}"](log, None).items()))
            except Exception:
                sm = None  # swebench's parser raises: the harness grades nothing
            maps[f"{parser}/{name}"] = sm
    out = os.path.join(root, "harness-status-maps.json")
    text = json.dumps(maps, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    same = os.path.isfile(out) and open(out, encoding="utf-8").read() == text
    print(f"{root_name}: {len(maps)} logs, {sum(len(m or ()) for m in maps.values())} test ids, "
          + ("unchanged" if same else "changed"))
    changed |= not same
    if "--check" not in sys.argv:
        open(out, "w", encoding="utf-8").write(text)
sys.exit(1 if changed and "--check" in sys.argv else 0)
