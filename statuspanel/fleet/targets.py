"""Where a source may point: link-local addresses and cloud-metadata services are refused.

A source's URL or ssh host is chosen by an operator, but the dashboard host often sits in a cloud
where `169.254.169.254` (and names such as `metadata.google.internal`) hand out the machine's
credentials to whoever asks. So link-local targets (169.254.0.0/16, fe80::/10) and the known
metadata addresses and names are refused unless `FLEET_ALLOW_LINK_LOCAL` says otherwise: by the
form on the literal host (`literal_problem`), and again at every poll on the addresses the name
resolves to (`resolve_allowed`), so a DNS answer cannot bring them in later. Loopback and private
addresses stay allowed: that is where fleet engines live.
"""
from __future__ import annotations

import ipaddress
import socket

import anyio

ALLOW_SETTING = "FLEET_ALLOW_LINK_LOCAL"
# Metadata services that are not link-local: AWS's IPv6 endpoint, Alibaba's, Oracle's and others' names.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")})
METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "instance-data",
                            "instance-data.ec2.internal", "metadata.azure.com", "metadata.platformequinix.com"})


class BlockedTarget(Exception):
    """The source points at a link-local or metadata address and the setting does not allow it."""


def address_problem(address: str) -> str | None:
    """Why `address` (an IP literal) may not be polled, or None."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA_ADDRESSES:
        return f"{address} is a cloud metadata address"
    if ip.is_link_local:
        what = " (the cloud metadata address)" if str(ip) == "169.254.169.254" else ""
        return f"{address} is a link-local address{what}"
    return None


def literal_problem(host: str) -> str | None:
    """Why the host as written (a name or an address) may not be polled, or None. Names are
    resolved only at poll time (the form must not wait on DNS); metadata names are refused here."""
    bare = host.strip().strip("[]").rstrip(".").lower()
    if bare in METADATA_NAMES:
        return f"{host} is a cloud metadata service"
    return address_problem(bare)


def refusal(host: str, problem: str) -> str:
    return f"blocked: {problem}; set {ALLOW_SETTING}=1 to poll such targets"


async def resolve_allowed(host: str, port: int, *, allow_link_local: bool) -> list[str]:
    """The addresses `host` resolves to, all of them checked; BlockedTarget if any is refused.

    Connecting to these vetted addresses (not the name again) leaves DNS no second answer to give."""
    bare = host.strip("[]")
    if not allow_link_local:
        problem = literal_problem(bare)
        if problem:
            raise BlockedTarget(refusal(host, problem))
    try:
        return [str(ipaddress.ip_address(bare))]  # an address: nothing to resolve (no resolver thread)
    except ValueError:
        pass
    infos = await anyio.getaddrinfo(bare, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not allow_link_local:
        for address in addresses:
            problem = address_problem(address)
            if problem:
                raise BlockedTarget(refusal(host, f"{host} resolves to {problem}"))
    return addresses
