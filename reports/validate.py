"""Checks a results.json document (a baseline, an earlier run) before anything uses it.

A field of the wrong type (a case whose "target" is 5, an int nvidia_driver, info.bundle given as
a string) is named here, by its path in the document, so qualify can refuse the file with exit 2
before any test runs instead of failing with a traceback after the whole tier ran.

  problem = validate.results_problem(doc)   # None, or "run.cases[3].target: expected text, found 5"
  doc = validate.read_json_file(path, max_bytes)   # refuses devices, FIFOs, oversized files

Only the shape is checked (types of the fields the tools read); the values are model.py's job.
This is the one shape check: model.read_results and model.Run.from_json read through it too.
"""

import json
import os
import stat

# Fields of a case record and the JSON types they may have (None: the field may be null).
_TEXT = (str,)
_NUMBER = (int, float)
_CASE_FIELDS = {
    "target": _TEXT, "suite": _TEXT, "name": _TEXT, "id": _TEXT, "status": _TEXT,
    "message": _TEXT, "reason": _TEXT, "first_failure": _TEXT, "child": _TEXT, "health": _TEXT,
    "seconds": _NUMBER, "run_seed": (str, int, type(None)), "seed": (str, int, type(None)),
    "stress": (bool, type(None)), "attempts": (list,), "rules": (list,), "metrics": (dict,),
    "budgets": (dict,), "observed": (dict,), "logs": (dict,), "properties": (dict,),
    "conflicts": (list,),
}
_REQUIRED_CASE_FIELDS = ("target", "suite", "name")
_INFO_FIELDS = dict(
    {k: _TEXT for k in ("run_key", "started_at", "sku", "tier", "verdict", "label", "seed", "baseline",
                        "command", "interrupted_by")},
    **{k: (dict,) for k in ("bundle", "expectations", "outputs", "mutation")},
    exit_code=(int,), retries=(int,), skipped_by_expectations=(list,))


class InputError(Exception):
    """A file that is not a usable input: the message names the file and why."""


def _kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({value!r})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"text ({value[:40]!r})"
    return f"a {'list' if isinstance(value, list) else 'object'}"


def _want(types):
    names = {str: "text", int: "a number", float: "a number", bool: "a boolean", list: "a list",
             dict: "an object", type(None): "null"}
    return " or ".join(dict.fromkeys(names[t] for t in types))


def _is(value, types):
    # JSON true/false are Python bools, which are ints too: a boolean is never a number here.
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def _field(where, value, types):
    if not _is(value, types):
        return f"{where}: expected {_want(types)}, found {_kind(value)}"
    return None


# The exact types of each field (JSON gives only these; a bool is never a number), for the check
# that passes a good record in a few microseconds: 10^6 cases of a baseline are checked each run.
_EXACT = {k: frozenset(ts) for k, ts in _CASE_FIELDS.items()}
_TEXT_LISTS = ("attempts", "rules", "conflicts")


_GOOD_SHAPES = set()  # (keys, value types) of records whose top-level fields were found good


def _flat_good(case):
    exact = _EXACT
    for key, value in case.items():
        types = exact.get(key)
        if types is not None and type(value) not in types:
            return False
    return all(k in case for k in _REQUIRED_CASE_FIELDS)


def _good_case(case):
    """True when every field of a case record has its type (the common case, checked fast: a
    record shaped as one seen before needs only its contents looked at); False sends the
    record to case_problem's field-by-field check for the message."""
    if type(case) is not dict:
        return False
    shape = (tuple(case), tuple(map(type, case.values())))
    if shape not in _GOOD_SHAPES:
        if not _flat_good(case):
            return False
        if len(_GOOD_SHAPES) < 4096:
            _GOOD_SHAPES.add(shape)
    target = case["target"]
    if not target.startswith("//") or ":" not in target:
        return False
    for key in _TEXT_LISTS:
        values = case.get(key)
        if values:
            for v in values:
                if type(v) is not str:
                    return False
    for group in ("metrics", "budgets"):
        metrics = case.get(group)
        if metrics:
            for m in metrics.values():
                if type(m) is not dict or type(m.get("value", 0.0)) not in (int, float) or \
                        type(m.get("unit", "")) is not str:
                    return False
    for group in ("logs", "observed"):
        texts = case.get(group)
        if texts:
            for v in texts.values():
                if type(v) is not str:
                    return False
    props = case.get("properties")
    if props:
        for v in props.values():
            if type(v) in (dict, list):
                return False
    return True


