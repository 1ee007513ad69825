"""Whether an address may be called when private addresses are not allowed.

`ipaddress`'s `is_global` takes an IPv6 address on its own prefix, so the forms that carry an
IPv4 address inside them pass it whatever they carry: NAT64 (`64:ff9b::7f00:1` is 127.0.0.1
through a NAT64 gateway), the local-use NAT64 prefix `64:ff9b:1::/48`, 6to4
(`2002:7f00:1::`), the deprecated IPv4-compatible `::a.b.c.d`, and Teredo. Such an address is
public only when the IPv4 address inside it is.
"""

from __future__ import annotations

import ipaddress

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def embedded_ipv4(address: IpAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, NAT64, 6to4, compatible, Teredo)."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    inside = [address.ipv4_mapped, address.sixtofour]
    if any(address in net for net in _NAT64) or address in _IPV4_COMPATIBLE:
        inside.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.teredo:
        inside.extend(address.teredo)
    return [v4 for v4 in inside if v4 is not None]


def is_public(address: IpAddress) -> bool:
    """Global, and so is every IPv4 address it carries."""
    return address.is_global and all(v4.is_global for v4 in embedded_ipv4(address))


def parse(text: str) -> IpAddress:
    """An address as `getaddrinfo` gives it (an IPv6 scope `%eth0` dropped)."""
    return ipaddress.ip_address(text.split("%", 1)[0])
