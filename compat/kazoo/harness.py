"""Process harness for the Kazoo compatibility suite (stdlib only).

It starts real servers -- zkd, or Debian's ZooKeeper 3.8 for comparison --
on free loopback ports, each in its own directory with its own zoo.cfg,
waits until they answer ``ruok`` with ``imok`` (and ``srvr`` shows them
serving), and stops them by PID
(SIGTERM, then SIGKILL) at the end, also when a test fails or the runner is
interrupted. A server can be restarted on the same directory and port,
killed with SIGKILL as a crash would, and paused with SIGSTOP.

Cluster is what a test talks to: today one standalone member; its
``members`` list, ``hosts`` string and ``member_for`` lookup are written for
an ensemble, and ``Cluster.start(members=3)`` already writes the
``server.N`` lines and ``myid`` files of one. ZooKeeper runs such an
ensemble (QuorumPeerMain); zkd refuses more than one ``server.N`` line
until its ensembles land (issue 3), and then the same suite can run with
``run --members 3``.
"""

import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time

ZOOKEEPER_JARS = [
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/slf4j-simple.jar",
    "/usr/share/java/servlet-api.jar",
    "/usr/share/java/netty-codec.jar",  # NettyServerCnxnFactory (TLS) needs it
]

# Every process this harness started and has not yet seen exit; stop_all()
# ends them (the runner calls it in a finally block and on SIGTERM/SIGINT).
_live = set()
_live_lock = threading.Lock()


class HarnessError(Exception):
    """A server could not be configured, started or stopped."""


def _ephemeral_low():
    """The first port of the kernel's range for outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_handed_out = set()
_port_lock = threading.Lock()


def free_port():
    """Return a TCP port on 127.0.0.1 that nothing used just now.

    The port lies below the kernel's ephemeral range when there is room:
    a server killed and restarted on its port would otherwise find it
    taken, now and then, by an outgoing connection of some process on the
    machine (even a client's own connect to the dead port, connected to
    itself). Each port is handed out once per run."""
    lo, hi = 10000, _ephemeral_low()
    if hi - lo >= 1000:
        for _ in range(200):
            port = random.randrange(lo, hi)
            with _port_lock:
                if port in _handed_out:
                    continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            with _port_lock:
                _handed_out.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def four_letter(host, port, word, timeout=2.0):
    """Send a 4-letter word and return the whole answer as text."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode("ascii"))
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks).decode("utf-8", "replace")


