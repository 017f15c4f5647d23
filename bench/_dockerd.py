"""A throwaway Docker daemon for benchmarks and tests: own data root, exec root and socket.

Started as root with ``--iptables=false --ip6tables=false --bridge=none --storage-driver=vfs`` (containers
use host networking), stopped by its PID, its folders removed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from typing import IO, Any

import docker


class ThrowawayDockerd:
    """A Docker daemon in a temporary folder."""

    def __init__(self) -> None:
        binary = shutil.which("dockerd")
        if binary is None:
            raise RuntimeError("dockerd is not installed (as root: apt-get install -y docker.io)")
        if os.geteuid() != 0:
            raise RuntimeError("dockerd needs root")
        self.binary = binary
        self.root = tempfile.mkdtemp(prefix="gymloop-dockerd-")
        self.socket = f"unix://{self.root}/docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the daemon and wait until it answers.

        Raises:
            RuntimeError: It exited or did not answer in time.
        """
        self._log = open(f"{self.root}/dockerd.log", "wb")  # noqa: SIM115 - open for the daemon's lifetime
        self.proc = subprocess.Popen(
            [self.binary, "--iptables=false", "--ip6tables=false", "--bridge=none", "--storage-driver=vfs",
             "--data-root", f"{self.root}/data", "--exec-root", f"{self.root}/exec", "-H", self.socket,
             "--pidfile", f"{self.root}/docker.pid"], stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                with open(f"{self.root}/dockerd.log", errors="replace") as log:
                    raise RuntimeError(f"dockerd exited: {log.read()[-400:]}")
            try:
                docker.DockerClient(base_url=self.socket).ping()
                return
            except Exception:  # not up yet
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"dockerd did not answer within {timeout_s:g} s")

    def stop(self) -> None:
        """Stop the daemon and remove its folders."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self._log is not None:
            self._log.close()
        with open("/proc/mounts") as mounts:
            inside = [line.split()[1] for line in mounts if line.split()[1].startswith(self.root + "/")]
        for point in sorted(inside, key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ThrowawayDockerd:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
