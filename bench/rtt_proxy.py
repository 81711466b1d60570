"""A loopback TCP proxy that puts a network's round-trip time between the functions and the
emulators (``python -m bench --rtt-ms N``, issue 29 item 8).

On the local emulators a Firestore or Pub/Sub call costs well under a millisecond of wire time;
on real Firestore it costs 5-30 ms. A code path that makes eight calls one after another looks
as fast locally as one that makes two, so the benchmark is blind to the round trips production
pays for. This proxy restores them.

What it models: a link with a fixed latency of ``rtt/2`` in each direction and no bandwidth
limit. Every chunk of bytes read from one side is written to the other ``rtt/2`` after it
arrived, in order; chunks are pipelined, never queued behind one another's delay. gRPC runs
over HTTP/2, so many calls share one connection: each call's request reaches the emulator
``rtt/2`` late and its response comes back ``rtt/2`` late, so a unary call (a commit, a lookup)
costs one ``rtt`` more, a streamed read one ``rtt`` more to its first response, and calls made
side by side pay it once together. What it does not model: TLS, a connection's handshake (made
once per client and process, and not delayed), bandwidth, loss, jitter, or the server's own
time in a real region.

It runs as a child process (``python -m bench.rtt_proxy TARGET...``), so its event loop never
waits for the GIL of the functions it delays. It listens on 127.0.0.1 only, forwards to
127.0.0.1 only, serves a bounded number of connections, and exits when its parent closes its
stdin. A line ``rtt MS`` on stdin changes the delay of every link from then on (the benchmark
alternates delays on one pair of warm emulators).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterable

LOOPBACK = "127.0.0.1"
MAX_CONNECTIONS = 256
"""Per link: the functions open one gRPC connection per client and process; this bounds a bug."""
CHUNK = 64 * 1024
MAX_QUEUED_CHUNKS = 1024
"""Per direction of a connection: reading stops (TCP backpressure) beyond this many in flight."""
_READY = "listening"


class _Delay:
    """The one-way delay in seconds, shared by every link; changed through stdin."""

    def __init__(self, rtt_ms: float) -> None:
        self.one_way_s = rtt_ms / 2000


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: _Delay) -> None:
    """Forward ``reader`` to ``writer``, each chunk one-way-delay after it was read."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(MAX_QUEUED_CHUNKS)

    async def read() -> None:
        while True:
            data = await reader.read(CHUNK)
            await queue.put((loop.time() + delay.one_way_s, data))
            if not data:
                return

    async def write() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                with contextlib.suppress(OSError, RuntimeError):
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    reading = asyncio.create_task(read())
    try:
        await write()
    finally:
        reading.cancel()


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError, ConnectionError):
        await writer.wait_closed()


class _Link:
    """One listening port on the loopback, forwarding to one emulator's port."""

    def __init__(self, target_port: int, delay: _Delay) -> None:
        self.target_port = target_port
        self.delay = delay
        self.connections = 0

    async def serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self.connections >= MAX_CONNECTIONS:
            await _close(client_w)
            return
        self.connections += 1
        try:
            server_r, server_w = await asyncio.open_connection(LOOPBACK, self.target_port)
        except OSError:
            self.connections -= 1
            await _close(client_w)
            return
        pumps = [
            asyncio.create_task(_pump(client_r, server_w, self.delay)),
            asyncio.create_task(_pump(server_r, client_w, self.delay)),
        ]
        try:
            # Both directions end on their own after a half-close; a reset ends the other too.
            await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for pump in pumps:
                pump.cancel()
            self.connections -= 1
            await _close(server_w)
            await _close(client_w)


async def _control(delay: _Delay) -> None:
    """Read ``rtt MS`` lines from stdin; end (and so the process) when stdin closes."""
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        word, _, value = line.strip().partition(" ")
        if word == "rtt":
            delay.one_way_s = float(value) / 2000
            print(f"rtt {value}", flush=True)


async def _main(targets: list[int], rtt_ms: float) -> None:
    delay = _Delay(rtt_ms)
    servers = []  # held: a server no longer referenced may be collected
    for port in targets:
        server = await asyncio.start_server(_Link(port, delay).serve, LOOPBACK, 0)
        servers.append(server)
        print(f"{_READY} {server.sockets[0].getsockname()[1]} -> {port}", flush=True)
    await _control(delay)
    sys.stdout.flush()
    os._exit(0)  # the parent is done: drop every connection at once, as a dead link would


def _port(target: str) -> int:
    """``127.0.0.1:PORT`` (or ``localhost:PORT``): only the loopback is proxied."""
    host, _, port = target.rpartition(":")
    if host not in (LOOPBACK, "localhost"):
        raise argparse.ArgumentTypeError(f"{target}: only {LOOPBACK} targets are proxied")
    return int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rtt_proxy", description=__doc__)
    parser.add_argument("targets", nargs="+", type=_port, help="127.0.0.1:PORT to delay")
    parser.add_argument("--rtt-ms", type=float, default=0.0, help="round-trip time added")
    args = parser.parse_args(argv)
    asyncio.run(_main(args.targets, args.rtt_ms))
    return 0


# --- the benchmark's side ---------------------------------------------------------------------


class RttProxy:
    """The proxy process in front of ``targets`` (``host:port``); ``hosts[target]`` is where to
    connect instead. Use as a context manager; ``set_rtt`` changes the delay between runs."""

    def __init__(self, targets: Iterable[str], rtt_ms: float = 0.0) -> None:
        self.targets = list(targets)
        self.rtt_ms = rtt_ms
        self.hosts: dict[str, str] = {}
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> RttProxy:
        command = [sys.executable, "-m", "bench.rtt_proxy", f"--rtt-ms={self.rtt_ms}"]
        self._process = subprocess.Popen(
            command + self.targets, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        for target in self.targets:
            line = self._process.stdout.readline().split()
            if not line or line[0] != _READY:
                self.__exit__()
                raise RuntimeError(f"the RTT proxy did not start (for {target})")
            self.hosts[target] = f"{LOOPBACK}:{line[1]}"
        return self

    def set_rtt(self, rtt_ms: float) -> None:
        """Every link's delay from now on (connections already open included)."""
        assert self._process is not None and self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(f"rtt {rtt_ms}\n")
        self._process.stdin.flush()
        self._process.stdout.readline()  # the acknowledgement: the new delay is in force
        self.rtt_ms = rtt_ms

    def __exit__(self, *exc: object) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        deadline = time.monotonic() + 5
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if process.poll() is None:
            process.kill()
            process.wait(5)


def add_rtt_argument(parser: argparse.ArgumentParser) -> None:
    """``--rtt-ms N``: the functions' Firestore and Pub/Sub calls through ``bench.rtt_proxy``."""
    parser.add_argument(
        "--rtt-ms",
        type=float,
        default=None,
        metavar="N",
        help="add N ms to every Firestore and Pub/Sub round trip of the functions (a loopback "
        "proxy; 0: the proxy without delay; default: no proxy)",
    )


if __name__ == "__main__":
    sys.exit(main())
