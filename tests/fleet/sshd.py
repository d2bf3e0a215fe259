"""Debian's OpenSSH server as a plain process for the fleet tests: keys and config generated into a
temporary directory, key authentication only, TCP forwarding allowed to one loopback port (the
status port behind it). `make sshd` installs it; tests skip with the reason where it is missing.

    server = SshServer(tmp_path, listen="10.64.3.2", port=2222, forward_port=9820)
    proc = server.start(host.popen)          # inside a namespace (default: subprocess.Popen); log in server.log
    # a client authenticates as root with server.client_key, trusting server.known_hosts
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

SSHD = "/usr/sbin/sshd"
KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
PRIVSEP_DIR = Path("/run/sshd")


def unavailable_reason() -> str | None:
    if not os.path.exists(SSHD):
        return "openssh-server is not installed (`make sshd`)"
    if not os.path.exists(KEYGEN):
        return "ssh-keygen is not installed"
    return None


def _keygen(path: Path, comment: str) -> None:
    subprocess.run([KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True, timeout=30)


class SshServer:
    def __init__(self, workdir: Path, *, listen: str, port: int, forward_port: int, user: str = "root") -> None:
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.listen, self.port, self.forward_port, self.user = listen, port, forward_port, user
        self.host_key = self.dir / "ssh_host_ed25519_key"
        self.client_key = self.dir / "client_ed25519"
        self.authorized_keys = self.dir / "authorized_keys"
        self.known_hosts = self.dir / "known_hosts"
        self.config = self.dir / "sshd_config"
        self.log = self.dir / "sshd.log"
        _keygen(self.host_key, "fleet-test-host")
        _keygen(self.client_key, "fleet-test-client")
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        host_pub = Path(f"{self.host_key}.pub").read_text().split()
        endpoint = listen if port == 22 else f"[{listen}]:{port}"
        self.known_hosts.write_text(f"{endpoint} {host_pub[0]} {host_pub[1]}\n")
        self.config.write_text("\n".join([
            f"ListenAddress {listen}",
            f"Port {port}",
            f"HostKey {self.host_key}",
            f"PidFile {self.dir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",          # the keys live in a test's temporary directory
            "AllowTcpForwarding local",
            f"PermitOpen 127.0.0.1:{forward_port}",
            "X11Forwarding no",
            "PermitTTY no",
            "LogLevel VERBOSE",
            "",
        ]))
        for path in (self.host_key, self.client_key):
            path.chmod(0o600)

    def command(self) -> list[str]:
        """sshd in the foreground, logging to stderr (-e), with the generated config only."""
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        return [SSHD, "-D", "-e", "-f", str(self.config)]

    def start(self, popen: Callable[..., subprocess.Popen] = subprocess.Popen) -> subprocess.Popen:
        """sshd started with `popen` (a namespace's `Host.popen`), its stderr in `self.log`; returned
        once it answers."""
        proc = popen(self.command(), stderr=self.log.open("w"))
        self.wait_ready(proc)
        return proc

    def wait_ready(self, proc: subprocess.Popen, timeout: float = 20.0) -> None:
        """Until the server sends its SSH banner on its address (from wherever the caller runs)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"sshd exited with {proc.returncode}")
            try:
                with socket.create_connection((self.listen, self.port), timeout=1) as s:
                    if s.recv(64).startswith(b"SSH-"):
                        return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"sshd not answering on {self.listen}:{self.port} after {timeout}s")
