"""What the runner writes under --out, file by file: folders made and cleared without following a
link out of --out, files written atomically (a full disk or a kill never leaves half a file),
and test.log capped to its head and tail."""

import json
import os
import shutil
import stat
import threading
import xml.etree.ElementTree as ET

from reports import testlogs
from tools.runner.config import RUNNER_JSON, OutputError, UsageError, cannot_write
from tools.runner.leftovers import LIVE_DIR
from tools.runner.manifest import read_regular_file, valid_label


# ---------------------------------------------------------------------------------------------
# Files written atomically

def write_atomic(path, write):
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(cannot_write(path, e)) from e


def json_bytes(data, indent=1):
    return json.dumps(data, indent=indent, default=str).encode()


def write_json(path, data):
    write_atomic(path, lambda f: f.write(json_bytes(data)))


def write_padded_json(path, data, size):
    """JSON padded with spaces to `size` bytes (JSON allows trailing spaces), so a later record
    can overwrite it in place without a new block (overwrite_in_place)."""
    write_atomic(path, lambda f: f.write(json_bytes(data).ljust(size)))


def overwrite_in_place(path, info):
    """The last runner.json where a new file cannot be written (a full disk): the one already
    there is overwritten in its own blocks, the whole record if it fits, else a short one
    (status, message, per target its label, counts and problems). Never raises."""
    try:
        with open(path, "r+b") as f:
            room = os.fstat(f.fileno()).st_size
            data = json_bytes(info, None)
            if len(data) > room:
                data = _short_record(info, room)
            f.write(data[:room])
            f.truncate(min(len(data), room))
            f.flush()
            os.fsync(f.fileno())
    except OSError:
        pass


def _short_record(info, room):
    short = {k: info.get(k) for k in ("format", "status", "message", "seed",
                                       "started_at", "environment_cleared")}
    short["targets"] = [{"label": t["label"], "counts": t["counts"],
                         "problems": t["problems"][:3]} for t in info["targets"]]
    short["not_run"] = info.get("not_run", [])
    short["shortened"] = "the disk was full: this is a short record, in place"
    data = json_bytes(short, None)
    if len(data) > room:
        short["targets"], short["not_run"] = [], []
        data = json_bytes(short, None)
    return data


def write_xml(path, label, root_attrs, elements):
    def w(f):
        root = testlogs.merged_xml_root(label, root_attrs, elements)
        ET.ElementTree(root).write(f, encoding="UTF-8", xml_declaration=True)
    write_atomic(path, w)


# ---------------------------------------------------------------------------------------------
# test.log

class CappedLog:
    """test.log: the first head bytes as they come, the last tail bytes at close, and one line
    that says how much was cut between them. Write errors (a full disk) are remembered, never
    raised in the middle of a test: the output is drained either way."""

    def __init__(self, path, head, tail):
        self.path, self.head, self.tail_cap = path, head, tail
        self.written = 0
        self.cut = 0
        self.tail = bytearray()
        self.recent = bytearray()  # the last few KiB, for a blamed case's log_tail
        self.error = None
        self.lock = threading.Lock()
        try:
            self.f = open(path, "wb")
        except OSError as e:
            raise OutputError(cannot_write(path, e)) from e

    def write(self, data):
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        with self.lock:
            self.recent += data[-8192:]
            del self.recent[:-8192]
            room = self.head - self.written
            if room > 0:
                self._raw(data[:room])
                self.written += min(room, len(data))
                data = data[room:]
            if data:
                self.tail += data
                if len(self.tail) > self.tail_cap:
                    drop = len(self.tail) - self.tail_cap
                    self.cut += drop
                    del self.tail[:drop]

    def recent_text(self, n=3000):
        with self.lock:
            return bytes(self.recent[-n:]).decode("utf-8", "replace")

    def _raw(self, data):
        if self.error or not data:
            return
        try:
            self.f.write(data)
            self.f.flush()
        except OSError as e:
            self.error = e

    def close(self):
        with self.lock:
            if self.cut:
                self._raw(f"\n[pagelock runner: {self.cut} bytes of output cut here; test.log keeps "
                          f"the first {self.head} and the last {self.tail_cap} bytes]\n".encode())
            self._raw(bytes(self.tail))
            self.tail = bytearray()
            try:
                self.f.close()
            except OSError as e:
                self.error = self.error or e


