#!/usr/bin/env python3
"""A scriptable stand-in for a pagelock GoogleTest binary, for qualify's tests: it speaks
--pagelock_fingerprint, --gtest_list_tests, --gtest_filter and --gtest_output=xml:, draws its run
seed as fixtures/seed.cc does (PAGELOCK_SEED, else fresh), records pagelock.* properties, and
fails in ways the environment asks for:

  FAKE_DEVICE_STATUS   fingerprint device_status (default usable)
  FAKE_GPU_COUNT       fingerprint gpu_count (default 1)
  FAKE_GPU_NAME        fingerprint gpu0_name (default NVIDIA H200)
  FAKE_DRIVER          fingerprint nvidia_driver (default 580.159.04)
  FAKE_RUNTIME         fingerprint cuda_runtime_version (default 13000)
  FAKE_CAN_MAP         gpu0_cudaDevAttrCanMapHostMemory (default 1); 0 makes the Mapped* cases
                       NOT_SUPPORTED, as PAGELOCK_REQUIRE does
  FAKE_EXTRA_CASES     number of extra passing cases Extra.CaseNNN (default 0)
  FAKE_BAD_SEED        the run seed for which Pinned.FailsForOneSeed fails (default 4242)
  FAKE_NAN             1: Pinned.CopyRoundTrips records a nan metric
  FAKE_HANG            1: Pinned.CopyRoundTrips hangs (writes its pid to FAKE_PID_FILE first)
A device_status other than "usable" makes every case NOT_SUPPORTED with that reason.
"""

import fnmatch
import json
import os
import random
import sys
import time
from xml.sax.saxutils import quoteattr

BASE = ["Pinned.CopyRoundTrips", "Pinned.FailsForOneSeed", "Mapped.KernelReadsHostMemory",
        "Mapped.DevicePointerMatches", "Flags/Alloc.Maps/portable", "Flags/Alloc.Maps/mapped"]


def env(name, default):
    return os.environ.get(name, default)


def fingerprint(seed=None):
    fp = {"host": "fakehost", "device_status": env("FAKE_DEVICE_STATUS", "usable")}
    if fp["device_status"] == "usable":
        fp.update({"gpu_count": env("FAKE_GPU_COUNT", "1"), "gpu0_name": env("FAKE_GPU_NAME", "NVIDIA H200"),
                   "nvidia_driver": env("FAKE_DRIVER", "580.159.04"), "cuda_runtime_version": env("FAKE_RUNTIME", "13000"),
                   "gpu0_cudaDevAttrCanMapHostMemory": env("FAKE_CAN_MAP", "1"),
                   "gpu0_cudaDevAttrHostRegisterSupported": "1"})
    else:
        fp["gpu_count"] = "0"
    if seed is not None:
        fp["pagelock.run_seed"] = str(seed)
    return fp


def cases():
    n = int(env("FAKE_EXTRA_CASES", "0"))
    return BASE + [f"Extra.Case{i:03d}" for i in range(n)]


def selected(names, flt):
    if not flt:
        return names
    pos, _, neg = flt.partition("-")
    pos = [p for p in pos.split(":") if p] or ["*"]
    neg = [p for p in neg.split(":") if p]
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in pos)
            and not any(fnmatch.fnmatchcase(n, p) for p in neg)]


