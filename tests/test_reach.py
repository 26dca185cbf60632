"""The address a room's wall shows students (ui/reach.py): the operator's, else where the server listens; loopback
said plainly. The machine's network address is checked against its interfaces as psutil lists them."""
import ipaddress

import psutil
import pytest

from ui.reach import Reach, checked_public_url, network_address

pytestmark = pytest.mark.unit


def interface_addresses() -> set[str]:
    """Every IPv4 address of this machine's interfaces, loopback left out (psutil: the reference)."""
    return {a.address for nics in psutil.net_if_addrs().values() for a in nics
            if a.family.name == "AF_INET" and not ipaddress.ip_address(a.address).is_loopback}


def test_on_every_interface_the_link_is_the_machines_network_address():
    found = network_address()
    assert (found in interface_addresses()) if interface_addresses() else found is None
    link, reachable = Reach(host="0.0.0.0", port=7860).join_link("ABCD2345")
    if found:
        assert reachable and link == f"http://{found}:7860/?room=ABCD2345"
    else:  # a machine with no network: only itself can join, and the wall says so
        assert not reachable and link == "http://127.0.0.1:7860/?room=ABCD2345"


@pytest.mark.parametrize("host", [None, "127.0.0.1", "localhost", "::1", "127.0.1.1"])
def test_a_loopback_server_says_only_this_machine_can_join(host):
    link, reachable = Reach(host=host, port=7861).join_link("ABCD2345")
    assert not reachable and link.endswith(":7861/?room=ABCD2345")


def test_a_named_address_and_the_operators_public_url_are_taken_as_given():
    assert Reach(host="192.168.1.20", port=80).join_link("C") == ("http://192.168.1.20:80/?room=C", True)
    assert Reach(host="fd00::2", port=80).join_link("C") == ("http://[fd00::2]:80/?room=C", True)
    public = Reach(public=checked_public_url("https://tbt.school.example/class"), host="127.0.0.1", port=7860)
    assert public.join_link("C") == ("https://tbt.school.example/class/?room=C", True)  # a proxy in front


@pytest.mark.parametrize("bad", ["javascript:alert(1)//", "http://x\"><script>", "ftp://host/", "tbt.example", "http://" + "a" * 300])
def test_a_public_url_that_is_not_a_plain_address_is_refused_at_start(bad):
    with pytest.raises(SystemExit, match="--public-url"):
        checked_public_url(bad)