def case_problem(where, case):
    """The first wrong-typed field of one case record, or None."""
    if _good_case(case):
        return None
    if not isinstance(case, dict):
        return f"{where}: expected an object, found {_kind(case)}"
    for key in _REQUIRED_CASE_FIELDS:
        if key not in case:
            return f"{where}: no '{key}'"
    for key, types in _CASE_FIELDS.items():
        if key in case:
            problem = _field(f"{where}.{key}", case[key], types)
            if problem:
                return problem
    if not (case["target"].startswith("//") and ":" in case["target"]):
        return f"{where}.target: expected a label like '//pkg:name', found {case['target'][:60]!r}"
    for i, a in enumerate(case.get("attempts", [])):
        if not isinstance(a, str):
            return f"{where}.attempts[{i}]: expected text, found {_kind(a)}"
    for group in ("rules", "conflicts"):
        for i, r in enumerate(case.get(group, [])):
            if not isinstance(r, str):
                return f"{where}.{group}[{i}]: expected text, found {_kind(r)}"
    for group in ("metrics", "budgets"):
        for name, m in case.get(group, {}).items():
            if not isinstance(m, dict):
                return f"{where}.{group}.{name}: expected an object, found {_kind(m)}"
            for key, types in (("value", (int, float, str)), ("unit", _TEXT)):
                if key in m:
                    problem = _field(f"{where}.{group}.{name}.{key}", m[key], types)
                    if problem:
                        return problem
            if isinstance(m.get("value"), str) and not _is_float(m["value"]):
                return f"{where}.{group}.{name}.value: expected a number, found {_kind(m['value'])}"
    for group in ("logs", "observed"):
        for name, text in case.get(group, {}).items():
            if not isinstance(text, str):
                return f"{where}.{group}.{name}: expected text, found {_kind(text)}"
    for name, value in case.get("properties", {}).items():
        if isinstance(value, (dict, list)):
            return f"{where}.properties.{name}: expected text or a number, found {_kind(value)}"
    return None


