"""Edges Kazoo users hit: system znodes, path validation, packet limits,
unknown auth schemes, pipelined async requests in order, and 4-letter
words through client.command()."""

import threading

from kazoo.exceptions import (
    AuthFailedError,
    BadArgumentsError,
    ConnectionLoss,
    NoAuthError,
    NoNodeError,
)
from kazoo.protocol.states import KazooState
from kazoo.security import ACL, Id, Permissions, make_digest_acl

from kzsuite import CONFIG, KazooTestCase, StateRecorder, wait_for


def mntr(client):
    """mntr through Kazoo, as a dict of key to text value."""
    out = {}
    for line in client.command(b"mntr").splitlines():
        k, _, v = line.partition("\t")
        out[k] = v
    return out


class EdgeTest(KazooTestCase):

    def test_system_paths_are_protected(self):
        c = self.client()
        for path in ("/", "/zookeeper", "/zookeeper/quota"):
            with self.subTest(path=path):
                with self.assertRaises(BadArgumentsError):
                    c.delete(path)
        with self.assertRaises(NoAuthError):
            c.set("/zookeeper/config", b"x")
        acls, st = c.get_acls("/zookeeper/config")
        self.assertEqual(list(acls), [ACL(Permissions.READ, Id("world", "anyone"))])
        self.assertEqual(st.aversion, -1)
        # A child named zookeeper elsewhere is ordinary.
        c.ensure_path(self.root)
        self.assertEqual(c.create(self.p("zookeeper")), self.p("zookeeper"))

    def test_invalid_paths(self):
        c = self.client()
        c.ensure_path(self.root)
        for name in ("\u0001", "\ufff0", "a\u0000b"):
            with self.subTest(name=repr(name)):
                with self.assertRaises(BadArgumentsError):
                    c.create(self.root + "/" + name)
        self.assertEqual(c.get_children(self.root), [])
        # Kazoo itself refuses relative components before sending.
        with self.assertRaises(ValueError):
            c.create(self.p(".", "x"))

    def test_missing_node_acl_and_sync(self):
        c = self.client()
        with self.assertRaises(NoNodeError):
            c.get_acls(self.p("nope"))
        with self.assertRaises(NoNodeError):
            c.set_acls(self.p("nope"), [make_digest_acl("a", "b", all=True)])
        # sync does not check that the path exists.
        self.assertEqual(c.sync(self.p("nope")), self.p("nope"))

    def test_packet_size_limit(self):
        c = self.client()
        rec = StateRecorder()
        c.add_listener(rec)
        c.ensure_path(self.root)
        sid = c.client_id[0]
        data = bytes(range(256)) * 3900  # 998,400 bytes: under jute.maxbuffer
        c.create(self.p("big"), data)
        self.assertEqual(c.get(self.p("big"))[0], data)
        # A frame over jute.maxbuffer (1 MiB - 1) closes the connection;
        # the session survives and nothing was created.
        with self.assertRaises(ConnectionLoss):
            c.create(self.p("huge"), b"x" * 1100000)
        rec.wait_for(KazooState.CONNECTED)
        self.assertEqual(c.client_id[0], sid)
        self.assertIsNone(c.exists(self.p("huge")))
        self.assertNotIn(KazooState.LOST, rec.states)

    def test_unknown_auth_scheme_fails_session(self):
        c = self.client()
        rec = StateRecorder()
        c.add_listener(rec)
        with self.assertRaises(AuthFailedError):
            c.add_auth("nonesuch", "x")
        rec.wait_for(KazooState.LOST)
        with self.assertRaises(Exception):
            c.get("/")

    def test_pipelined_async_requests_complete_in_order(self):
        c = self.client()
        c.ensure_path(self.root)
        # 200 creates in flight at once: sequence numbers follow the order
        # of submission (FIFO client order).
        results = [c.create_async(self.p("s-"), b"", sequence=True) for _ in range(200)]
        names = [r.get(timeout=30) for r in results]
        self.assertEqual(names, sorted(names))
        self.assertEqual([int(n[-10:]) for n in names], list(range(200)))
        # Writes and reads interleaved: every read sees the write before it.
        c.create(self.p("v"), b"0")
        ops = []
        for i in range(1, 101):
            ops.append(("set", i, c.set_async(self.p("v"), str(i).encode())))
            ops.append(("get", i, c.get_async(self.p("v"))))
        for kind, i, r in ops:
            v = r.get(timeout=30)
            if kind == "get":
                self.assertEqual(v[0], str(i).encode())
                self.assertEqual(v[1].version, i)
            else:
                self.assertEqual(v.version, i)

    def test_concurrent_sessions_sequence_unique(self):
        clients = [self.client() for _ in range(4)]
        clients[0].ensure_path(self.root)
        names = []
        mu = threading.Lock()

        def work(c):
            rs = [c.create_async(self.p("q-"), ephemeral=True, sequence=True) for _ in range(50)]
            got = [r.get(timeout=30) for r in rs]
            self.assertEqual(got, sorted(got))
            with mu:
                names.extend(got)

        ts = [threading.Thread(target=work, args=(c,)) for c in clients]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        self.assertEqual(len(set(names)), 200)
        self.assertEqual(sorted(int(n[-10:]) for n in names), list(range(200)))
        clients[0].sync(self.root)  # the others may be on other members
        self.assertEqual(len(clients[0].get_children(self.root)), 200)


