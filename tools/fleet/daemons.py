"""Real services for tests and the benchmark: a PostgreSQL server and a one-node Slurm cluster
(munge, slurmctld, slurmd with a GPU GRES on /dev/null), each in a temporary folder, on a Unix
socket or private ports, started in the foreground so that stop() ends exactly the processes it
started, by pid. How these were made to run as root is in shared/notes/platform.md.

  with PostgresServer() as pg:  pg.url  ->  postgresql:///postgres?host=DIR&user=pagelock
  with SlurmCluster() as slurm: slurm.env  (SLURM_CONF for sbatch, squeue, ...)
  SlurmCluster(nodes=[("n1", "h200", "nvidia-h200"), ("n2", ...), ...]): several nodes on this one
      machine: one slurmd per node (`slurmd -N NAME`, NodeAddr=127.0.0.1, a port each), each in its
      own UTS namespace (`unshare -u`, hostname NAME), so `hostname` in a job, and qualify's
      fingerprint, name the node. kill_node() SIGKILLs every process of that namespace (slurmd,
      slurmstepd, the job): a node that dies mid-run. Debian's slurmd runs several per host this way.

Either raises Unavailable(reason) when its daemons cannot start here; tests skip with the reason.
"""

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time


class Unavailable(Exception):
    pass


