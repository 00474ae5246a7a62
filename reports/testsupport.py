"""Runs for the report tests: a morning with one regression, one flake and one expected
failure, and a 10,000-case run."""

import os
import sys

from reports import compare as cmp
from reports import expectations as expect
from reports import model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def full_document_problems(page):
    """What keeps an HTML page from being a whole document that a browser shows right: a
    doctype, a language, a UTF-8 charset before anything else of the head, a viewport (phones),
    a non-empty title, the closing tag. [] when there is nothing."""
    import re
    head = page.split("</head>", 1)[0]
    checks = [(page.startswith("<!DOCTYPE html>"), "no doctype first"),
              ("<html lang='en'>" in page, "no <html lang>"),
              (re.search(r"<head><meta charset='utf-8'>", head) is not None, "no charset first in the head"),
              ("<meta name='viewport' content='width=device-width'>" in head, "no viewport"),
              (re.search(r"<title>[^<]+</title>", head) is not None, "no title"),
              (page.rstrip().endswith("</html>"), "no closing </html>")]
    return [why for ok, why in checks if not ok]


def package_env(environ=None, **extra):
    """The environment of a child Python that imports the package (`python3 -c`, a script of a
    test): the repository root first on PYTHONPATH (docs/python.md), then `extra`."""
    env = dict(os.environ if environ is None else environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env.update(extra)
    return env

T = "//suites/hostregister:hostregister_test"
FP = {"nvidia_driver": "580.159.04", "gpu0_name": "NVIDIA H200", model.PROP_RUN_SEED: "7", "device_status": "usable",
      "gpu_count": "1", "host": "lab1"}
REGRESSION_MESSAGE = ("suites/hostregister/hostregister_test.cc:88\nExpected equality of these values:\n"
                      "  cudaHostRegister(p, size, cudaHostRegisterDefault)\n"
                      "    Which is: cudaErrorHostMemoryAlreadyRegistered\n  cudaSuccess\n"
                      "    Which is: cudaSuccess\nregistering a fresh range must succeed")
EXPECTATIONS = ("fail suites/hostregister:hostregister_test/HostRegisterTest.KnownBad status=FAIL "
                "bug=https://tracker/123  # known\n")


def case(name, status, message="", rules="R14", attempts=None, suite="HostRegisterTest", target=T):
    props = {model.PROP_RULES: rules, model.PROP_SEED: str(model.derive_case_seed(7, f"{suite}.{name}"))}
    if attempts:
        props["attempts"] = attempts
    c = model.Case.from_raw(target, suite, name, status, 0.25, message, "", props, 7)
    if attempts and c.flaky:
        c.first_failure = "x.cc:1\nflaky boom"
    return c


def morning(extra_passes=20):
    """(run, comparison, baseline): one regression, one new flake, one expected failure."""
    cases = [case(f"Passes{i}", "PASS") for i in range(extra_passes)]
    cases += [case("RegisteringFreshRangeSucceeds", "FAIL", REGRESSION_MESSAGE, rules="R14,R51",
                   attempts="FAIL FAIL FAIL"),
              case("SometimesSlow", "PASS", attempts="FAIL PASS"),
              case("KnownBad", "FAIL", "x.cc:3\nknown boom", attempts="FAIL FAIL FAIL")]
    run = model.Run(dict(FP), cases)
    baseline = model.Run(dict(FP), [case(c.name, "PASS") if c.name != "KnownBad" else c for c in cases])
    comp = cmp.compare(run, expect.Expectations(expect.parse(EXPECTATIONS, "nvidia-h200.txt")), baseline)
    return run, comp, baseline


def big(n=10000, failing_every=500):
    """n cases over 10 suite families, parameterized over 8 flag combinations; some failing."""
    cases = []
    for i in range(n):
        fam = f"fam{(i // 8) % 10}"  # 8 consecutive cases: one test, 8 flag combinations
        st = "FAIL" if i % failing_every == 0 else ("NOT_SUPPORTED" if i % 7 == 0 else "PASS")
        c = model.Case.from_raw(f"//suites/{fam}:{fam}_test", f"Flags/{fam.title()}Test",
                                f"Case{i // 80}/flags{i % 8}", st, 0.01,
                                REGRESSION_MESSAGE if st == "FAIL" else "",
                                "cudaDevAttrHostRegisterSupported=0" if st == "NOT_SUPPORTED" else "",
                                {model.PROP_RULES: f"R{i % 89 + 1:02d}",
                                 model.PROP_SEED: str(model.derive_case_seed(7, f"Flags/{fam.title()}Test.Case{i // 80}/flags{i % 8}"))}, 7)
        cases.append(c)
    return model.Run(dict(FP), cases)


def python_with_fake_psycopg2(tmp):
    """(env, log) for a command started in a child process: under `env` this interpreter cannot
    import psycopg2 (a module first on PYTHONPATH refuses, whether or not Debian's is installed),
    and $PAGELOCK_PYTHON is a wrapper of this interpreter that can: it puts a stand-in psycopg2
    first on the path, whose connect() fails with 'fake psycopg2 of the test', and appends its
    arguments to the file `log`, a line a start. A command that re-executed itself for psycopg2
    says 'cannot connect: fake psycopg2 of the test'; one that did not, that it needs psycopg2."""
    blocker, hidden = os.path.join(tmp, "without-psycopg2"), os.path.join(tmp, "fake-psycopg2")
    os.makedirs(blocker, exist_ok=True)
    os.makedirs(os.path.join(hidden, "psycopg2"), exist_ok=True)
    with open(os.path.join(blocker, "psycopg2.py"), "w", encoding="utf-8") as f:
        f.write("raise ImportError('this interpreter has no psycopg2 (the test hides it)')\n")
    with open(os.path.join(hidden, "psycopg2", "__init__.py"), "w", encoding="utf-8") as f:
        f.write("class Error(Exception):\n    pass\n\n\n"
                "def connect(*args, **kwargs):\n    raise Error('fake psycopg2 of the test')\n")
    log = os.path.join(tmp, "pagelock-python.log")
    wrapper = os.path.join(tmp, "python-with-psycopg2")
    with open(wrapper, "w", encoding="utf-8") as f:
        f.write(f"#!/bin/sh\necho \"$@\" >> '{log}'\n"
                f"PYTHONPATH='{hidden}'${{PYTHONPATH:+:$PYTHONPATH}} exec '{sys.executable}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PAGELOCK_PYTHON", "PAGELOCK_NO_REEXEC", "PAGELOCK_HISTORY")}
    env["PYTHONPATH"] = os.pathsep.join([blocker] + [p for p in [env.get("PYTHONPATH")] if p])
    env["PAGELOCK_PYTHON"] = wrapper
    return env, log