def _die_with_parent():
    # preexec_fn: the server gets SIGKILL if the runner's main thread dies
    # without cleaning up (e.g. the runner is itself killed with SIGKILL).
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Server:
    """One server process (zkd or ZooKeeper) with its directory and port.

    kind is "zkd" or "zookeeper". The directory holds zoo.cfg, data/ and
    the server's log (<kind>.log, appended to across restarts). For an
    ensemble member, ``peers`` lists (myid, quorum_port, election_port,
    client_port) of every member and ``myid`` is this one's.
    """

    def __init__(self, kind, directory, port=None, tick_time=500,
                 extra_cfg=None, env=None, zkd_bin=None, jvm_flags=None,
                 myid=None, peers=None, start_timeout=60.0):
        if kind not in ("zkd", "zookeeper"):
            raise HarnessError("harness: unknown server kind %r" % kind)
        self.kind = kind
        self.host = "127.0.0.1"
        self.dir = directory
        self.data_dir = os.path.join(directory, "data")
        self.cfg_path = os.path.join(directory, "zoo.cfg")
        self.log_path = os.path.join(directory, kind + ".log")
        self.port = port or free_port()
        self.fixed_port = port is not None
        self.tick_time = tick_time
        self.extra_cfg = dict(extra_cfg or {})
        self.env = dict(env or {})
        self.zkd_bin = zkd_bin
        self.jvm_flags = list(jvm_flags or [])
        self.myid = myid
        self.peers = peers
        self.start_timeout = start_timeout
        self.proc = None

    @property
    def address(self):
        """host:port, as a Kazoo hosts entry."""
        return "%s:%d" % (self.host, self.port)

    @property
    def pid(self):
        """The current process id, or None before the first start."""
        return self.proc.pid if self.proc else None

    def write_config(self):
        """Write zoo.cfg (and myid for an ensemble member)."""
        os.makedirs(self.data_dir, exist_ok=True)
        lines = [
            ("tickTime", str(self.tick_time)),
            ("dataDir", self.data_dir),
            ("clientPort", str(self.port)),
            ("clientPortAddress", self.host),
            ("4lw.commands.whitelist", "*"),
            ("admin.enableServer", "false"),
        ]
        if self.peers:
            lines += [("initLimit", "10"), ("syncLimit", "5")]
            for myid, qport, eport, cport in self.peers:
                lines.append(("server.%d" % myid, "127.0.0.1:%d:%d;127.0.0.1:%d"
                              % (qport, eport, cport)))
            with open(os.path.join(self.data_dir, "myid"), "w") as f:
                f.write("%d\n" % self.myid)
        lines += sorted(self.extra_cfg.items())
        with open(self.cfg_path, "w") as f:
            for k, v in lines:
                f.write("%s=%s\n" % (k, v))

    def argv(self):
        """The command line that runs this server."""
        if self.kind == "zkd":
            if not self.zkd_bin:
                raise HarnessError("harness: no zkd binary (set ZKD_BIN)")
            return [self.zkd_bin, self.cfg_path]
        java = shutil.which("java") or "/usr/bin/java"
        main = "org.apache.zookeeper.server.ZooKeeperServerMain"
        if self.peers:
            main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
        return ([java, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                 "-Dorg.slf4j.simpleLogger.showDateTime=true",
                 "-Dzookeeper.jmx.log4j.disable=true"]
                + self.jvm_flags
                + ["-cp", ":".join(ZOOKEEPER_JARS), main, self.cfg_path])

    def running(self):
        """Whether the process is alive (a paused one counts as alive)."""
        return self.proc is not None and self.proc.poll() is None

    def start(self, wait=True):
        """Launch the process; with wait, block until it answers ruok.

        Must run on the main thread: the child is tied to the starting
        thread's life (PR_SET_PDEATHSIG).
        """
        if threading.current_thread() is not threading.main_thread():
            raise HarnessError("harness: start servers from the main thread")
        if self.running():
            raise HarnessError("harness: %s on %s already runs" % (self.kind, self.address))
        if not os.path.exists(self.cfg_path):
            self.write_config()
        env = dict(os.environ)
        env.update(self.env)
        with open(self.log_path, "ab") as log:
            log.write(("=== harness: starting %s at %s: %s\n" % (
                self.kind, time.strftime("%H:%M:%S"), " ".join(self.argv()))).encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv(), cwd=self.dir, env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        with _live_lock:
            _live.add(self)
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=None):
        """Poll ruok until imok (and srvr until the server serves); raise
        HarnessError if the process exits or the timeout (default
        start_timeout) passes."""
        deadline = time.monotonic() + (timeout or self.start_timeout)
        last = None
        while time.monotonic() < deadline:
            if not self.running():
                raise HarnessError("harness: %s on %s exited (%s) before it was ready:\n%s"
                                   % (self.kind, self.address, self.proc.returncode,
                                      self.log_tail()))
            try:
                answer = four_letter(self.host, self.port, "ruok", timeout=1.0)
                if answer == "imok":
                    # ZooKeeper says imok before it serves clients; srvr
                    # tells the two apart.
                    answer = four_letter(self.host, self.port, "srvr", timeout=1.0)
                    if "not currently serving" not in answer:
                        return
                    last = "srvr answered %r" % answer.strip()
                else:
                    last = "ruok answered %r" % answer
            except OSError as e:
                last = e
            time.sleep(0.05)
        raise HarnessError("harness: %s on %s not ready after %.0fs: %s\n%s"
                           % (self.kind, self.address, timeout or self.start_timeout,
                              last, self.log_tail()))

    def _signal(self, sig):
        if self.running():
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, grace=10.0):
        """SIGTERM (and SIGCONT, should it be paused), then SIGKILL after
        grace seconds; wait for the exit. Stopping a stopped server is a
        no-op."""
        if self.proc is None:
            return
        if self.running():
            self._signal(signal.SIGTERM)
            self._signal(signal.SIGCONT)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait()
        with _live_lock:
            _live.discard(self)

    def kill(self):
        """SIGKILL, as a crash would end it; wait for the exit."""
        if self.proc is None:
            return
        self._signal(signal.SIGKILL)
        self.proc.wait()
        with _live_lock:
            _live.discard(self)

    def pause(self):
        """SIGSTOP: the process stays alive but answers nothing."""
        self._signal(signal.SIGSTOP)

    def resume(self):
        """SIGCONT after pause."""
        self._signal(signal.SIGCONT)

    def restart(self, kill=False):
        """Stop (SIGTERM, or SIGKILL with kill=True) and start again on the
        same directory, configuration and port; wait until ready."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.start()

    def four_letter(self, word):
        """Send a 4-letter word to this server."""
        return four_letter(self.host, self.port, word)

    def start_log(self):
        """The log tail since this server's last start."""
        tail = self.log_tail()
        at = tail.rfind("=== harness: starting")
        return tail[at:] if at >= 0 else tail

    def log_tail(self, n=4000):
        """The last n bytes of the server's log, as text."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - n))
                return f.read().decode("utf-8", "replace")
        except OSError as e:
            return "(no log: %s)" % e


class Cluster:
    """The servers one test (or one test class) talks to.

    ``hosts`` is the Kazoo connection string of every member. Tests that
    fail over call ``member_for(client)`` to find the member a client is
    connected to, then kill and restart it.
    """

    def __init__(self, members):
        self.members = members

    @classmethod
    def start(cls, kind, base_dir, members=1, **server_opts):
        """Start a standalone server (members=1) or an ensemble of members
        with server.N lines, and wait until every member answers ruok.

        A port free_port found may be taken by another process before the
        server binds it (other suites run on the same machine): then the
        start is retried on fresh ports, an ensemble's members on empty
        data directories (their raft state names the old ports)."""
        os.makedirs(base_dir, exist_ok=True)
        if members == 1:
            servers = [Server(kind, base_dir, **server_opts)]
        else:
            servers = cls._ensemble(kind, base_dir, members, server_opts)
        cluster = cls(servers)
        try:
            for attempt in range(4):
                try:
                    for s in servers:
                        s.start(wait=False)
                    for s in servers:
                        s.wait_ready()
                    break
                except HarnessError:
                    in_use = any("ddress already in use" in s.start_log() for s in servers)
                    cluster.stop()
                    if not in_use or (members == 1 and servers[0].fixed_port) or attempt == 3:
                        raise
                    if members == 1:
                        servers[0].port = free_port()
                        servers[0].write_config()
                    else:
                        for s in servers:
                            shutil.rmtree(s.data_dir, ignore_errors=True)
                        servers = cls._ensemble(kind, base_dir, members, server_opts)
                        cluster.members = servers
                        for s in servers:
                            s.write_config()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @staticmethod
    def _ensemble(kind, base_dir, members, server_opts):
        """Servers for an ensemble of members on fresh ports, each in
        base_dir/memberN."""
        peers = [(i + 1, free_port(), free_port(), free_port()) for i in range(members)]
        servers = []
        for myid, _, _, cport in peers:
            d = os.path.join(base_dir, "member%d" % myid)
            os.makedirs(d, exist_ok=True)
            servers.append(Server(kind, d, port=cport, myid=myid, peers=peers, **server_opts))
        return servers

    @property
    def hosts(self):
        """Comma-separated host:port of every member."""
        return ",".join(s.address for s in self.members)

    def member_for(self, client):
        """The member whose client port the Kazoo client is connected to."""
        conn = client._connection
        sock = getattr(conn, "_socket", None)
        if sock is None:
            raise HarnessError("harness: client is not connected")
        port = sock.getpeername()[1]
        for s in self.members:
            if s.port == port:
                return s
        raise HarnessError("harness: client connected to unknown port %d" % port)

    def kill_all(self):
        """SIGKILL every member, as a power cut would."""
        for s in self.members:
            s.kill()

    def start_all(self):
        """Start every stopped member on its own directory and port, then
        wait until all serve (an ensemble needs its quorum up first)."""
        for s in self.members:
            if not s.running():
                s.start(wait=False)
        for s in self.members:
            s.wait_ready()

    def stop(self):
        """Stop every member (SIGTERM, then SIGKILL)."""
        for s in self.members:
            s.stop()

    def log_tails(self, n=3000):
        """The log tail of every member, labelled."""
        return "\n".join("--- %s %s (%s):\n%s" % (s.kind, s.address, s.log_path, s.log_tail(n))
                         for s in self.members)


def stop_all():
    """Stop every server this process started that still runs."""
    with _live_lock:
        live = list(_live)
    for s in live:
        try:
            s.stop(grace=5.0)
        except Exception:  # noqa: BLE001 -- cleanup must go on
            s.kill()


class Proxy:
    """A TCP proxy on a free loopback port in front of one server, to cut
    a client off without touching the server: sever() closes every
    connection through it, refuse(True) makes it drop new ones at once."""

    def __init__(self, target_host, target_port):
        self.target = (target_host, target_port)
        self._ln = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._ln.bind(("127.0.0.1", 0))
        self._ln.listen(64)
        self.port = self._ln.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs = []
        self._refusing = False
        self._closed = False
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    @property
    def address(self):
        """host:port of the proxy, as a Kazoo hosts entry."""
        return "127.0.0.1:%d" % self.port

    def _accept(self):
        while True:
            try:
                c, _ = self._ln.accept()
            except OSError:
                return
            with self._lock:
                refusing = self._refusing or self._closed
            if refusing:
                c.close()
                continue
            try:
                u = socket.create_connection(self.target, timeout=5)
            except OSError:
                c.close()
                continue
            u.settimeout(None)
            with self._lock:
                self._pairs.append((c, u))
            threading.Thread(target=self._pump, args=(c, u), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def sever(self):
        """Close every connection passing through the proxy."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def refuse(self, on):
        """While on, accept and close new connections at once."""
        with self._lock:
            self._refusing = on

    def close(self):
        """Stop listening and cut every connection."""
        with self._lock:
            self._closed = True
        self._ln.close()
        self.sever()


