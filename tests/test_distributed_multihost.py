"""Multi-host on one machine: the test makes two network namespaces joined by a veth pair
(10.x addresses), starts `ember run --hosts A,B` with one rank in each (hydra's ssh
launcher, its `-launcher-exec` replaced by a script that enters the namespace of the
host), and checks an all-reduce across them and the bytes that crossed the link.
Skips where namespaces cannot be made (not root, no `ip`); always removes them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from distributed_util import needs_mpi, rank_env

pytestmark = needs_mpi
SCRIPT = os.path.join(os.path.dirname(__file__), "dist_scripts", "multihost.py")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def two_hosts(tmp_path):
    """Two namespaces joined by a veth pair: yields [(namespace, address), ...]."""
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("network namespaces need root and the `ip` tool")
    tag = f"{os.getpid() % 100000}"
    net = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
    hosts = [(f"ember_a{tag}", f"{net}.1", f"eva{tag}"), (f"ember_b{tag}", f"{net}.2",
                                                          f"evb{tag}")]
    made = []
    try:
        for ns, _, _ in hosts:
            _ip("netns", "add", ns)
            made.append(ns)
        _ip("link", "add", hosts[0][2], "type", "veth", "peer", "name", hosts[1][2])
        for ns, addr, dev in hosts:
            _ip("link", "set", dev, "netns", ns)
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip(f"cannot make network namespaces here: {err}")
    try:
        yield hosts
    finally:
        for ns in made:  # deleting a namespace removes its end of the veth pair too
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def _launcher(tmp_path, hosts) -> str:
    """What hydra's ssh launcher runs instead of ssh: `enter -x HOST COMMAND...` runs
    COMMAND inside HOST's namespace."""
    cases = "\n".join(f"  {addr}) ns={ns} ;;" for ns, addr, _ in hosts)
    path = tmp_path / "enter-host"
    path.write_text(f"""#!/bin/sh
[ "$1" = "-x" ] && shift
host=$1; shift
case "$host" in
{cases}
  *) echo "enter-host: unknown host $host" >&2; exit 1 ;;
esac
# at shutdown, hydra's remote proxy may still write to the pipe mpiexec has closed (ssh
# would carry that write; this pipe cannot) and die of SIGPIPE after every rank is done:
# seen under load as exit status 141. Ignored, the write fails with EPIPE instead.
trap '' PIPE
exec ip netns exec "$ns" sh -c "$*"
""")
    path.chmod(0o755)
    return str(path)


def _rx_bytes(ns: str, dev: str) -> int:
    out = subprocess.run(["ip", "-n", ns, "-s", "link", "show", dev], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split("RX:")[1].splitlines()[1].split()[0])


def test_all_reduce_across_two_network_namespaces(two_hosts, tmp_path):
    (ns_a, addr_a, dev_a), (ns_b, addr_b, dev_b) = two_hosts
    before = _rx_bytes(ns_b, dev_b)
    launcher = _launcher(tmp_path, two_hosts)
    cmd = ["ip", "netns", "exec", ns_a, sys.executable, "-m", "ember.distributed.run",
           "-n", "2", "--hosts", f"{addr_a},{addr_b}",
           "--mpiexec-arg=-launcher", "--mpiexec-arg=ssh",
           "--mpiexec-arg=-launcher-exec", f"--mpiexec-arg={launcher}",
           "--mpiexec-arg=-localhost", f"--mpiexec-arg={addr_a}", SCRIPT]
    # the namespaces share one kernel and /dev/shm, so MPICH's defaults would move the
    # data through shared memory or cross-memory attach, around the link; real hosts
    # share neither: make MPICH's UCX netmod use TCP only, as between machines
    env = rank_env({"MPIR_CVAR_CH4_NETMOD": "ucx", "UCX_TLS": "tcp"})
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=90)
    out = proc.stdout + proc.stderr
    found = dict(re.findall(r"rank (\d) netns (\S+) master", out))
    # 141 (SIGPIPE) after both ranks reported: hydra's proxy writing to the pipe the
    # emulated ssh (`enter-host`) has closed at teardown, despite the trap (seen under
    # load); between real hosts ssh carries that write. Any other status is a failure.
    done = len(re.findall(r"rank \d netns \S+ master \S+ all .* ok", out)) == 2
    assert proc.returncode == 0 or (proc.returncode == 141 and done), out
    assert sorted(found) == ["0", "1"] and found["0"] != found["1"], out  # two namespaces
    assert f"master {addr_a}" in out
    assert _rx_bytes(ns_b, dev_b) - before > 1 << 20, "the all-reduce did not cross the link"
