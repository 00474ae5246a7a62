"""The run history's storage: the SQLite and PostgreSQL connections, the schema and its ordered
migrations, and the status predicates the partial indexes are built on (reports/history.py
stores and queries runs through these).
"""

import datetime
import os
import re
import sqlite3
import sys

from reports import settings
from reports.model import Change, Status

SCHEMA_VERSION = 3
# Built from the model's Status and Change. FAILING keeps the order migration 2 wrote into the
# partial indexes: a query uses such an index only when it repeats the index's predicate.
FAILING = tuple(s.value for s in (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.MISSING,
                                  Status.INFRA_ERROR))
assert set(FAILING) == {s.value for s in Status if s.is_fail}
PASSING = tuple(s.value for s in Status if s.is_pass)
NOT_RUN = tuple(s.value for s in Status if s.is_coverage_gap)
PROBLEM_COMPARISONS = (Change.REGRESSION.value, Change.COVERAGE_LOST.value)


def _in(values):
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


# The few rows a fleet report reads out of ~240,000 per night, each behind a partial index. The
# report's queries spell these exact predicates (constants, not parameters), so that both SQLite
# and PostgreSQL can prove that the partial index applies.
PROBLEM_SQL = f"(status IN {_in(FAILING)} OR comparison IN {_in(PROBLEM_COMPARISONS)})"
NOT_RUN_SQL = f"status IN {_in(NOT_RUN)}"


class HistoryError(sqlite3.DatabaseError):
    """A database that cannot be opened, migrated or written; the message says why. A subclass
    of sqlite3.Error, so callers written for the SQLite-only history also catch PostgreSQL's."""
    infra = False  # True: the server or the disk failed (exit 1), not the configuration (exit 2)


class HistoryUnavailable(HistoryError):
    """The database cannot be reached or written now: a server down, a full disk, an I/O error."""
    infra = True


INFRA_WORDS = ("cannot connect", "disk is full", "No space left", "disk I/O error", "server closed",
               "could not connect", "timeout", "canceling statement", "lock timeout", "database is locked")


def _infra(msg):
    return any(w.lower() in str(msg).lower() for w in INFRA_WORDS)


