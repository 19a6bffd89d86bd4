#!/usr/bin/env python3
"""Adds up meson test logs (JSON lines) and the fuzz log into one closing line."""
import json
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        print(f"missing log: {path}")
        failed += 1
        continue
    for line in lines:
        if path.endswith(".txt"):
            word = line.split(" ", 1)[0]
            passed += word == "pass"
            failed += word == "fail"
            continue
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
            print(f"failed: {json.loads(line)['name']} ({result}) in {path}")
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