def _stop(procs, timeout=10):
    """SIGTERM, then SIGKILL, each process we started (by its pid), newest first."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for p in reversed(procs):
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def _tail(path, n=1500):
    try:
        with open(path, errors="replace", encoding="utf-8") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def _private_tmp(prefix):
    # Not under TEST_TMPDIR: that is inside /root (mode 700), which the postgres user cannot enter,
    # and Unix socket paths must stay under 108 bytes.
    return tempfile.mkdtemp(prefix=prefix, dir="/tmp")


class PostgresServer:
    def __init__(self, user="pagelock"):
        self.user = user
        self.dir = self.proc = None
        self.procs = []

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        return f"postgresql:///postgres?host={self.dir}&user={self.user}"

    def start(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
        if not bins:
            raise Unavailable("no PostgreSQL server (Debian package postgresql: /usr/lib/postgresql/*/bin/initdb)")
        bindir = os.path.dirname(bins[-1])
        self.dir = _private_tmp("pagelock-pg-")
        data = os.path.join(self.dir, "data")
        as_user = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable("running as root and there is no 'postgres' user to run the server as") from None
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            as_user = ["runuser", "-u", "postgres", "--"]
        r = subprocess.run(as_user + [os.path.join(bindir, "initdb"), "-D", data, "-A", "trust",
                                      "-U", self.user, "--no-sync", "-E", "UTF8"],
                           capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=120)
        if r.returncode != 0:
            self.stop()
            raise Unavailable(f"initdb failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")
        self.bindir, self.data, self.as_user = bindir, data, as_user
        self.pw = pw if as_user else None
        return self.start_existing()

    def start_existing(self):
        """Starts the postmaster on the data folder made by start() (again, after stop_keep())."""
        log = os.path.join(self.dir, "postgres.log")
        with open(log, "a", encoding="utf-8") as f:
            if self.as_user:
                os.chown(log, self.pw.pw_uid, self.pw.pw_gid)
            # Foreground postmaster: its pid is ours to stop. Unix socket only, no TCP.
            self.proc = subprocess.Popen(
                self.as_user + [os.path.join(self.bindir, "postgres"), "-D", self.data, "-k", self.dir,
                                "-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=200"],
                stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(self.proc)
        sock = os.path.join(self.dir, ".s.PGSQL.5432")
        deadline = time.monotonic() + 60
        while not os.path.exists(sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = _tail(log)
                self.stop()
                raise Unavailable(f"postgres did not start: {why.strip()}")
            time.sleep(0.1)
        time.sleep(0.3)  # the socket appears just before the server accepts connections
        return self

    def postmaster_pid(self):
        """The server's own pid (runuser's child when run as root), from postmaster.pid."""
        try:
            with open(os.path.join(self.data, "postmaster.pid"), encoding="utf-8") as f:
                return int(f.readline())
        except (OSError, ValueError, TypeError):
            return self.proc.pid if self.proc else None

    def stop_keep(self):
        """Stops the server and keeps its data (start_existing() starts it again)."""
        _stop(self.procs, timeout=60)
        self.procs = []
        sock = os.path.join(self.dir, ".s.PGSQL.5432")
        deadline = time.monotonic() + 30
        while os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.1)

    def stop(self):
        _stop(self.procs)
        self.procs = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def _free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class SlurmCluster:
    """Default: one node named after this host with CPUs=2, Gres=gpu:h200:1 (File=/dev/null),
    Feature=nvidia-h200, in partition `gpu`. With nodes=[(name, gpu type, feature)], those nodes,
    each its own slurmd in its own UTS namespace."""

    def __init__(self, gpu_type="h200", feature="nvidia-h200", partition="gpu", nodes=None,
                 slurmd_timeout=20, kill_wait=10):
        self.gpu_type, self.feature, self.partition = gpu_type, feature, partition
        self.multi = nodes is not None
        self.nodes = list(nodes or [])
        self.slurmd_timeout, self.kill_wait = slurmd_timeout, kill_wait
        self.dir = None
        self.procs = []
        self.slurmds = {}
        self.env = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self._check_prerequisites()
        d, key, msock = self._make_dirs_and_key()
        conf = self._write_conf(d, msock)
        self.env = dict(os.environ, SLURM_CONF=conf)
        self.env["PATH"] = self.env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        log = open(os.path.join(d, "log", "daemons.out"), "w", encoding="utf-8")
        try:
            self._spawn(["munged", "-F", "--key-file", key, "--socket", msock,
                         "--pid-file", os.path.join(d, "munge", "munged.pid"),
                         "--log-file", os.path.join(d, "munge", "munged.log"),
                         "--seed-file", os.path.join(d, "munge", "munged.seed"), "--force"], log)
            self._wait(lambda: os.path.exists(msock), "munged", os.path.join(d, "munge", "munged.log"))
            self._spawn(["slurmctld", "-D", "-i", "-f", conf], log)
            self._wait(lambda: self._run("scontrol", "ping").returncode == 0 and
                       "UP" in self._run("scontrol", "ping").stdout, "slurmctld",
                       os.path.join(d, "log", "slurmctld.log"))
            self.conf = conf
            for n in self.nodes:
                self.start_node(n[0], log)
            self._wait(self._node_idle, "slurmd", os.path.join(d, "log", f"slurmd-{self.nodes[0][0]}.log"))
        except Unavailable:
            self.stop()
            raise
        finally:
            log.close()
        return self


    def _check_prerequisites(self):
        need = ["munged", "slurmctld", "slurmd", "sbatch", "squeue"]
        missing = [b for b in need if not shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin")]
        if missing:
            raise Unavailable(f"Slurm/munge not installed (missing {', '.join(missing)}; Debian packages "
                              "slurmctld slurmd slurm-client munge)")
        if os.geteuid() != 0:
            raise Unavailable("a Slurm cluster with SlurmUser=root needs root")
        if self.multi and subprocess.run(["unshare", "-u", "true"], capture_output=True).returncode != 0:
            raise Unavailable("several nodes on one machine need `unshare -u` (a UTS namespace per slurmd)")

    def _make_dirs_and_key(self):
        self.dir = d = _private_tmp("pagelock-slurm-")
        for sub in ("state", "spool", "log", "munge"):
            os.makedirs(os.path.join(d, sub))
        key = os.path.join(d, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        os.chmod(os.path.join(d, "munge"), 0o700)
        msock = os.path.join(d, "munge", "munge.socket")
        host = socket.gethostname().split(".")[0]
        self.host = host
        if not self.multi:
            self.nodes = [(host, self.gpu_type, self.feature)]
        return d, key, msock

    def _write_conf(self, d, msock):
        """slurm.conf (one node, or several nodes each with its own port and UTS name) and gres.conf."""
        host = self.host
        ports = _free_ports(2 + len(self.nodes))
        ctld_port, d_port = ports[0], ports[1]
        self.ports = dict(zip([n[0] for n in self.nodes], ports[2:]))
        if self.multi:
            node_lines = "".join(
                f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={n} Port={self.ports[n]} CPUs=2 RealMemory=2000"
                f" Gres=gpu:{t}:1 Feature={f} State=UNKNOWN\n" for n, t, f in self.nodes)
            gres_lines = "".join(f"NodeName={n} Name=gpu Type={t} File=/dev/null\n" for n, t, f in self.nodes)
        else:
            node_lines = (f"NodeName={host} CPUs=2 RealMemory=2000 Gres=gpu:{self.gpu_type}:1 "
                          f"Feature={self.feature} State=UNKNOWN\n")
            gres_lines = f"NodeName={host} Name=gpu Type={self.gpu_type} File=/dev/null\n"
        names = ",".join(n[0] for n in self.nodes)
        conf = os.path.join(d, "slurm.conf")
        with open(conf, "w", encoding="utf-8") as f:
            f.write(f"""ClusterName=pagelock
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={msock}
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=600
SlurmdTimeout={self.slurmd_timeout}
KillWait={self.kill_wait}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
{node_lines}PartitionName={self.partition} Nodes={names} Default=YES MaxTime=INFINITE State=UP
""")
        with open(os.path.join(d, "gres.conf"), "w", encoding="utf-8") as f:
            f.write(gres_lines)
        for n in self.nodes:
            os.makedirs(os.path.join(d, "spool", n[0]), exist_ok=True)
        return conf

    def _spawn(self, argv, log):
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def start_node(self, name, log=None):
        """Starts (or restarts) the node's slurmd; in its own UTS namespace when several nodes."""
        own = log is None
        log = log or open(os.path.join(self.dir, "log", "daemons.out"), "a", encoding="utf-8")
        try:
            argv = ["slurmd", "-D", "-f", self.conf, "-N", name]
            if self.multi:  # unshare execs: the pid is slurmd's, and its namespace is the node's
                argv = ["unshare", "-u", "sh", "-c", f"hostname {name} && exec slurmd -D -f {self.conf} -N {name}"]
            self.slurmds[name] = self._spawn(argv, log)
        finally:
            if own:
                log.close()

    def _namespace_pids(self, name):
        """Every process in the node's UTS namespace: its slurmd and all it started (slurmstepd,
        the job script, qualify, the test binaries). Only processes this object started live there."""
        proc = self.slurmds.get(name)
        if not proc or not self.multi:
            return []
        try:
            ns = os.readlink(f"/proc/{proc.pid}/ns/uts")
        except OSError:
            return []
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.readlink(f"/proc/{entry}/ns/uts") == ns:
                        pids.append(int(entry))
                except OSError:
                    pass
        return pids

    def kill_node(self, name):
        """The node dies: SIGKILL to slurmd and every process of its job (by pid, its namespace)."""
        for pid in self._namespace_pids(name):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc = self.slurmds.get(name)
        if proc:
            proc.wait(10)

    def scontrol(self, *argv):
        return self._run("scontrol", *argv)

    def node_state(self, name):
        return self._run("sinfo", "-h", "-n", name, "-N", "-o", "%T").stdout.strip()

    def wait_node(self, name, want=("idle",), timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.node_state(name) in want:
                return True
            time.sleep(0.5)
        return False

    def _run(self, *argv, timeout=20):
        try:
            return subprocess.run(list(argv), capture_output=True, text=True,
                                  encoding="utf-8", errors="replace", env=self.env, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            return subprocess.CompletedProcess(argv, 1, "", str(e))

    def _node_idle(self):
        out = self._run("sinfo", "-h", "-N", "-o", "%T").stdout.split()
        return len(out) >= len(self.nodes) and all(x == "idle" for x in out)

    def _wait(self, ready, name, log, timeout=60):
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = "exited" if dead else f"not ready after {timeout} s"
                raise Unavailable(f"{name} {why}: {_tail(log).strip()} "
                                  f"{_tail(os.path.join(self.dir, 'log', 'daemons.out')).strip()}")
            time.sleep(0.3)

    def stop(self):
        if self.procs and self.env:
            self._run("scancel", "--full", "-u", "root", timeout=10)
        for name in list(self.slurmds):  # jobs still running on a node: their processes too
            for pid in self._namespace_pids(name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        _stop(self.procs)
        self.procs = []
        self.slurmds = {}
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
