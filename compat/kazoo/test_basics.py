"""Client basics: CRUD with stats, sequence and ephemeral nodes, paths,
errors, 4-letter words and chroot, as Kazoo sees them."""

import time

from kazoo.exceptions import (
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    )
from kazoo.protocol.states import ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE

from kzsuite import KazooTestCase, wait_for


class BasicsTest(KazooTestCase):

    def test_create_get_set_delete_stats(self):
        c = self.client()
        c.ensure_path(self.root)
        before = time.time()
        path = c.create(self.p("a"), b"v1")
        self.assertEqual(path, self.p("a"))
        data, st = c.get(self.p("a"))
        self.assertEqual(data, b"v1")
        self.assertIsInstance(st, ZnodeStat)
        self.assertEqual((st.version, st.cversion, st.aversion), (0, 0, 0))
        self.assertEqual(st.dataLength, 2)
        self.assertEqual(st.numChildren, 0)
        self.assertEqual(st.ephemeralOwner, 0)
        self.assertEqual(st.czxid, st.mzxid)
        self.assertEqual(st.pzxid, st.czxid)
        self.assertEqual(st.ctime, st.mtime)
        # ctime is the server's wall clock in ms: same machine, so close.
        self.assertLess(abs(st.ctime / 1000.0 - before), 30)

        st2 = c.set(self.p("a"), b"value-2")
        self.assertEqual(st2.version, 1)
        self.assertEqual(st2.czxid, st.czxid)
        self.assertGreater(st2.mzxid, st.mzxid)
        self.assertGreaterEqual(st2.mtime, st.mtime)
        self.assertEqual(st2.dataLength, 7)
        self.assertEqual(c.get(self.p("a")), (b"value-2", st2))
        self.assertEqual(c.exists(self.p("a")), st2)

        c.delete(self.p("a"))
        self.assertIsNone(c.exists(self.p("a")))
        with self.assertRaises(NoNodeError):
            c.get(self.p("a"))

    def test_empty_and_binary_data(self):
        c = self.client()
        c.ensure_path(self.root)
        c.create(self.p("empty"))
        data, st = c.get(self.p("empty"))
        self.assertEqual((data, st.dataLength), (b"", 0))
        blob = bytes(range(256)) * 1000
        c.create(self.p("blob"), blob)
        data, st = c.get(self.p("blob"))
        self.assertEqual(data, blob)
        self.assertEqual(st.dataLength, len(blob))

    def test_create_include_data_uses_create2(self):
        c = self.client()
        c.ensure_path(self.root)
        path, st = c.create(self.p("c2"), b"xyz", include_data=True)
        self.assertEqual(path, self.p("c2"))
        self.assertEqual(st, c.exists(self.p("c2")))
        self.assertEqual(st.dataLength, 3)

    def test_children_and_parent_stats(self):
        c = self.client()
        c.ensure_path(self.root)
        pst0 = c.exists(self.root)
        for name in ("x", "y", "z"):
            c.create(self.p(name), name.encode())
        kids, pst = c.get_children(self.root, include_data=True)
        self.assertEqual(sorted(kids), ["x", "y", "z"])
        self.assertEqual(pst.numChildren, 3)
        self.assertEqual(pst.cversion, pst0.cversion + 3)
        self.assertEqual(pst.version, 0)
        zst = c.exists(self.p("z"))
        self.assertEqual(pst.pzxid, zst.czxid)
        c.delete(self.p("y"))
        kids, pst2 = c.get_children(self.root, include_data=True)
        self.assertEqual(sorted(kids), ["x", "z"])
        self.assertEqual(pst2.cversion, pst.cversion + 1)
        self.assertGreater(pst2.pzxid, pst.pzxid)
        # Child changes leave the parent's data version and mzxid alone.
        self.assertEqual(pst2.mzxid, pst0.mzxid)
        self.assertEqual(c.get_children(self.p("x")), [])

    def test_makepath_and_ensure_path(self):
        c = self.client()
        c.create(self.p("m", "n", "o"), b"leaf", makepath=True)
        self.assertEqual(c.get(self.p("m", "n", "o"))[0], b"leaf")
        self.assertEqual(c.get(self.p("m"))[0], b"")
        self.assertTrue(c.ensure_path(self.p("e", "f", "g")))
        self.assertIsNotNone(c.exists(self.p("e", "f", "g")))
        # ensure_path of an existing path is fine.
        self.assertTrue(c.ensure_path(self.p("e", "f")))

    def test_sequence_nodes_use_parent_cversion(self):
        c = self.client()
        c.ensure_path(self.p("seq"))
        c.create(self.p("seq", "plain"))  # cversion 1
        names = [c.create(self.p("seq", "n-"), sequence=True) for _ in range(3)]
        self.assertEqual(names, [self.p("seq", "n-%010d" % i) for i in (1, 2, 3)])
        self.assertEqual(c.exists(self.p("seq")).cversion, 4)
        c.delete(self.p("seq", "plain"))
        self.assertEqual(c.exists(self.p("seq")).cversion, 5)
        # ZooKeeper 3.8 names the next sequential child from the count of
        # child creates (4), not from the cversion the delete bumped (5).
        nxt = c.create(self.p("seq", "other-"), b"d", sequence=True)
        self.assertEqual(nxt, self.p("seq", "other-%010d" % 4))
        # Sequence names may also be bare numbers under a trailing slash.
        bare = c.create(self.p("seq") + "/", sequence=True)
        self.assertEqual(bare, self.p("seq", "%010d" % 5))

    def test_ephemeral_owner_and_cleanup(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        a.create(self.p("eph"), b"e", ephemeral=True)
        seq = a.create(self.p("eseq-"), ephemeral=True, sequence=True)
        b.sync(self.root)  # a may be connected to another member
        st = b.exists(self.p("eph"))
        self.assertEqual(st.ephemeralOwner, a.client_id[0])
        self.assertEqual(b.exists(seq).ephemeralOwner, a.client_id[0])
        with self.assertRaises(NoChildrenForEphemeralsError):
            a.create(self.p("eph", "child"))
        a.stop()
        # stop() closes the session: its ephemerals go at once.
        b.sync(self.root)
        self.assertIsNone(b.exists(self.p("eph")))
        self.assertIsNone(b.exists(seq))
        self.assertEqual(b.get_children(self.root), [])

    def test_errors(self):
        c = self.client()
        c.ensure_path(self.p("d", "kid"))
        with self.assertRaises(NoNodeError):
            c.get(self.p("missing"))
        with self.assertRaises(NoNodeError):
            c.set(self.p("missing"), b"x")
        with self.assertRaises(NoNodeError):
            c.delete(self.p("missing"))
        with self.assertRaises(NoNodeError):
            c.get_children(self.p("missing"))
        with self.assertRaises(NoNodeError):
            c.create(self.p("no", "parent"))
        with self.assertRaises(NodeExistsError):
            c.create(self.p("d"))
        with self.assertRaises(NotEmptyError):
            c.delete(self.p("d"))
        c.set(self.p("d"), b"1")  # version 1
        with self.assertRaises(BadVersionError):
            c.set(self.p("d"), b"2", version=0)
        self.assertEqual(c.set(self.p("d"), b"2", version=1).version, 2)
        with self.assertRaises(BadVersionError):
            c.delete(self.p("d", "kid"), version=3)
        c.delete(self.p("d", "kid"), version=0)
        # version -1 means any version.
        c.delete(self.p("d"), version=-1)
        self.assertIsNone(c.exists(self.p("d")))

    def test_delete_recursive(self):
        c = self.client()
        for p in ("r/a/b/c", "r/a/d", "r/e"):
            c.create(self.p(*p.split("/")), b"x", makepath=True)
        c.create(self.p("r", "a", "eph"), ephemeral=True)
        c.delete(self.p("r"), recursive=True)
        self.assertIsNone(c.exists(self.p("r")))
        self.assertEqual(c.get_children(self.root), [])

    def test_system_nodes(self):
        c = self.client()
        self.assertIn("zookeeper", c.get_children("/"))
        self.assertLessEqual({"quota", "config"}, set(c.get_children("/zookeeper")))
        root = c.exists("/")
        self.assertEqual((root.czxid, root.ctime, root.ephemeralOwner), (0, 0, 0))

    def test_acl_default_is_world_anyone(self):
        c = self.client()
        c.ensure_path(self.root)
        c.create(self.p("w"))
        acls, st = c.get_acls(self.p("w"))
        self.assertEqual(list(acls), list(OPEN_ACL_UNSAFE))
        self.assertEqual(st.aversion, 0)

    def test_sync_then_read_sees_other_session(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        a.create(self.p("s"), b"1")
        self.assertEqual(b.sync(self.p("s")), self.p("s"))
        self.assertEqual(b.get(self.p("s"))[0], b"1")

    def test_four_letter_words_and_server_version(self):
        c = self.client()
        self.assertEqual(c.command(b"ruok"), "imok")
        version = c.server_version()
        self.assertEqual(version[:2], (3, 8))
        self.assertIn("Zookeeper version", c.command(b"srvr"))

    def test_chroot(self):
        setup = self.client()
        setup.ensure_path(self.p("chroot"))
        c = self.client(hosts=self.cluster.hosts + self.p("chroot"))
        c.create("/inner", b"i")
        setup.sync(self.p("chroot"))  # c may be connected to another member
        self.assertEqual(setup.get(self.p("chroot", "inner"))[0], b"i")
        self.assertEqual(c.get_children("/"), ["inner"])
        seq = c.create("/s-", sequence=True)
        self.assertTrue(seq.startswith("/s-"), seq)
        t = c.transaction()
        t.create("/t1")
        self.assertEqual(t.commit(), ["/t1"])

    def test_client_id_reattach(self):
        a = self.client()
        a.ensure_path(self.root)
        a.create(self.p("mine"), ephemeral=True)
        sid, passwd = a.client_id
        # A second client that presents the same id and password joins the
        # same session (Kazoo's client_id argument).
        b = self.client(client_id=(sid, passwd))
        self.assertEqual(b.client_id[0], sid)
        wait_for(lambda: b.exists(self.p("mine")) is not None, msg="node visible")
        self.assertEqual(b.exists(self.p("mine")).ephemeralOwner, sid)

