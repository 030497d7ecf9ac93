"""Differential: one Kazoo script against a fresh zkd and a fresh
ZooKeeper 3.8, every result compared exactly after normalisation.

Both servers start empty, so their zxid counters run alike: a zxid is
compared by its low 32 bits (zkd's epoch is its raft term, ZooKeeper's
standalone epoch is 0). ctime/mtime are checked for plausibility and then
compared as "ctime == mtime" and their order; ephemeralOwner becomes the
script's session name. Exceptions compare by Kazoo class, watch events by
(type, state, path) in arrival order per watcher and per session.

In the ZooKeeper mode of the runner both sides are ZooKeeper (a check that
the script itself is deterministic).
"""

import os
import shutil
import time
import unittest

from kazoo.client import KazooClient
from kazoo.protocol.states import WatchedEvent, ZnodeStat
from kazoo.security import ACL, Id, Permissions, make_digest_acl

import harness
import kzsuite
from kzsuite import EventLog


def script(A, B, ev):
    """The scenario: yields (label, value). A and B are two sessions;
    ev(name) returns a watcher that records into the named log."""

    def attempt(fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except Exception as e:  # noqa: BLE001 -- the class is the result
            return e

    yield "root", A.get("/")
    yield "zookeeper", A.get("/zookeeper")
    yield "create /d/a", A.create("/d/a", b"x", makepath=True, include_data=True)
    yield "stat /d", A.exists("/d")
    for i in range(3):
        yield "seq %d" % i, A.create("/d/s-", b"%d" % i, sequence=True, include_data=True)
    yield "eph B", B.create("/d/e", b"eph", ephemeral=True, include_data=True)
    kids, st = A.get_children("/d", include_data=True)
    yield "children /d", (sorted(kids), st)  # ZooKeeper's order is unspecified
    yield "set a v0", A.set("/d/a", b"yy", version=0)
    yield "set a bad version", attempt(A.set, "/d/a", b"z", version=0)
    yield "after failed set", A.exists("/d/a")
    yield "delete /d not empty", attempt(A.delete, "/d")
    yield "create exists", attempt(A.create, "/d/a")
    yield "create no parent", attempt(A.create, "/nope/x")
    yield "set missing", attempt(A.set, "/nope", b"")
    yield "eph child", attempt(B.create, "/d/e/kid")
    yield "next create (zxid gap)", A.create("/d/b", include_data=True)

    t = A.transaction()
    t.create("/d/t1", b"1")
    t.set_data("/d/a", b"txn")
    t.check("/d/b", 0)
    t.delete("/d/s-0000000001")
    yield "txn ok", t.commit()
    yield "stat /d after txn", A.exists("/d")
    t = A.transaction()
    t.create("/d/t2")
    t.check("/d/b", 5)
    t.delete("/d/t1")
    yield "txn fail", t.commit()
    yield "after failed txn", A.create("/d/c", include_data=True)

    A.get("/d/a", watch=ev("A data /d/a"))
    A.exists("/d/new", watch=ev("A exists /d/new"))
    A.get_children("/d", watch=ev("A children /d"))
    b_watch = ev("B data /d/b")
    B.get("/d/b", watch=b_watch)
    yield "B set /d/a", B.set("/d/a", b"from B")
    yield "B create /d/new", B.create("/d/new", include_data=True)
    yield "A delete /d/b", A.delete("/d/b")
    A.get_children("/d", watch=ev("A children /d (2)"))
    # B's event travels on B's connection, unordered with A's reply: wait
    # for it before B closes (else Kazoo may drop it, on either server).
    b_watch.log.wait_len(1)
    yield "B close", B.stop()
    yield "stat /d after B closed", A.exists("/d")
    yield "children after B closed", sorted(A.get_children("/d"))

    acl = [make_digest_acl("u", "p", all=True), ACL(Permissions.READ, Id("world", "anyone"))]
    yield "create acl", A.create("/acl", b"s", acl=acl, include_data=True)
    yield "get_acls", A.get_acls("/acl")
    yield "set no auth", attempt(A.set, "/acl", b"x")
    yield "set_acls no auth", attempt(A.set_acls, "/acl", [ACL(31, Id("world", "anyone"))])
    A.add_auth("digest", "u:p")
    yield "set_acls v0", A.set_acls("/acl", [ACL(31, Id("world", "anyone"))], version=0)
    yield "set_acls bad version", attempt(A.set_acls, "/acl", acl, version=0)
    yield "get_acls after", A.get_acls("/acl")
    yield "auth scheme", A.create("/acl2", acl=[ACL(31, Id("auth", ""))], include_data=True)
    yield "auth scheme acl", A.get_acls("/acl2")
    for name in ("w1", "w2", "w3"):
        A.create("/d/" + name)
        A.get("/d/" + name, watch=ev("A data /d/" + name))
    A.get_children("/d", watch=ev("A children /d (3)"))
    A.exists("/d/w4", watch=ev("A exists /d/w4"))
    t = A.transaction()
    t.set_data("/d/w3", b"3")
    t.create("/d/w4")
    t.delete("/d/w1")
    t.set_data("/d/w2", b"2")
    yield "txn firing watches", t.commit()
    yield "sync", A.sync("/d")
    t = A.transaction()
    t.create("/m", b"m")
    t.create("/m/q-", b"1", sequence=True)
    t.create("/m/q-", b"2", sequence=True, ephemeral=True)
    t.set_data("/m", b"mm")
    yield "txn seq", t.commit()
    yield "stat /m", A.exists("/m")
    kids, st = A.get_children("/m", include_data=True)
    yield "children /m", (sorted(kids), st)
    yield "get q-1", A.get("/m/q-0000000001")
    yield "delete bad version", attempt(A.delete, "/m/q-0000000000", version=3)
    yield "delete v0", A.delete("/m/q-0000000000", version=0)
    yield "stat /m after delete", A.exists("/m")
    yield "seq after delete", A.create("/m/q-", sequence=True, include_data=True)
    yield "invalid path", attempt(A.create, "/m/\u0001")
    yield "create under /zookeeper", A.create("/zookeeper/mine", include_data=True)
    yield "zookeeper after", A.get("/zookeeper")
    yield "quota", A.get("/zookeeper/quota")
    yield "config acl", A.get_acls("/zookeeper/config")
    A.delete("/m", recursive=True)
    A.delete("/d", recursive=True)
    yield "after recursive delete", A.exists("/d")
    yield "root end", A.get("/")
    yield "children / end", sorted(A.get_children("/"))


class Normaliser:
    """Turns results into comparable values (see the module doc)."""

    def __init__(self, sessions, t0, t1):
        self.sessions = sessions  # session id -> name
        self.t0, self.t1 = t0, t1
        self.problems = []

    @staticmethod
    def times(v):
        """ctime against mtime by ZooKeeper's rules: equal until the data
        changes, never earlier after. A change within the same millisecond
        as the create keeps them equal, so only c<=m can be asked then."""
        if v.ctime == 0:
            return "zero"
        if v.mzxid == v.czxid:
            return "c=m" if v.ctime == v.mtime else "c!=m before any change"
        return "c<=m" if v.ctime <= v.mtime else "c>m"

    def __call__(self, v):
        if isinstance(v, ZnodeStat):
            for t in (v.ctime, v.mtime):
                if t != 0 and not (self.t0 - 60000 <= t <= self.t1 + 60000):
                    self.problems.append("implausible time %d in %r" % (t, v))
            return {
                "czxid": v.czxid & 0xFFFFFFFF, "mzxid": v.mzxid & 0xFFFFFFFF,
                "pzxid": v.pzxid & 0xFFFFFFFF,
                "time": self.times(v),
                "version": v.version, "cversion": v.cversion, "aversion": v.aversion,
                "ephemeralOwner": self.sessions.get(v.ephemeralOwner, v.ephemeralOwner),
                "dataLength": v.dataLength, "numChildren": v.numChildren,
            }
        if isinstance(v, WatchedEvent):
            return (v.type, v.state, v.path)
        if isinstance(v, BaseException):
            return "raised " + type(v).__name__
        if isinstance(v, (list, tuple)):
            return [self(x) for x in v]
        return v


def run_script(hosts):
    """Run the script against hosts; return (normalised results, events)."""
    logs = {}
    order = []  # (watcher, event) in arrival order, per session (A or B)

    def ev(name):
        logs.setdefault(name, EventLog())
        log = logs[name]

        def watcher(event):
            if event.type != "NONE":
                order.append((name, event))
            log(event)
        watcher.log = log
        return watcher

    a = KazooClient(hosts=hosts, timeout=10)
    b = KazooClient(hosts=hosts, timeout=10)
    a.start(timeout=30)
    b.start(timeout=30)
    try:
        sessions = {a.client_id[0]: "A", b.client_id[0]: "B"}
        t0 = int(time.time() * 1000)
        raw = list(script(a, b, ev))
        t1 = int(time.time() * 1000)
        time.sleep(0.3)  # let the last events arrive
        norm = Normaliser(sessions, t0, t1)
        results = [(label, norm(v)) for label, v in raw]
        events = {k: [norm(e) for e in log.snapshot()] for k, log in sorted(logs.items())}
        for who in ("A", "B"):
            # One session's events arrive in the server's order.
            events["(order of %s)" % who] = [(name, norm(e)) for name, e in order
                                             if name.startswith(who + " ")]
        return results, events, norm.problems
    finally:
        for c in (a, b):
            try:
                c.stop()
                c.close()
            except Exception:  # noqa: BLE001
                pass


class DifferentialTest(unittest.TestCase):

    def test_script_matches_zookeeper(self):
        base = os.path.join(kzsuite.CONFIG.base_dir, "differential")
        ours = harness.Cluster.start(kzsuite.CONFIG.kind, os.path.join(base, "server"),
                                     zkd_bin=kzsuite.CONFIG.zkd_bin)
        self.addCleanup(ours.stop)
        if not os.path.exists(harness.ZOOKEEPER_JARS[0]) or not shutil.which("java"):
            self.fail("ZooKeeper 3.8 (and java) not installed; install it with: "
                      "apt-get install -y zookeeper")
        ref = harness.Cluster.start("zookeeper", os.path.join(base, "zookeeper"))
        self.addCleanup(ref.stop)
        got, got_ev, problems = run_script(ours.hosts)
        want, want_ev, _ = run_script(ref.hosts)
        self.assertEqual(problems, [])
        diffs = []
        for (label, g), (_, w) in zip(got, want):
            if g != w:
                diffs.append("%s:\n    %s: %r\n    zookeeper: %r" % (label, kzsuite.CONFIG.kind, g, w))
        self.assertEqual(len(got), len(want))
        for name in sorted(set(got_ev) | set(want_ev)):
            g, w = got_ev.get(name, []), want_ev.get(name, [])
            if g != w:
                diffs.append("events %s:\n    %s: %r\n    zookeeper: %r" % (name, kzsuite.CONFIG.kind, g, w))
        if diffs:
            self.fail("%d differences:\n%s" % (len(diffs), "\n".join(diffs)))