class FourLetterTest(KazooTestCase):
    """mntr counters through client.command(), on a server of its own."""

    def test_mntr_counts(self):
        c = self.client()
        self.assertEqual(c.command(b"isro"), "rw")
        mode = "standalone" if CONFIG.members == 1 else None
        srvr = c.command(b"srvr")
        m0 = mntr(c)
        if mode:
            self.assertIn("Mode: " + mode, srvr)
            self.assertEqual(m0["zk_server_state"], mode)
        else:
            self.assertIn(m0["zk_server_state"], ("leader", "follower"))
        c.ensure_path(self.root)  # +1 znode
        for i in range(3):
            c.create(self.p("n%d" % i))
        c.create(self.p("e1"), ephemeral=True)
        c.create(self.p("e2"), ephemeral=True)
        c.sync(self.root)
        m1 = mntr(c)
        self.assertEqual(int(m1["zk_znode_count"]) - int(m0["zk_znode_count"]), 6)
        self.assertEqual(int(m1["zk_ephemerals_count"]) - int(m0["zk_ephemerals_count"]), 2)
        w0 = int(m1["zk_watch_count"])
        c.get(self.p("n0"), watch=lambda e: None)
        c.get_children(self.p("n1"), watch=lambda e: None)
        wait_for(lambda: int(mntr(c)["zk_watch_count"]) == w0 + 2, msg="watch count +2")
        c.set(self.p("n0"), b"fire")
        wait_for(lambda: int(mntr(c)["zk_watch_count"]) == w0 + 1, msg="watch count -1 after firing")
        c.delete(self.p("e1"))
        self.assertEqual(int(mntr(c)["zk_ephemerals_count"]), int(m0["zk_ephemerals_count"]) + 1)
        # A closed session's watches and ephemerals are gone from the counts.
        d = self.client(hosts=self.cluster.member_for(c).address)  # the member mntr asks
        for i in range(3):
            d.exists(self.p("n%d" % i), watch=lambda e: None)
        d.create(self.p("e3"), ephemeral=True)
        wait_for(lambda: int(mntr(c)["zk_watch_count"]) == w0 + 4, msg="watch count +3")
        d.stop()
        wait_for(lambda: int(mntr(c)["zk_watch_count"]) == w0 + 1, msg="watch count back")
        self.assertEqual(int(mntr(c)["zk_ephemerals_count"]), int(m0["zk_ephemerals_count"]) + 1)


class ConsTest(KazooTestCase):
    """cons through client.command(): the per-connection line."""

    def _line(self, c, sid):
        lines = [l for l in c.command(b"cons").splitlines() if "sid=0x%x," % sid in l]
        self.assertEqual(len(lines), 1, c.command(b"cons"))
        return lines[0]

    def test_cons_after_requests(self):
        c = self.client()
        sid = c.client_id[0]
        _, st = c.create(self.root, include_data=True)  # xid 1
        c.get(self.root)  # xid 2
        line = self._line(c, sid)
        for want in ("lop=GETD", "lcxid=0x2", "lzxid=0x%x" % st.czxid, "to=10000"):
            self.assertIn(want, line)

    def test_negotiated_timeout_clamped(self):
        # tickTime 500: minSessionTimeout 1000 ms, maxSessionTimeout 10000 ms.
        for asked, want in ((0.5, 1000), (4.0, 4000), (100.0, 10000)):
            with self.subTest(asked=asked):
                c = self.client(timeout=asked)
                c.ensure_path(self.root)
                self.assertIn("to=%d," % want, self._line(c, c.client_id[0]))

    def test_cons_after_handshake_only(self):
        # ZooKeeper 3.8 counts the handshake as the connection's last
        # operation: lop=SESS, lcxid=0x0, lzxid the createSession zxid.
        c = self.client()
        line = self._line(c, c.client_id[0])
        self.assertIn("lop=SESS", line)
        self.assertIn("lcxid=0x0,", line)
        self.assertNotIn("lzxid=0xffffffffffffffff", line)


class ReconfigTest(KazooTestCase):
    """client.reconfig on a standalone server with reconfigEnabled=true:
    ZooKeeper answers Unimplemented. (With reconfig disabled it answers
    ReconfigDisabled, -123, a code Kazoo 2.8 cannot decode: its connection
    thread dies, so that case is left to the raw-wire suites.)"""

    server_opts = {"extra_cfg": {"reconfigEnabled": "true"}}
    members = 1

    def test_reconfig_unimplemented_standalone(self):
        from kazoo.exceptions import UnimplementedError
        c = self.client()
        with self.assertRaises(UnimplementedError):
            c.reconfig(joining=None, leaving="2", new_members=None)
        # The session carries on.
        c.ensure_path(self.root)
        self.assertIsNotNone(c.exists(self.root))
