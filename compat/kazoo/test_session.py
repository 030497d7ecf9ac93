"""Sessions through Kazoo: reconnect after the server restarts (session,
ephemerals and watches kept; SUSPENDED then CONNECTED, never LOST),
missed changes seen after a cut connection, and session expiry.

Expiry is made deterministic in two ways, both with the victim client in
a process of its own (clientproc.py) so it can be frozen with SIGSTOP:

- closed from another connection: while the victim is frozen, a second
  Kazoo client attaches to the victim's session with its id and password
  and closes it. The server ends the session at once (ephemerals deleted,
  watchers told); when the victim thaws, its reconnect is refused as
  expired, and Kazoo reports LOST. No timing is involved.
- by timeout: the victim stays frozen past its negotiated session timeout;
  the server's own expiry must end the session, which is observed through
  a watch on the victim's ephemeral, then the victim thaws and sees LOST.
"""

import os
import time

from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.security import make_digest_acl

import harness
from kzsuite import EventLog, KazooTestCase, StateRecorder, wait_for


def kinds(events):
    return [(e.type, e.path) for e in events]


class ReconnectTest(KazooTestCase):
    """Each test restarts or cuts off its own server.

    Kazoo 2.8 sends no setWatches: on a disconnect it hands every one-shot
    watcher a state event (type NONE, state CONNECTING) and forgets it.
    Its DataWatch and ChildrenWatch recipes re-read and re-arm when the
    session is CONNECTED again, comparing mzxid (DataWatch) to decide
    whether to call back: that is what "watches re-armed" means for Kazoo,
    and it relies on the server keeping the session, the data and the
    zxids across the restart.
    """

    @classmethod
    def setUpClass(cls):
        cls.cluster = None

    def test_restart_keeps_session_ephemerals_and_watches(self):
        cl = self.own_cluster()
        for how in ("sigterm", "sigkill"):
            with self.subTest(restart=how):
                self._restart_cycle(cl, how)

    def _restart_cycle(self, cl, how):
        root = self.p(how)
        a = self.client(cl)
        rec = StateRecorder()
        a.add_listener(rec)
        sid = a.client_id[0]
        a.ensure_path(root + "/c")
        a.create(root + "/w", b"0")
        a.create(root + "/same", b"s")
        a.create(root + "/e", b"eph", ephemeral=True)
        raw = EventLog()
        a.get(root + "/w", watch=raw)
        data, same, kids, missing = EventLog(), EventLog(), EventLog(), EventLog()
        DataWatch(a, root + "/w", lambda d, st: data(d))
        DataWatch(a, root + "/same", lambda d, st: same(d))
        ChildrenWatch(a, root + "/c", lambda ks: kids(sorted(ks)))
        DataWatch(a, root + "/x", lambda d, st: missing(d))
        for log, first in ((data, b"0"), (same, b"s"), (kids, []), (missing, None)):
            self.assertEqual(log.wait_len(1), [first])

        cl.member_for(a).restart(kill=(how == "sigkill"))

        rec.wait_for(KazooState.SUSPENDED)
        rec.wait_for(KazooState.CONNECTED)
        self.assertEqual(rec.states, [KazooState.SUSPENDED, KazooState.CONNECTED])
        self.assertEqual(a.client_id[0], sid)
        # Kazoo delivers watcher callbacks on its own thread: wait for it.
        wait_for(lambda: raw.state_events, msg="the state event to the raw watcher")
        self.assertEqual([(e.type, e.state) for e in raw.state_events], [("NONE", "CONNECTING")])
        b = self.client(cl)
        b.sync(root)  # a may be connected to another member
        st = b.exists(root + "/e")
        self.assertIsNotNone(st, "ephemeral lost across the restart")
        self.assertEqual(st.ephemeralOwner, sid)
        self.assertEqual(b.get(root + "/w")[0], b"0")
        b.set(root + "/w", b"1")
        b.create(root + "/c/k")
        b.create(root + "/x", b"new")
        self.assertEqual(data.wait_len(2)[1], b"1")
        wait_for(lambda: kids.snapshot()[-1] == ["k"], msg="children after restart")
        self.assertEqual(missing.wait_len(2)[1], b"new")
        # The re-read after reconnect found the same mzxid: no callback.
        self.assertEqual(same.snapshot(), [b"s"])
        # The session still works for writes, and its ephemeral is its own.
        a.set(root + "/e", b"still mine")
        self.assertEqual(a.get(root + "/e")[0], b"still mine")
        self.assertEqual(raw.snapshot(), [])

    def test_missed_changes_seen_after_cut_connection(self):
        cl = self.own_cluster()
        server = cl.members[0]
        proxy = harness.Proxy(server.host, server.port)
        self.addCleanup(proxy.close)
        b = self.client(cl)
        a = self.client(cl, hosts=proxy.address)
        rec = StateRecorder()
        a.add_listener(rec)
        sid = a.client_id[0]
        b.ensure_path(self.p("c"))
        for name in ("w", "same", "gone"):
            b.create(self.p(name), b"0")
        a.sync(self.p())  # b may be connected to another member
        logs = {k: EventLog() for k in ("w", "same", "gone", "x", "c")}
        for name in ("w", "same", "gone", "x"):
            DataWatch(a, self.p(name), lambda d, st, log=logs[name]: log(d))
        ChildrenWatch(a, self.p("c"), lambda ks: logs["c"](sorted(ks)))
        for name, first in (("w", b"0"), ("same", b"0"), ("gone", b"0"), ("x", None), ("c", [])):
            self.assertEqual(logs[name].wait_len(1), [first])

        proxy.refuse(True)
        proxy.sever()
        rec.wait_for(KazooState.SUSPENDED)
        # Changes the cut-off client misses.
        b.set(self.p("w"), b"1")
        b.create(self.p("c", "k"))
        b.create(self.p("x"), b"x")
        b.delete(self.p("gone"))
        proxy.refuse(False)
        rec.wait_for(KazooState.CONNECTED)
        self.assertEqual(a.client_id[0], sid)

        self.assertEqual(logs["w"].wait_len(2)[1], b"1")
        self.assertEqual(logs["x"].wait_len(2)[1], b"x")
        self.assertEqual(logs["gone"].wait_len(2)[1], None)
        wait_for(lambda: logs["c"].snapshot()[-1] == ["k"], msg="children after reconnect")
        time.sleep(0.2)
        self.assertEqual(logs["same"].snapshot(), [b"0"])
        # The recipes' watches are armed again.
        b.set(self.p("same"), b"1")
        b.set(self.p("w"), b"2")
        self.assertEqual(logs["same"].wait_len(2)[1], b"1")
        self.assertEqual(logs["w"].wait_len(3)[2], b"2")
        self.assertNotIn(KazooState.LOST, rec.states)


    def test_refuses_client_that_saw_newer_zxid(self):
        # A client that has seen zxid Z must not be served by a server that
        # is behind Z (it would go back in time): ZooKeeper closes such a
        # connection and the client keeps trying. (Standalone even in an
        # ensemble run: the fresh server stands in for the whole service.)
        cl = self.own_cluster(members=1)
        old = cl.members[0]
        # zkd's zxid epoch is its raft term, and every start is an
        # election: restart a few times so that the fresh server below,
        # started once, is surely behind in epoch as well as in count.
        for _ in range(3):
            old.restart(kill=True)
        a = self.client(cl)
        rec = StateRecorder()
        a.add_listener(rec)
        sid = a.client_id[0]
        a.ensure_path(self.root)
        for i in range(30):
            a.create(self.p("n%d" % i))
        old.stop()
        rec.wait_for(KazooState.SUSPENDED)
        fresh = harness.Server(old.kind, old.dir + "-fresh", port=old.port,
                               tick_time=old.tick_time, zkd_bin=old.zkd_bin)
        os.makedirs(fresh.dir)
        fresh.start()
        try:
            b = self.client(harness.Cluster([fresh]))
            self.assertIsNone(b.exists(self.p("n0")))
            probe = b.create("/probe", include_data=True)[1].czxid
            self.assertLess(probe, a.last_zxid, "precondition: the fresh server is behind the client")
            time.sleep(2)
            self.assertEqual(rec.states, [KazooState.SUSPENDED], "served by a server behind the client")
        finally:
            fresh.stop()
        old.start()
        rec.wait_for(KazooState.CONNECTED, timeout=30)
        self.assertEqual(a.client_id[0], sid)
        self.assertIsNotNone(a.exists(self.p("n29")))


    def test_auth_restored_after_restart(self):
        # Kazoo re-sends its add_auth credentials on every reconnect; the
        # server must apply them before the requests that follow.
        cl = self.own_cluster()
        a = self.client(cl)
        a.add_auth("digest", "carol:pw")
        a.create(self.p("priv"), b"p", acl=[make_digest_acl("carol", "pw", all=True)], makepath=True)
        rec = StateRecorder()
        a.add_listener(rec)
        cl.member_for(a).restart(kill=True)
        rec.wait_for(KazooState.CONNECTED)
        self.assertEqual(a.get(self.p("priv"))[0], b"p")
        a.set(self.p("priv"), b"q")
        anon = self.client(cl)
        anon.sync(self.p("priv"))  # a may be connected to another member
        with self.assertRaises(NoAuthError):
            anon.get(self.p("priv"))