class ClientProcess:
    """A Kazoo client in a process of its own (clientproc.py), so that a
    test can freeze it with SIGSTOP or kill it with SIGKILL as a crashed
    or stalled application would be. Its JSON-line reports are collected
    in ``reports``."""

    def __init__(self, python, script, args):
        import json
        self._json = json
        self.reports = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen([python, "-u", script] + list(args),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        with _live_lock:
            _live.add(self)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                rep = self._json.loads(line)
            except ValueError:
                continue
            with self._cond:
                self.reports.append(rep)
                self._cond.notify_all()

    def wait_report(self, pred, timeout=20.0, what="report"):
        """Block until a report satisfying pred arrives; return it."""
        with self._cond:
            ok = self._cond.wait_for(lambda: any(pred(r) for r in self.reports), timeout)
            if not ok:
                raise AssertionError("client process: no %s in %.0fs; got %r"
                                     % (what, timeout, self.reports))
            return next(r for r in self.reports if pred(r))

    def send(self, command):
        """Send a command line to the process."""
        self.proc.stdin.write((command + "\n").encode())
        self.proc.stdin.flush()

    def pause(self):
        """SIGSTOP the client process."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        """SIGCONT the client process."""
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self):
        """SIGKILL the client process and reap it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        with _live_lock:
            _live.discard(self)

    def stop(self, grace=5.0):
        """Ask the process to exit (stdin closed), SIGKILL after grace."""
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
                self.proc.stdin.close()
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
