"""Where students reach this server: the address a room's wall shows and puts in its QR code (issue 33, item 5).

Only the operator chooses it, never a page: `--public-url` / `$TBT_PUBLIC_URL` (a proxy's address, a name the
class's network knows), else the address the server listens on. With `--host 0.0.0.0` (every interface) that is
this machine's network address; on a loopback address (the default, 127.0.0.1) only this machine can open it, and
the wall says so instead of projecting a code no phone can open.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

PUBLIC_URL = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/\-]*)?$")  # scheme, host[:port], a plain path
EVERY_INTERFACE = {"0.0.0.0", "::", ""}
PROBE = ("10.255.255.255", 9)  # any routable address: a UDP socket's connect sends nothing, it only picks a route


@dataclass
class Reach:
    """The operator's public address (`public`, validated by `checked_public_url`), and where the server listens
    (`host`, `port`: set by ui/server.launch once Gradio has chosen them)."""

    public: str | None = None
    host: str | None = None
    port: int | None = None

    def listening(self, host: str | None, port: int | None) -> None:
        self.host, self.port = host, port

    def base(self) -> tuple[str | None, bool]:
        """(the page's address for students, ending in '/'; whether another machine can open it). (None, False)
        before the server listens."""
        if self.public:
            return self.public.rstrip("/") + "/", True
        if self.port is None:
            return None, False
        host = "127.0.0.1" if self.host is None else self.host
        if host in EVERY_INTERFACE:
            network = network_address()
            return (url(network, self.port), True) if network else (url("127.0.0.1", self.port), False)
        return url(host, self.port), not is_loopback(host)

    def join_link(self, code: str) -> tuple[str, bool]:
        """(the room's join link, whether another machine can open it)."""
        base, reachable = self.base()
        return f"{base or ''}?room={code}", reachable


def url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: whatever it names, the operator chose it for the class
        return False


def network_address() -> str | None:
    """This machine's address on its network (IPv4), or None when it has none but loopback: the address a UDP
    socket would send from (connecting one sends nothing), else one the machine's name resolves to."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(PROBE)
            found = probe.getsockname()[0]
        if not is_loopback(found) and found != "0.0.0.0":
            return found
    except OSError:  # no route out of this machine
        pass
    try:
        named = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    except OSError:
        return None
    return next((a for a in sorted(named) if not is_loopback(a)), None)


def checked_public_url(value: str | None) -> str | None:
    """The operator's --public-url, or None; a SystemExit saying how to write it when it is not a plain
    http(s) address."""
    if not value:
        return None
    if len(value) > 300 or not PUBLIC_URL.match(value):
        raise SystemExit(f"--public-url: {value!r} is not a plain http(s) address; write it as "
                         "http://host:port/ or https://name/path/ (what students' browsers should open)")
    return value
