"""A PMI-1 server (MPICH's "simple PMI" wire protocol over TCP): what lets processes
started by anything but mpiexec (`torch.multiprocessing.spawn`, a shell loop, a batch
system) form one MPI world, as PyTorch's env:// rendezvous forms a gloo group.

Rank 0 runs this file by path (it loads nothing but the standard library):

    python pmi_server.py HOST PORT SIZE TIMEOUT

It listens on HOST:PORT (the rendezvous's MASTER_ADDR / MASTER_PORT), prints one line
("ready", or "error: ..." when the port cannot be had), and serves every rank's MPI
library: each rank's `MPI_Init` finds it through `PMI_PORT`, `PMI_ID`, `PMI_RANK` and
`PMI_SIZE` (set by ember.distributed.rendezvous) and exchanges its address through the
server's key-value space; the server's barrier releases when all SIZE ranks are in.

It ends when every rank has finalized (closing the port first, so the next world can
bind it at once), when the rank that started it is gone (a crashed world), or when
not every rank arrived within TIMEOUT seconds: then the waiting ranks' barrier fails,
so their MPI_Init aborts instead of waiting for ever.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading
import time

MAX_BIND_WAIT = 10.0  # seconds to wait for a previous world's server to free the port


class Server:
    def __init__(self, listener: socket.socket, size: int, timeout: float) -> None:
        self.listener = listener
        self.size = size
        self.timeout = timeout
        self.kvs: dict[str, str] = {}
        self.lock = threading.Lock()
        self.waiting: list = []  # the replies owed to ranks in the barrier
        self.joined: set[int] = set()
        self.finalized = 0
        self.done = threading.Event()

    def serve(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()
        parent = os.getppid()
        deadline = time.monotonic() + self.timeout
        while not self.done.wait(0.2):
            if os.getppid() != parent:  # rank 0 is gone, and the world with it
                break
            if len(self.joined) < self.size and time.monotonic() > deadline:
                with self.lock:
                    print(f"ember.distributed: rendezvous timed out after {self.timeout:g} s: "
                          f"{len(self.joined)}/{self.size} ranks joined", file=sys.stderr,
                          flush=True)
                    for reply in self.waiting:
                        reply("cmd=barrier_out rc=-1")
                break

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed: every rank finalized
                return
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        stream = conn.makefile("rw", encoding="ascii", newline="\n")

        def reply(line: str) -> None:
            try:
                stream.write(line + "\n")
                stream.flush()
            except OSError:
                pass

        with conn, stream:
            for line in stream:  # a probe connects and closes at once: nothing to do
                fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
                if not self._command(fields, reply):
                    return

    def _command(self, f: dict[str, str], reply) -> bool:
        cmd = f.get("cmd")
        if cmd == "initack":
            rank = int(f.get("pmiid", -1))
            with self.lock:
                self.joined.add(rank)
            for line in ("cmd=initack", f"cmd=set size={self.size}", f"cmd=set rank={rank}",
                         "cmd=set debug=0"):
                reply(line)
        elif cmd == "init":
            reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0")
        elif cmd == "get_maxes":
            reply("cmd=maxes kvsname_max=256 keylen_max=256 vallen_max=1024 rc=0")
        elif cmd == "get_appnum":
            reply("cmd=appnum appnum=0 rc=0")
        elif cmd == "get_my_kvsname":
            reply("cmd=my_kvsname kvsname=ember_kvs rc=0")
        elif cmd == "get_universe_size":
            reply(f"cmd=universe_size size={self.size} rc=0")
        elif cmd == "put":
            with self.lock:
                self.kvs[f.get("key", "")] = f.get("value", "")
            reply("cmd=put_result rc=0")
        elif cmd == "get":
            with self.lock:
                value = self.kvs.get(f.get("key", ""))
            reply("cmd=get_result rc=-1 msg=key_not_found" if value is None
                  else f"cmd=get_result rc=0 value={value}")
        elif cmd == "barrier_in":
            with self.lock:
                self.waiting.append(reply)
                if len(self.waiting) == self.size:
                    for owed in self.waiting:
                        owed("cmd=barrier_out rc=0")
                    self.waiting.clear()
        elif cmd == "finalize":
            with self.lock:
                self.finalized += 1
                last = self.finalized == self.size
                if last:  # free the port before the last rank can exit
                    self.listener.close()
            reply("cmd=finalize_ack rc=0")
            if last:
                self.done.set()
            return False
        elif cmd == "abort":
            self.done.set()
            return False
        else:
            reply(f"cmd={cmd} rc=-1 msg=unsupported_by_ember_pmi_server")
        return True


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, waiting a little for a previous world's server
    to let the port go."""
    deadline = time.monotonic() + MAX_BIND_WAIT
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(128)
            return sock
        except OSError as err:
            sock.close()
            if err.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    host, port, size, timeout = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    try:
        listener = _listen(host, port)
    except OSError as err:
        print(f"error: cannot listen on {host}:{port}: {err.strerror}", flush=True)
        return 1
    print("ready", flush=True)
    sys.stdout.close()
    Server(listener, size, timeout).serve()
    return 0


if __name__ == "__main__":
    del sys.path[0]  # this file's folder: nothing of ember is imported
    sys.exit(main(sys.argv[1:]))
