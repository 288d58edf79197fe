"""A throwaway one-node SLURM cluster on localhost for tests (Debian's slurm-wlm
and munge): its own SLURM_CONF, munge socket, spool and state directories in a
temporary folder, no accounting, daemons started as root and stopped by PID.

    cluster = LocalSlurm(tmp_dir); cluster.start(); ... cluster.env ...; cluster.stop()

`ensure_installed()` installs the packages with apt-get when they are missing
and we are root (what .ci/run does up front); otherwise it says why not.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ["slurm-wlm", "munge"]
BINARIES = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel"]


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists()]


def ensure_installed(timeout: float = 900) -> str | None:
    """None when SLURM and munge are usable, else the reason they are not."""
    if not missing_binaries():
        return None
    if os.geteuid() != 0:
        return f"SLURM binaries {missing_binaries()} missing and not root (apt-get install {' '.join(PACKAGES)})"
    if shutil.which("apt-get") is None:
        return f"SLURM binaries {missing_binaries()} missing and no apt-get"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)
        if proc.returncode != 0:
            return f"{' '.join(cmd)} failed: {proc.stderr[-500:]}"
    still = missing_binaries()
    return f"SLURM binaries {still} still missing after apt-get install" if still else None


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mb() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    return 4096


class LocalSlurm:
    def __init__(self, root: Path, cpus: int | None = None):
        self.root = Path(root)
        self.host = socket.gethostname().split(".")[0]
        self.cpus = cpus or os.cpu_count() or 2
        self.memory_mb = max(1024, _memory_mb() - 1024)
        self.pids: dict[str, int] = {}
        self.conf = self.root / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.socket"

    @property
    def env(self) -> dict:
        """Environment for SLURM clients (sbatch, squeue, Snakemake's plugin) talking to this cluster.

        Inside a job, Snakemake's jobstep plugin strips SLURM_* variables before
        its nested `srun`, so `srun` would look for /etc/slurm/slurm.conf; a
        wrapper first on PATH points it back at this cluster's config instead.
        """
        return {"SLURM_CONF": str(self.conf),
                "PATH": f"{self.root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}

    def write_srun_wrapper(self) -> None:
        real = shutil.which("srun") or "/usr/bin/srun"
        wrapper = self.root / "bin" / "srun"
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(f'#!/bin/sh\nSLURM_CONF="{self.conf}" exec "{real}" "$@"\n')
        wrapper.chmod(0o755)

    def write_config(self) -> None:
        for d in ("munge", "spool", "state", "log", "run"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o755)
        r = self.root
        self.conf.write_text(f"""
ClusterName=isotest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}
SlurmdPidFile={r / 'run' / 'slurmd.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""".lstrip())

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **self.env}, start_new_session=True)
        self.pids[name] = proc.pid
        self._procs = getattr(self, "_procs", {})
        self._procs[name] = proc

    def start(self, timeout: float = 60) -> None:
        from support import require_engine  # the suite's: only a test marked engine starts SLURM

        require_engine("starts a one-node SLURM cluster")
        self.write_config()
        self.write_srun_wrapper()
        key = self.root / "munge" / "munge.key"
        shutil.copyfile("/etc/munge/munge.key", key) if Path("/etc/munge/munge.key").is_file() else \
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        m = self.root / "munge"
        self._spawn("munged", [_sbin("munged"), "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--pid-file={m / 'munged.pid'}",
                               f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"])
        self._wait(lambda: self.munge_socket.exists(), timeout, "munged socket")
        self._spawn("slurmctld", [_sbin("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._spawn("slurmd", [_sbin("slurmd"), "-D", "-f", str(self.conf), "-N", self.host])
        self._wait(self._node_idle, timeout, "an idle SLURM node")

    def _node_idle(self) -> bool:
        for name, proc in getattr(self, "_procs", {}).items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.root / 'log'}")
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                              env={**os.environ, **self.env})
        return proc.returncode == 0 and proc.stdout.strip().startswith("idle")

    @staticmethod
    def _wait(check, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.5)
        raise RuntimeError(f"timed out waiting for {what}")

    def queue(self) -> str:
        proc = subprocess.run(["squeue", "-o", "%i %j %T %r"], capture_output=True, text=True,
                              env={**os.environ, **self.env})
        return proc.stdout + proc.stderr

    def logs(self, tail: int = 3000) -> str:
        out = []
        for p in sorted((self.root / "log").glob("*")):
            out.append(f"--- {p.name}\n{p.read_text(errors='replace')[-tail:]}")
        return "\n".join(out)

    def stop(self) -> None:
        """Cancel leftover jobs, then stop the daemons we started (by PID, in reverse order)."""
        if "slurmctld" in self.pids:
            subprocess.run(["scancel", "--user", "root"], env={**os.environ, **self.env},
                           capture_output=True, timeout=30)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = getattr(self, "_procs", {}).get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
