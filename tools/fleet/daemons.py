"""Real services for tests and the benchmark: a PostgreSQL server and a one-node Slurm cluster
(munge, slurmctld, slurmd with a GPU GRES on /dev/null), each in a temporary folder, on a Unix
socket or private ports, started in the foreground so that stop() ends exactly the processes it
started, by pid. How these were made to run as root is in shared/notes/platform.md.

  with PostgresServer() as pg:  pg.url  ->  postgresql:///postgres?host=DIR&user=pagelock
  with SlurmCluster() as slurm: slurm.env  (SLURM_CONF for sbatch, squeue, ...)

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
        with open(path, errors="replace") as f:
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
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            self.stop()
            raise Unavailable(f"initdb failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")
        log = os.path.join(self.dir, "postgres.log")
        with open(log, "w") as f:
            if as_user:
                os.chown(log, pw.pw_uid, pw.pw_gid)
            # Foreground postmaster: its pid is ours to stop. Unix socket only, no TCP.
            self.proc = subprocess.Popen(
                as_user + [os.path.join(bindir, "postgres"), "-D", data, "-k", self.dir,
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
    """One node named after this host with CPUs=2, Gres=gpu:h200:1 (File=/dev/null),
    Feature=nvidia-h200, in partition `gpu`."""

    def __init__(self, gpu_type="h200", feature="nvidia-h200", partition="gpu"):
        self.gpu_type, self.feature, self.partition = gpu_type, feature, partition
        self.dir = None
        self.procs = []
        self.env = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        need = ["munged", "slurmctld", "slurmd", "sbatch", "squeue"]
        missing = [b for b in need if not shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin")]
        if missing:
            raise Unavailable(f"Slurm/munge not installed (missing {', '.join(missing)}; Debian packages "
                              "slurmctld slurmd slurm-client munge)")
        if os.geteuid() != 0:
            raise Unavailable("a one-node Slurm cluster with SlurmUser=root needs root")
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
        ctld_port, d_port = _free_ports(2)
        conf = os.path.join(d, "slurm.conf")
        with open(conf, "w") as f:
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
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
NodeName={host} CPUs=2 RealMemory=2000 Gres=gpu:{self.gpu_type}:1 Feature={self.feature} State=UNKNOWN
PartitionName={self.partition} Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        with open(os.path.join(d, "gres.conf"), "w") as f:
            f.write(f"NodeName={host} Name=gpu Type={self.gpu_type} File=/dev/null\n")
        self.env = dict(os.environ, SLURM_CONF=conf)
        self.env["PATH"] = self.env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        log = open(os.path.join(d, "log", "daemons.out"), "w")
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
            self._spawn(["slurmd", "-D", "-f", conf, "-N", host], log)
            self._wait(self._node_idle, "slurmd", os.path.join(d, "log", "slurmd.log"))
        except Unavailable:
            self.stop()
            raise
        finally:
            log.close()
        return self

    def _spawn(self, argv, log):
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))

    def _run(self, *argv, timeout=20):
        try:
            return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            return subprocess.CompletedProcess(argv, 1, "", str(e))

    def _node_idle(self):
        out = self._run("sinfo", "-h", "-N", "-o", "%T").stdout.strip()
        return out.startswith("idle")

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
        _stop(self.procs)
        self.procs = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