class ExpiryTest(KazooTestCase):
    """Session expiry; the shared server has tickTime 500 (session
    timeouts 1 s to 10 s)."""

    def test_expiry_closed_by_second_connection(self):
        watcher = self.client()
        watcher.ensure_path(self.root)
        victim = self.client_process(self.cluster.hosts, 10, "ephemeral:" + self.p("eph"))
        sid = victim.ready["session"]
        passwd = bytes.fromhex(victim.ready["passwd"])
        watcher.sync(self.p())  # the victim may have written through another member
        st = watcher.exists(self.p("eph"), watch=(ev := EventLog()))
        self.assertEqual(st.ephemeralOwner, sid)

        victim.pause()
        twin = self.client(client_id=(sid, passwd))
        self.assertEqual(twin.client_id[0], sid)
        twin.stop()  # closeSession for the victim's session
        self.assertEqual(kinds(ev.wait_len(1)), [("DELETED", self.p("eph"))])
        self.assertIsNone(watcher.exists(self.p("eph")))

        victim.resume()
        victim.wait_report(lambda r: r.get("state") == "LOST", what="LOST")
        new = victim.wait_report(lambda r: "new_session" in r, what="a new session")
        self.assertNotEqual(new["new_session"], sid)

    def test_expiry_by_timeout(self):
        watcher = self.client()
        watcher.ensure_path(self.root)
        timeout = 2.0
        victim = self.client_process(self.cluster.hosts, timeout, "ephemeral:" + self.p("eph"))
        ev = EventLog()
        watcher.sync(self.p())  # the victim may have written through another member
        self.assertIsNotNone(watcher.exists(self.p("eph"), watch=ev))
        victim.pause()
        t0 = time.monotonic()
        self.assertEqual(kinds(ev.wait_len(1, timeout=20)), [("DELETED", self.p("eph"))])
        elapsed = time.monotonic() - t0
        # The last ping may precede the pause by a third of the timeout;
        # expiry may round up to the next tick.
        self.assertGreater(elapsed, timeout * 0.5, "expired too early")
        self.assertLess(elapsed, timeout * 3 + 1, "expired too late")
        victim.resume()
        victim.wait_report(lambda r: r.get("state") == "LOST", what="LOST")

    def test_live_session_does_not_expire(self):
        c = self.client(timeout=3.0)
        rec = StateRecorder()
        c.add_listener(rec)
        c.ensure_path(self.root)
        c.create(self.p("e"), ephemeral=True)
        time.sleep(7)  # over two timeouts: kept alive by pings alone
        self.assertEqual(rec.states, [])
        other = self.client()
        other.sync(self.p("e"))  # c may be connected to another member
        self.assertIsNotNone(other.exists(self.p("e")))

    def test_wrong_password_is_expired(self):
        a = self.client()
        a.ensure_path(self.root)
        a.create(self.p("e"), ephemeral=True)
        sid, passwd = a.client_id
        bad = bytes(b ^ 0xFF for b in passwd)
        b = self.client(client_id=(sid, bad))
        # The attach is refused as expired (timeout 0, session 0); Kazoo
        # then makes a new session.
        self.assertNotEqual(b.client_id[0], sid)
        b.create(self.p("b"), ephemeral=True)
        a.sync(self.p())  # b may be connected to another member
        self.assertEqual(a.exists(self.p("b")).ephemeralOwner, b.client_id[0])
        # The real owner is untouched.
        self.assertEqual(a.exists(self.p("e")).ephemeralOwner, sid)
        self.assertEqual(a.client_id[0], sid)

    def test_closed_session_ephemerals_and_watchers(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        for i in range(5):
            a.create(self.p("e%d" % i), ephemeral=True)
        ev = EventLog()
        # a may be connected to another member: without the sync b could
        # find no node and arm creation watches instead.
        b.sync(self.root)
        for i in range(5):
            b.exists(self.p("e%d" % i), watch=ev)
        a.stop()
        got = ev.wait_len(5)
        self.assertEqual(sorted(kinds(got)), sorted(("DELETED", self.p("e%d" % i)) for i in range(5)))
        with self.assertRaises(NoNodeError):
            b.get(self.p("e0"))
        wait_for(lambda: b.get_children(self.root) == [], msg="ephemerals gone")