# ---------------------------------------------------------------------------------------------
# Folders under --out

def target_dir(out, label):
    package, name = label[2:].split(":")
    return os.path.join(out, package, name)


def prepare_out(out):
    """--out is new, empty, or a previous runner output (whose targets are replaced). Nothing
    outside --out is ever removed: a link on the way to a target folder is removed itself, never
    followed."""
    if not os.path.lexists(out):
        return
    if os.path.islink(out) or not os.path.isdir(out):
        raise UsageError(f"--out {out}: exists and is not a folder")
    try:
        entries = [e for e in os.listdir(out) if e != LIVE_DIR]  # a run's lock (leftovers.py)
    except OSError as e:
        raise OutputError(f"cannot read {out}: {e.strerror or e}")
    if not entries:
        return
    prev = os.path.join(out, RUNNER_JSON)
    if not os.path.isfile(prev) or os.path.islink(prev):
        raise UsageError(f"--out {out}: not empty and not written by the runner (no {RUNNER_JSON});"
                         " give a new or empty folder")
    try:
        old = json.loads(read_regular_file(prev).decode("utf-8"))
        labels = [t["label"] for t in old.get("targets", []) + old.get("not_run", [])]
        if not all(valid_label(x) for x in labels):
            raise ValueError("a target label is not //package:name")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise UsageError(f"--out {out}: {RUNNER_JSON} of the previous run is unreadable ({e}); "
                         "give a new or empty folder")
    try:
        for label in labels:
            _remove_target_dir(out, label)
        os.unlink(prev)
    except OSError as e:
        raise OutputError(cannot_write(out, e, "clear the previous run in"))


def _target_parts(label):
    package, name = label[2:].split(":")
    return [p for p in package.split("/") if p] + [name]


def _remove(path):
    """Removes a path inside --out: a link or file is unlinked (never followed), a folder
    removed with everything in it (shutil.rmtree never follows the links inside)."""
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _remove_target_dir(out, label):
    """Removes an earlier run's target folder, walking down from --out with lstat: a link on the
    way is removed itself, and what it points to (outside --out, maybe) is never touched. Then
    the package folders it leaves empty."""
    parts = _target_parts(label)
    path, walked = out, []
    for i, part in enumerate(parts):
        path = os.path.join(path, part)
        st = _lstat(path)
        if st is None:
            break
        if i == len(parts) - 1 or not stat.S_ISDIR(st.st_mode):
            _remove(path)  # the target folder, or a link or file in the way
            break
        walked.append(path)
    for d in reversed(walked):
        if os.listdir(d):
            break
        os.rmdir(d)


def fresh_target_dir(out, label):
    """An empty <out>/<package>/<name> with test.outputs/ in it, made by walking down from --out
    with lstat: a link on the way is removed and replaced by a folder, never written through."""
    path = out
    try:
        os.makedirs(out, exist_ok=True)  # made by run(); again if it went away meanwhile
        parts = _target_parts(label)
        for i, part in enumerate(parts):
            path = os.path.join(path, part)
            st = _lstat(path)
            leaf = i == len(parts) - 1
            if st is not None and (leaf or not stat.S_ISDIR(st.st_mode)):
                _remove(path)
                st = None
            if st is None:
                try:
                    os.mkdir(path)
                except FileExistsError:  # a parallel target of the same package made it
                    if leaf or not stat.S_ISDIR(os.lstat(path).st_mode):
                        raise
        os.mkdir(os.path.join(path, "test.outputs"))
    except OSError as e:
        raise OutputError(cannot_write(path, e)) from e
    return path


def make_attempt_dir(tdir, attempt):
    """<target>/test.outputs/attempt_N with its tmp/ (the binary's TEST_TMPDIR)."""
    adir = os.path.join(tdir, "test.outputs", f"attempt_{attempt}")
    try:
        os.makedirs(os.path.join(adir, "tmp"))
    except OSError as e:
        raise OutputError(cannot_write(adir, e)) from e
    return adir