# Migrations: (version, description, statements). Statements are plain SQL with `?` parameters
# and these type words, spelled per backend: {pk} an auto-increment primary key, {int} a 64-bit
# integer, {real} a double. Never edit a released migration: add the next one.
MIGRATIONS = [
    (1, "runs, cases and metrics", [
        """CREATE TABLE IF NOT EXISTS runs (
          id {pk},
          run_key TEXT UNIQUE NOT NULL,
          started_at TEXT NOT NULL,
          host TEXT, sku TEXT, gpu_name TEXT, gpu_uuid TEXT,
          nvidia_driver TEXT, cuda_driver TEXT, cuda_runtime TEXT,
          harness_commit TEXT, seed TEXT, verdict TEXT, exit_code INTEGER,
          fingerprint_json TEXT)""",
        """CREATE TABLE IF NOT EXISTS cases (
          run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          case_id TEXT NOT NULL, status TEXT NOT NULL, comparison TEXT, seconds {real},
          attempts TEXT, message TEXT,
          PRIMARY KEY (run_id, case_id))""",
        """CREATE TABLE IF NOT EXISTS metrics (
          run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          case_id TEXT NOT NULL, name TEXT NOT NULL, value {real} NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS cases_by_id ON cases(case_id, run_id)",
        "CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics(name, run_id)",
    ]),
    (2, "fleet: label, tier, night, run_dir, report; case ids in case_names", [
        "ALTER TABLE runs ADD COLUMN label TEXT",
        "ALTER TABLE runs ADD COLUMN tier TEXT",
        "ALTER TABLE runs ADD COLUMN night TEXT",
        "ALTER TABLE runs ADD COLUMN run_dir TEXT",
        "ALTER TABLE runs ADD COLUMN report TEXT",
        "ALTER TABLE runs ADD COLUMN stored_at TEXT",
        "ALTER TABLE runs ADD COLUMN n_cases INTEGER",
        "UPDATE runs SET night = substr(started_at, 1, 10)",
        "CREATE INDEX runs_by_label ON runs(label)",
        "CREATE INDEX runs_by_night ON runs(night)",
        "CREATE INDEX runs_by_sku ON runs(sku, started_at)",
        "CREATE TABLE case_names (id {pk}, name TEXT UNIQUE NOT NULL)",
        "INSERT INTO case_names (name) SELECT DISTINCT case_id FROM cases ORDER BY case_id",
        "INSERT INTO case_names (name) SELECT DISTINCT case_id FROM metrics"
        " WHERE case_id NOT IN (SELECT name FROM case_names) ORDER BY case_id",
        """CREATE TABLE cases2 (
          run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          case_ref {int} NOT NULL REFERENCES case_names(id),
          status TEXT NOT NULL, comparison TEXT, seconds {real}, attempts TEXT, message TEXT,
          PRIMARY KEY (run_id, case_ref))""",
        "INSERT INTO cases2 (run_id, case_ref, status, comparison, seconds, attempts, message)"
        " SELECT c.run_id, n.id, c.status, c.comparison, c.seconds,"
        " CASE WHEN c.attempts = c.status THEN NULL ELSE c.attempts END,"
        " CASE WHEN c.message = '' THEN NULL ELSE c.message END"
        " FROM cases c JOIN case_names n ON n.name = c.case_id",
        """CREATE TABLE metrics2 (
          run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          case_ref {int} NOT NULL REFERENCES case_names(id),
          name TEXT NOT NULL, value {real} NOT NULL)""",
        "INSERT INTO metrics2 (run_id, case_ref, name, value) SELECT m.run_id, n.id, m.name, m.value"
        " FROM metrics m JOIN case_names n ON n.name = m.case_id",
        "DROP TABLE cases",
        "DROP TABLE metrics",
        "ALTER TABLE cases2 RENAME TO cases",
        "ALTER TABLE metrics2 RENAME TO metrics",
        "CREATE INDEX cases_by_case ON cases(case_ref, run_id)",
        "CREATE INDEX metrics_by_name2 ON metrics(name, run_id)",
        "UPDATE runs SET n_cases = (SELECT COUNT(*) FROM cases WHERE cases.run_id = runs.id)",
        f"CREATE INDEX cases_problems ON cases(run_id) WHERE {PROBLEM_SQL}",
        f"CREATE INDEX cases_problems_by_case ON cases(case_ref, run_id) WHERE {PROBLEM_SQL}",
        f"CREATE INDEX cases_not_run ON cases(run_id, case_ref) WHERE {NOT_RUN_SQL}",
    ]),
    (3, "rosters, case_nights, metrics(run_id), nullable flagged metric values", [
        """CREATE TABLE rosters (
          label TEXT NOT NULL, host TEXT NOT NULL, night TEXT, sku TEXT, features TEXT, gres TEXT,
          state TEXT NOT NULL, reason TEXT, job_id TEXT, submitted_at TEXT NOT NULL,
          PRIMARY KEY (label, host))""",
        "CREATE INDEX rosters_by_night ON rosters(night)",
        "CREATE INDEX rosters_by_host ON rosters(host, night)",
        """CREATE TABLE case_nights (
          sku TEXT NOT NULL, case_ref {int} NOT NULL REFERENCES case_names(id), night TEXT NOT NULL,
          outcome TEXT NOT NULL, PRIMARY KEY (sku, case_ref, outcome, night))""",
        "INSERT INTO case_nights (sku, case_ref, night, outcome) SELECT DISTINCT r.sku, c.case_ref, r.night,"
        f" CASE WHEN c.status IN {_in(PASSING)} THEN 'P' ELSE 'F' END FROM cases c JOIN runs r ON r.id = c.run_id"
        f" WHERE r.sku IS NOT NULL AND r.night IS NOT NULL AND c.status IN {_in(PASSING + FAILING)}",
        "CREATE INDEX runs_by_host ON runs(host, id)",
        "CREATE INDEX runs_by_sku_night ON runs(sku, night, started_at)",
        # SQLite cannot drop a NOT NULL: the table is rebuilt there (a local file, small).
        ("""CREATE TABLE metrics3 (
          run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          case_ref INTEGER NOT NULL REFERENCES case_names(id), name TEXT NOT NULL, value REAL, flag TEXT)""",
         "ALTER TABLE metrics ALTER COLUMN value DROP NOT NULL"),
        ("INSERT INTO metrics3 (run_id, case_ref, name, value) SELECT run_id, case_ref, name, value FROM metrics",
         "ALTER TABLE metrics ADD COLUMN flag TEXT"),
        ("DROP TABLE metrics", None),
        ("ALTER TABLE metrics3 RENAME TO metrics", None),
        ("CREATE INDEX metrics_by_name2 ON metrics(name, run_id)", None),
        "CREATE INDEX metrics_by_run ON metrics(run_id)",
    ]),
]
assert [m[0] for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))

RUN_COLUMNS = ("run_key", "started_at", "host", "sku", "gpu_name", "gpu_uuid", "nvidia_driver",
               "cuda_driver", "cuda_runtime", "harness_commit", "seed", "verdict", "exit_code",
               "fingerprint_json", "label", "tier", "night", "run_dir", "report", "stored_at", "n_cases")
CASE_COLUMNS = ("run_id", "case_ref", "status", "comparison", "seconds", "attempts", "message")
METRIC_COLUMNS = ("run_id", "case_ref", "name", "value", "flag")


def is_url(target):
    return str(target).startswith(("postgresql://", "postgres://"))


def redact(target):
    """The URL (or libpq keyword string) without its password, for every message and file: the
    user:password@ form (a password may hold '/', '@' or ':'), ?password= / &password= and the
    keyword form password=..."""
    s = re.sub(r"(?i)(^|[?&;\s])(password|passwd)=[^&;\s]*", r"\1\2=***", str(target))
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^?]*)(.*)$", s, re.S)
    if m:
        head, authority, rest = m.groups()
        at = authority.rfind("@")
        if at >= 0 and ":" in authority[:at]:
            user = authority[:authority.index(":")]
            authority = f"{user}:***{authority[at:]}"
        s = head + authority + rest
    return s


def has_password(target):
    """True when the URL carries a password (which argv, logs and files would then show)."""
    return redact(target) != str(target)


def timeouts():
    """(statement timeout s, lock timeout s) from the environment; 0 means none."""
    def num(name):
        v = settings.raw(name) or ""
        try:
            return max(0.0, float(v)) if v else float(settings.default_number(name))
        except ValueError:
            raise HistoryError(f"${name}={v!r}: expected seconds") from None
    return num("PAGELOCK_HISTORY_STATEMENT_TIMEOUT"), num("PAGELOCK_HISTORY_LOCK_TIMEOUT")


class Database:
    """One connection, SQLite or PostgreSQL, behind the few calls history needs. SQL is written
    once with `?` parameters; `execute` returns a cursor (fetchone/fetchall)."""

    read_only = None  # why this history can only be read (a read-only mount), or None

    def __init__(self, conn, backend, target):
        self.conn, self.backend, self.target = conn, backend, target

    def sql(self, text):
        text = text.replace("{int}", "BIGINT" if self.backend == "postgresql" else "INTEGER")
        text = text.replace("{real}", "DOUBLE PRECISION" if self.backend == "postgresql" else "REAL")
        text = text.replace("{pk}", "BIGSERIAL PRIMARY KEY" if self.backend == "postgresql"
                            else "INTEGER PRIMARY KEY AUTOINCREMENT")
        return text.replace("?", "%s") if self.backend == "postgresql" else text

    def execute(self, text, args=()):
        cur = self.conn.cursor()
        cur.execute(self.sql(text), tuple(args))
        return cur

    def insert_many(self, table, columns, rows, tail=""):
        if not rows:
            return
        head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
        if self.backend == "postgresql":
            from psycopg2.extras import execute_values
            execute_values(self.conn.cursor(), head + "%s" + tail, rows, page_size=1000)
        else:
            self.conn.executemany(head + "(" + ",".join("?" * len(columns)) + ")" + tail, rows)

    def begin(self):
        # SQLite: take the write lock now, so two writers queue instead of deadlocking.
        self.execute("BEGIN IMMEDIATE" if self.backend == "sqlite" else "BEGIN")

    def commit(self):
        self.execute("COMMIT")

    def rollback(self):
        try:
            self.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 -- the connection may be gone; nothing was committed
            pass

    def close(self):
        self.conn.close()

    # Schema version: PRAGMA user_version on SQLite, the schema_version table on PostgreSQL.
    def version(self):
        if self.backend == "sqlite":
            v = self.execute("PRAGMA user_version").fetchone()[0]
            if v == 0 and self.execute(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'").fetchone():
                return 1  # written before versioning existed: exactly migration 1's schema
            return v
        if not self.execute("SELECT to_regclass('schema_version')").fetchone()[0]:
            return 0
        return self.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]

    def set_version(self, version, description):
        if self.backend == "sqlite":
            self.execute(f"PRAGMA user_version = {int(version)}")
        else:
            self.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
                         " description TEXT NOT NULL, applied_at TEXT NOT NULL)")
            self.execute("INSERT INTO schema_version (version, description, applied_at) VALUES (?,?,?)",
                         (version, description, _now()))

    def lock_for_migration(self):
        if self.backend == "postgresql":  # hosts starting together migrate once, in turn
            self.execute("SELECT pg_advisory_xact_lock(7021526)")

    def hold_migration_lock(self, hold):
        """Holds (or lets go of) the migration lock across every step of a migration from an
        empty database, so that a client meeting it half-way waits instead of calling it old."""
        if self.backend == "postgresql":
            self.execute("SELECT pg_advisory_lock(7021526)" if hold else "SELECT pg_advisory_unlock(7021526)")


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _open(target):
    statement_s, lock_s = timeouts()
    if is_url(target):
        try:
            import psycopg2
        except ImportError:
            raise HistoryError(
                f"{redact(target)}: a postgresql:// history needs psycopg2 (Debian package "
                f"python3-psycopg2), which {sys.executable} cannot import; run the tool with "
                "/usr/bin/python3, or set PAGELOCK_PYTHON to a python3 that has it") from None
        # Every statement and lock wait is bounded: an import behind a table lock gives up after
        # the lock timeout instead of holding a node until the Slurm time limit.
        options = f"-c statement_timeout={int(statement_s * 1000)} -c lock_timeout={int(lock_s * 1000)}"
        try:
            conn = psycopg2.connect(target, connect_timeout=15, options=options, keepalives=1,
                                    keepalives_idle=30, keepalives_interval=10, keepalives_count=3)
        except psycopg2.Error as e:
            raise HistoryUnavailable(f"{redact(target)}: cannot connect: {redact(str(e).strip())}") from None
        conn.autocommit = True  # transactions are explicit (begin/commit)
        try:
            conn.set_client_encoding("UTF8")  # names and messages are UTF-8, whatever the locale
        except psycopg2.Error as e:
            conn.close()
            raise HistoryError(f"{redact(target)}: cannot speak UTF-8 to it: {redact(str(e).strip())}") from None
        return Database(conn, "postgresql", target)
    existed = os.path.exists(target)
    why_ro = read_only_reason(target) if existed else None
    if why_ro:
        return _open_read_only(target, why_ro, lock_s)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    conn = None
    try:
        conn = sqlite3.connect(target, timeout=max(lock_s, 1), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA busy_timeout={int(max(lock_s, 1) * 1000)}")
        conn.execute("PRAGMA foreign_keys=ON")
        if existed:
            _check_sqlite(conn, target)
    except sqlite3.Error as e:
        if conn is not None:
            conn.close()
        _remove_if_we_created_it(target, existed)
        if existed and "readonly" in str(e).replace("-", "").replace(" ", ""):
            return _open_read_only(target, str(e), lock_s)
        cls = HistoryUnavailable if _infra(e) else HistoryError
        raise cls(f"{target}: cannot open as SQLite: {e}") from None
    db = Database(conn, "sqlite", target)
    db.created = not existed
    return db


def read_only_reason(path):
    """Why a SQLite history that exists can only be read (a read-only mount, a file or folder
    this user may not write: WAL mode writes beside the file), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    for p, what in ((path, "the file"), (folder, "its folder")):
        if not os.access(p, os.W_OK):
            try:
                ro_mount = os.statvfs(p).f_flag & os.ST_RDONLY
            except OSError:
                ro_mount = False
            return f"{what} is on a read-only file system" if ro_mount else f"{what} is not writable"
    return None


def _open_read_only(target, why, lock_s):
    """A sound history that cannot be written is still read: opened read-only (mode=ro), and
    where WAL mode cannot make its shared-memory file beside it (a read-only mount), as an
    immutable file, which nothing can be writing. Database.read_only says why."""
    from urllib.parse import quote
    path = quote(os.path.abspath(target))
    last = None
    uris = [f"file:{path}?mode=ro"]
    try:
        wal = os.path.getsize(target + "-wal")
    except OSError:
        wal = 0
    if not wal:  # with a log never merged into it, the file alone is not the history
        uris.append(f"file:{path}?mode=ro&immutable=1")
    for uri in uris:
        conn = None
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=max(lock_s, 1), isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout={int(max(lock_s, 1) * 1000)}")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            _check_sqlite(conn, target)
        except sqlite3.Error as e:
            last = e
            if conn is not None:
                conn.close()
            continue
        db = Database(conn, "sqlite", target)
        db.created, db.read_only = False, why
        return db
    cls = HistoryUnavailable if _infra(last) else HistoryError
    unmerged = f"; its write-ahead log {target}-wal ({wal} bytes) was never merged into it, so " \
        "it cannot be read where it is: copy it, with that file, somewhere writable" if wal else ""
    raise cls(f"{target}: cannot open as SQLite, even read-only ({why}): {last}{unmerged}")


QUICK_CHECK_MAX_BYTES = 256 << 20


def _check_sqlite(conn, target):
    """Damage inside the file (not only a bad header) is found before anything is written into it:
    PRAGMA quick_check reads every page (about 0.1 s per 50 MB here); a bigger file is trusted."""
    if os.path.getsize(target) > QUICK_CHECK_MAX_BYTES:
        return
    row = conn.execute("PRAGMA quick_check(1)").fetchone()
    if row and row[0] != "ok":
        raise sqlite3.DatabaseError(f"database disk image is malformed (quick_check: {row[0]})")


def _remove_if_we_created_it(target, existed):
    """A database this call created and could not initialise (a full disk) is removed with its
    WAL files, so no 0-byte history.sqlite is left to be mistaken for a history."""
    if existed:
        return
    try:
        if os.path.getsize(target) >= 512:  # it holds a page: someone else's database now
            return
        os.remove(target)
    except OSError:
        return
    for path in (target + "-wal", target + "-shm", target + "-journal"):
        try:
            os.remove(path)
        except OSError:
            pass


class SchemaTooOld(HistoryError):
    pass


def connect(target, migrate=None):
    """Opens a history (SQLite path or postgresql:// URL). A new, empty database gets the current
    schema. An older schema is migrated when `migrate` is true, or by default on a local SQLite
    file; on PostgreSQL it raises SchemaTooOld (run `history.py migrate`, once, as the operator).
    Raises HistoryError for a database newer than this code, or one it cannot open or migrate
    (HistoryUnavailable when the server or the disk failed)."""
    db = _open(target)
    try:
        current = db.version()
        if db.backend == "postgresql" and 0 < current < SCHEMA_VERSION:
            # Clients that meet a new database together: one migrates it from 0, holding the
            # migration lock; another must not read the version half-way and call the database
            # old. It waits for that lock, then reads the version again.
            db.execute("SELECT pg_advisory_lock(7021526)")
            db.execute("SELECT pg_advisory_unlock(7021526)")
            current = db.version()
        if current > SCHEMA_VERSION:
            raise HistoryError(
                f"{redact(target)}: schema version {current} is newer than this pagelock knows "
                f"({SCHEMA_VERSION}); update pagelock. Nothing was read or written.")
        if current < SCHEMA_VERSION and db.read_only:
            raise HistoryError(
                f"{redact(target)}: read-only ({db.read_only}) at schema version {current}, older "
                f"than this pagelock's ({SCHEMA_VERSION}), which cannot migrate it; copy it where "
                "it can be written. Nothing was read or written.")
        if current < SCHEMA_VERSION:
            implicit = current == 0 or db.backend == "sqlite"
            if migrate or (migrate is None and implicit):
                if current == 0:
                    db.hold_migration_lock(True)
                try:
                    migrate_to(db, SCHEMA_VERSION)
                finally:
                    if current == 0:
                        db.hold_migration_lock(False)
            elif migrate is None:
                raise SchemaTooOld(
                    f"{redact(target)}: schema version {current} is older than this pagelock's "
                    f"({SCHEMA_VERSION}); an operator migrates it once: reports/history.py --db URL migrate. "
                    "Nothing was read or written.")
    except HistoryError:
        db.close()
        if db.backend == "sqlite" and getattr(db, "created", False):
            _remove_if_we_created_it(target, False)
        raise
    except Exception as e:  # driver errors of either backend
        db.close()
        if db.backend == "sqlite" and getattr(db, "created", False):
            _remove_if_we_created_it(target, False)
        cls = HistoryUnavailable if _infra(e) else HistoryError
        raise cls(f"{redact(target)}: {type(e).__name__}: {redact(str(e).strip())}") from None
    return db


def migrate_to(db, target_version):
    """Applies migrations after the database's version up to target_version, each in its own
    transaction together with its version stamp, so a failed step leaves the previous version."""
    for version, description, statements in MIGRATIONS:
        if version > target_version:
            break
        db.begin()
        try:
            db.lock_for_migration()
            if db.version() >= version:  # another host did it while we waited
                db.rollback()
                continue
            if db.backend == "postgresql":  # a migration may rewrite a table: no statement timeout
                db.execute("SET LOCAL statement_timeout = 0")
            for s in statements:
                if isinstance(s, tuple):  # (SQLite statement, PostgreSQL statement); None: nothing
                    s = s[0] if db.backend == "sqlite" else s[1]
                if s:
                    db.execute(s)
            db.set_version(version, description)
            db.commit()
        except BaseException:
            db.rollback()
            raise