def case_seed(run_seed, name):
    """pagelock::CaseSeed() of fixtures/outcome.cc."""
    m = 2 ** 64 - 1
    h = 1469598103934665603
    for b in name.encode():
        h = ((h ^ b) * 1099511628211) & m
    x = ((run_seed ^ h) + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return (x ^ (x >> 31)) % 10 ** 12


def outcome(name, run_seed):
    """(status, message, properties) of one case."""
    props = {"pagelock.seed": str(case_seed(run_seed, name)), "pagelock.rules": "R01"}
    status = env("FAKE_DEVICE_STATUS", "usable")
    if status != "usable":
        props.update({"pagelock.status": "NOT_SUPPORTED", "pagelock.reason": status})
        return "SKIP", "NotSupported: " + status, props
    if name.startswith("Mapped.") or name.endswith("/mapped"):
        if env("FAKE_CAN_MAP", "1") == "0":
            props.update({"pagelock.status": "NOT_SUPPORTED",
                          "pagelock.reason": "cudaDevAttrCanMapHostMemory=0 (need 1)"})
            return "SKIP", "NotSupported: cudaDevAttrCanMapHostMemory=0 (need 1)", props
    if name == "Pinned.FailsForOneSeed" and run_seed == int(env("FAKE_BAD_SEED", "4242")):
        return "FAIL", f"fake.cc:1\nbytes differ for run seed {run_seed}", props
    if name == "Pinned.CopyRoundTrips":
        if env("FAKE_HANG", "") == "1":
            with open(env("FAKE_PID_FILE", "/dev/null"), "w", encoding="utf-8") as f:
                f.write(str(os.getpid()))
            time.sleep(120)
        props["pagelock.metric.h2d_pinned_GBps"] = ("nan" if env("FAKE_NAN", "") == "1" else "50.5") + " GB/s"
    return "PASS", "", props


def main(argv):
    args = {a.split("=", 1)[0]: (a.split("=", 1)[1] if "=" in a else "") for a in argv}
    seed_text = os.environ.get("PAGELOCK_SEED", "")
    run_seed = int(seed_text) if seed_text else random.randrange(1, 10 ** 12)
    if "--pagelock_fingerprint" in args:
        print(json.dumps(fingerprint()))
        return 0
    names = selected(cases(), args.get("--gtest_filter", ""))
    if "--gtest_list_tests" in args:
        suites = {}
        for n in names:
            s, _, c = n.partition(".")
            suites.setdefault(s, []).append(c)
        for s, cs in suites.items():
            print(f"{s}.")
            for c in cs:
                print(f"  {c}")
        return 0
    print(f"pagelock: seed {run_seed} (replay with PAGELOCK_SEED={run_seed})")
    journal = open(os.environ.get("PAGELOCK_JOURNAL", os.devnull), "w", encoding="utf-8")
    results = []
    for n in names:
        journal.write(json.dumps({"event": "start", "case": n}) + "\n")
        journal.flush()
        results.append((n,) + outcome(n, run_seed))
        st, msg, props = results[-1][1:]
        journal.write(json.dumps({"event": "end", "case": n, "status": st, "message": msg,
                                  "properties": props}) + "\n")
        journal.flush()
    failed = False
    for n, st, msg, _ in results:
        print(f"[ {st:<8} ] {n}" + (f"\n{msg}" if st == "FAIL" else ""))
        failed |= st == "FAIL"
    out = args.get("--gtest_output", "")
    if out.startswith("xml:"):
        attrs = "".join(f" {k}={quoteattr(v)}" for k, v in fingerprint(run_seed).items())
        xml = [f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="{len(results)}" name="AllTests"{attrs}>']
        for n, st, msg, props in results:
            suite, _, case = n.partition(".")
            result = "skipped" if st == "SKIP" else "completed"
            xml.append(f'<testsuite name={quoteattr(suite)}><testcase name={quoteattr(case)} status="run" '
                       f'result="{result}" time="0.001" classname={quoteattr(suite)}><properties>')
            xml += [f"<property name={quoteattr(k)} value={quoteattr(v)}/>" for k, v in props.items()]
            xml.append("</properties>")
            if st == "FAIL":
                xml.append(f"<failure message={quoteattr(msg)} type=\"\"/>")
            elif st == "SKIP":
                xml.append(f"<skipped message={quoteattr(msg)}/>")
            xml.append("</testcase></testsuite>")
        xml.append("</testsuites>\n")
        with open(out[4:], "w", encoding="utf-8") as f:
            f.write("".join(xml))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
