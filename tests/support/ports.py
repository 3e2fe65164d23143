"""Free TCP ports on 127.0.0.1 for the servers the tests start (indexes, Ray, Slurm)."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """``count`` different ports free on 127.0.0.1 (each held until all are chosen)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def free_port() -> int:
    """One port free on 127.0.0.1."""
    return free_ports(1)[0]