def _is_float(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def run_problem(run, where="run"):
    """The first wrong-typed field of a run record ({"fingerprint", "cases", ...}), or None."""
    if not isinstance(run, dict):
        return f"{where}: expected an object, found {_kind(run)}"
    if "format_version" in run:
        problem = _field(f"{where}.format_version", run["format_version"], (int,))
        if problem:
            return problem
    fp = run.get("fingerprint", {})
    if not isinstance(fp, dict):
        return f"{where}.fingerprint: expected an object, found {_kind(fp)}"
    for key, value in fp.items():
        # Every fingerprint value is text (qualify writes str(v)): a number here is a hand edit
        # that compare and the history would misread.
        if not isinstance(value, str):
            return f"{where}.fingerprint.{key}: expected text, found {_kind(value)}"
    cases = run.get("cases", [])
    if not isinstance(cases, list):
        return f"{where}.cases: expected a list, found {_kind(cases)}"
    for i, case in enumerate(cases):
        problem = case_problem(f"{where}.cases[{i}]", case)
        if problem:
            return problem
    problems = run.get("problems", [])
    if not isinstance(problems, list):
        return f"{where}.problems: expected a list, found {_kind(problems)}"
    kernel = run.get("kernel_log", [])
    if not isinstance(kernel, list):
        return f"{where}.kernel_log: expected a list, found {_kind(kernel)}"
    for i, k in enumerate(kernel):
        if not isinstance(k, dict) or not isinstance(k.get("line", ""), str):
            return f"{where}.kernel_log[{i}]: expected an object with a text 'line', found {_kind(k)}"
    return None


def results_problem(doc):
    """The first wrong-typed field of a results.json document (info, run, comparison), or None."""
    if not isinstance(doc, dict):
        return f"expected a JSON object, found {_kind(doc)}"
    if "format_version" in doc:
        problem = _field("format_version", doc["format_version"], (int,))
        if problem:
            return problem
    info = doc.get("info", {})
    if not isinstance(info, dict):
        return f"info: expected an object, found {_kind(info)}"
    problem = _info_problem(info)
    if problem:
        return problem
    comparison = doc.get("comparison", {})
    if not isinstance(comparison, dict):
        return f"comparison: expected an object, found {_kind(comparison)}"
    for key, value in comparison.items():
        if not isinstance(value, str):
            return f"comparison.{key}: expected text, found {_kind(value)}"
    run = doc.get("run", doc)
    return run_problem(run, "run" if "run" in doc else "(top level)")


def _info_problem(info):
    # A null is refused too: the readers call .get() on the objects and show the texts.
    for key, types in _INFO_FIELDS.items():
        if key in info:
            problem = _field(f"info.{key}", info[key], types)
            if problem:
                return problem
    return _bundle_problem(info.get("bundle"))


def _bundle_problem(bundle):
    if not isinstance(bundle, dict):
        return None
    for key, value in bundle.items():
        if not _is(value, (str, int, float, bool, type(None), list, dict)):
            return f"info.bundle.{key}: expected a JSON value, found {_kind(value)}"
    if "commit" in bundle:
        return _field("info.bundle.commit", bundle["commit"], _TEXT)
    return None


class NotRegularFile(OSError):
    """A path that names a device, a FIFO, a socket or a folder where a file was expected."""


def read_regular_file(path, max_bytes, encoding="utf-8"):
    """The text of a regular file (links followed) of at most max_bytes. /dev/zero, a FIFO, a
    socket or a folder is refused before it is opened: opening a FIFO blocks, and /dev/zero never
    ends. Raises FileNotFoundError, NotRegularFile, OSError or UnicodeDecodeError."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise NotRegularFile(f"not a regular file ({kind}), not read")
    if st.st_size > max_bytes:
        raise NotRegularFile(f"larger than {max_bytes >> 20} MiB, not read")
    # O_NONBLOCK: should the path become a FIFO between the check and the open, open() returns
    # at once instead of waiting for a writer.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise NotRegularFile("not a regular file, not read")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotRegularFile(f"larger than {max_bytes >> 20} MiB, not read")
    return data.decode(encoding)


def regular_file_problem(path):
    """Why path cannot be read as an input file (a device such as /dev/zero, a FIFO, a socket or
    a folder would hang the reader or fill the memory), or None. Links are followed: a link to
    /dev/zero is /dev/zero."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode)
                else "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "not a regular file")
        return f"is {kind}, not a regular file"
    return None


def read_json_file(path, max_bytes=None):
    """The parsed JSON of a regular file. Raises InputError naming the path for a device, a FIFO,
    a file over max_bytes, unreadable bytes or bad JSON. Never blocks on a FIFO: it is refused
    before it is opened."""
    problem = regular_file_problem(path)
    if problem:
        raise InputError(f"{path}: {problem}")
    if max_bytes is not None and os.path.getsize(path) > max_bytes:
        raise InputError(f"{path}: larger than {max_bytes // (1 << 20)} MiB, not read")
    try:
        # O_NONBLOCK: should the file be swapped for a FIFO after the check, open() returns at
        # once instead of waiting for a writer; reading it then gives nothing (bad JSON).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, encoding="utf-8") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise InputError(f"{path}: not a regular file")
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: unreadable: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not JSON: {e}")
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to read")
