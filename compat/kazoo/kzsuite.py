"""Shared fixtures of the Kazoo compatibility suite.

CONFIG is filled in by runner.py (server kind, ensemble size, zkd binary,
the run's temporary directory). KazooTestCase gives each test class one
shared cluster, each test a unique znode prefix (self.root) and Kazoo
clients that are stopped and closed after the test. Tests that restart or
kill servers take a cluster of their own with own_cluster().
"""

import itertools
import logging
import os
import sys
import threading
import time
import unittest

import harness

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState


class _Config:
    """What runner.py decided for this run."""

    kind = "zkd"  # or "zookeeper"
    members = 1
    zkd_bin = None
    base_dir = None


CONFIG = _Config()

# Reconnect fast: a restarted server is back within a second, and the
# default backoff would spend most of the suite's time sleeping.
FAST_RETRY = dict(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5, max_jitter=0.2)

_dir_seq = itertools.count(1)
_root_seq = itertools.count(1)

HERE = os.path.dirname(os.path.abspath(__file__))


def start_cluster(name, members=None, **server_opts):
    """Start a cluster of CONFIG.kind with CONFIG.members members (or
    members, when given) in a fresh directory under the run's base
    directory."""
    d = os.path.join(CONFIG.base_dir, "%s-%d" % (name, next(_dir_seq)))
    server_opts.setdefault("zkd_bin", CONFIG.zkd_bin)
    return harness.Cluster.start(CONFIG.kind, d, members=members or CONFIG.members, **server_opts)


def wait_for(cond, timeout=10.0, interval=0.02, msg="condition"):
    """Poll cond() until it is truthy and return its value; fail after
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, msg))
        time.sleep(interval)


class StateRecorder:
    """A Kazoo state listener that records every transition in order."""

    def __init__(self):
        self.states = []
        self._cond = threading.Condition()

    def __call__(self, state):
        with self._cond:
            self.states.append(state)
            self._cond.notify_all()
        return False

    def wait_for(self, state, count=1, timeout=20.0):
        """Block until state has been seen count times."""
        with self._cond:
            ok = self._cond.wait_for(lambda: self.states.count(state) >= count, timeout)
        if not ok:
            raise AssertionError("state %s not seen %d times in %.0fs; saw %s"
                                 % (state, count, timeout, self.states))


class EventLog:
    """Collects watch events or callback values from Kazoo's threads.

    Kazoo also hands its watchers connection-state events (type NONE, e.g.
    state CONNECTING on a disconnect); those are kept apart in
    state_events, so items holds only node events.
    """

    def __init__(self):
        self.items = []
        self.state_events = []
        self._cond = threading.Condition()

    def __call__(self, *args):
        if len(args) == 1 and getattr(args[0], "type", None) == "NONE":
            with self._cond:
                self.state_events.append(args[0])
            return
        with self._cond:
            self.items.append(args[0] if len(args) == 1 else args)
            self._cond.notify_all()

    def wait_len(self, n, timeout=10.0):
        """Block until at least n items arrived; return a copy of them."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.items) >= n, timeout)
            items = list(self.items)
        if not ok:
            raise AssertionError("wanted %d events in %.0fs, got %d: %r"
                                 % (n, timeout, len(items), items))
        return items

    def snapshot(self):
        """A copy of what arrived so far."""
        with self._cond:
            return list(self.items)


class KazooTestCase(unittest.TestCase):
    """Base class: one cluster per class, clients and a prefix per test.

    Subclasses set server_opts (harness.Server keyword arguments, e.g.
    extra_cfg or tick_time) to change the shared cluster's configuration,
    and members to fix its size whatever the run's --members.
    """

    server_opts = {}
    members = None  # None: CONFIG.members
    cluster = None

    @classmethod
    def setUpClass(cls):
        cls.cluster = start_cluster(cls.__name__, members=cls.members, **dict(cls.server_opts))

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            cls.cluster.stop()

    def setUp(self):
        self._clients = []
        self._own = []
        self._procs = []
        self.root = "/kz%d" % next(_root_seq)

    def tearDown(self):
        for c in reversed(self._clients):
            try:
                c.stop()
                c.close()
            except Exception:  # noqa: BLE001 -- a dead server is fine here
                pass
        for p in self._procs:
            p.stop()
        for cl in self._own:
            cl.stop()

    def client_process(self, hosts, timeout, *actions):
        """A Kazoo client in its own process (clientproc.py) connected to
        hosts with a session timeout in seconds, after doing actions
        ("ephemeral:PATH", "lock:PATH:IDENT"); waits for its ready report
        and returns the harness.ClientProcess, killed after the test."""
        p = harness.ClientProcess(python(), os.path.join(HERE, "clientproc.py"),
                                  [hosts, str(timeout)] + list(actions))
        self._procs.append(p)
        p.ready = p.wait_report(lambda r: r.get("ready"), timeout=30, what="ready")
        return p

    def clusters(self):
        """Every cluster this test used (for log tails on failure)."""
        return ([self.cluster] if self.cluster else []) + self._own

    def own_cluster(self, members=None, **server_opts):
        """A cluster for this test alone (of members members, default
        CONFIG.members), stopped after it."""
        cl = start_cluster(self.id().rsplit(".", 1)[-1], members=members, **server_opts)
        self._own.append(cl)
        return cl

    def client(self, cluster=None, start=True, timeout=10.0, **kw):
        """A Kazoo client of cluster (default the class's), started unless
        start is False; stopped and closed after the test."""
        cl = cluster or self.cluster
        kw.setdefault("connection_retry", dict(FAST_RETRY))
        kw.setdefault("command_retry", dict(FAST_RETRY))
        hosts = kw.pop("hosts", cl.hosts)
        c = KazooClient(hosts=hosts, timeout=timeout, **kw)
        self._clients.append(c)
        if start:
            c.start(timeout=30)
        return c

    def p(self, *parts):
        """A path under this test's prefix."""
        return "/".join((self.root,) + parts)


def connected(client):
    """Whether a Kazoo client is connected."""
    return client.state == KazooState.CONNECTED


def setup_logging(path):
    """Send Kazoo's logs (WARNING and up) to path, not the terminal."""
    h = logging.FileHandler(path)
    h.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(h)
    root.setLevel(logging.WARNING)


def python():
    """The interpreter that runs the suite, for client subprocesses."""
    return sys.executable
