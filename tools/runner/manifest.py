"""The bundle: manifest.json read and checked, the targets a selection keeps, their binaries."""

import json
import os
import re
import stat

from tools.runner.config import INPUT_MAX_BYTES, UsageError

LABEL_RE = re.compile(r"^//([A-Za-z0-9_.+=,@~-]+(/[A-Za-z0-9_.+=,@~-]+)*)?:[A-Za-z0-9_.+=,@~-]+$")


def valid_label(label):
    """//package:name with no '..' part (a label becomes a folder under --out)."""
    return isinstance(label, str) and bool(LABEL_RE.match(label)) and \
        ".." not in re.split(r"[/:]", label[2:])


def read_regular_file(path, limit=INPUT_MAX_BYTES):
    """The bytes of a regular file of at most `limit` bytes. Anything else (a FIFO, which would
    hang; /dev/zero, which would eat all memory; a folder) raises ValueError saying what it is;
    a missing file raises FileNotFoundError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"not a regular file ({file_kind(st.st_mode)})")
        if st.st_size > limit:
            raise ValueError(f"larger than {limit >> 20} MiB")
        chunks, size = [], 0
        while True:
            data = os.read(fd, 1 << 20)
            if not data:
                return b"".join(chunks)
            size += len(data)
            if size > limit:
                raise ValueError(f"larger than {limit >> 20} MiB")
            chunks.append(data)
    finally:
        os.close(fd)


def file_kind(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def load_manifest(bundle):
    path = os.path.join(bundle, "manifest.json")
    try:
        manifest = json.loads(read_regular_file(path).decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (is {bundle} a pagelock bundle?)")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: unreadable: {e}")
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: malformed JSON: {e.msg}")
    except ValueError as e:
        raise UsageError(f"{path}: refused: {e}")
    except RecursionError:
        raise UsageError(f"{path}: nested too deeply")
    if not isinstance(manifest, dict):
        raise UsageError(f"{path}: must be a JSON object with 'targets'")
    targets = manifest.get("targets")
    if not isinstance(targets, list):
        raise UsageError(f"{path}: 'targets' must be a list")
    seen = set()
    for i, t in enumerate(targets):
        _check_target(path, i, t, seen)
    if "info" in manifest and not isinstance(manifest["info"], dict):
        raise UsageError(f"{path}: 'info' must be an object")
    return manifest


def _check_target(path, i, t, seen):
    if not isinstance(t, dict):
        raise UsageError(f"{path}: target #{i} must be an object")
    for key in ("label", "path", "timeout_s"):
        if key not in t:
            raise UsageError(f"{path}: target #{i} lacks '{key}'")
    label = t["label"]
    if not valid_label(label):
        raise UsageError(f"{path}: target #{i}: bad label {label!r} (want //package:name)")
    if label in seen:
        raise UsageError(f"{path}: target {label} is listed twice")
    seen.add(label)
    if not isinstance(t["path"], str) or not t["path"]:
        raise UsageError(f"{path}: {label}: 'path' must be a file name")
    timeout = t["timeout_s"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            not 0 < timeout < 1e6:
        raise UsageError(f"{path}: {label}: 'timeout_s' must be a positive number of seconds")
    tags = t.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(x, str) for x in tags):
        raise UsageError(f"{path}: {label}: 'tags' must be a list of strings")


def select_targets(targets, tags_expr, target_regex, labels=None):
    """Bazel-like tag filter: 'gpu,-stress' keeps targets with gpu and without stress."""
    want = [t for t in tags_expr.split(",") if t and not t.startswith("-")] if tags_expr else []
    drop = [t[1:] for t in tags_expr.split(",") if t.startswith("-")] if tags_expr else []
    try:
        rx = re.compile(target_regex) if target_regex else None
    except re.error as e:
        raise UsageError(f"bad --targets regex {target_regex!r}: {e}")
    only = set(labels) if labels is not None else None
    out = []
    for t in targets:
        tags = set(t.get("tags", []))
        if want and not any(w in tags for w in want):
            continue
        if any(d in tags for d in drop):
            continue
        if rx and not rx.search(t["label"]):
            continue
        if only is not None and t["label"] not in only:
            continue
        out.append(t)
    return out


def binary_path(bundle, target):
    return os.path.join(bundle, target["path"])


def check_binaries(bundle, targets):
    for t in targets:
        b = binary_path(bundle, t)
        if not os.path.isfile(b):
            raise UsageError(f"bundle {bundle}: {t['label']}: binary {t['path']} is missing "
                             "(rebuild the bundle with tools/bundle.py)")
        if not os.access(b, os.X_OK):
            raise UsageError(f"bundle {bundle}: {t['label']}: {t['path']} is not executable")
