"""Transactions (multi) through Kazoo's client.transaction(): the results
of a committed transaction, and the exception instances Kazoo puts in the
results of a failed one (RolledBackError before the failing op, the
failing op's own error, RuntimeInconsistency after it), with nothing
applied."""

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.protocol.states import ZnodeStat

from kzsuite import KazooTestCase, wait_for


class TransactionTest(KazooTestCase):

    def test_commit_success_results(self):
        c = self.client()
        c.ensure_path(self.root)
        c.create(self.p("old"), b"o")
        c.create(self.p("gone"))
        t = c.transaction()
        t.create(self.p("new"), b"n")
        t.create(self.p("new", "kid"), b"k")
        t.create(self.p("seq-"), sequence=True)
        t.set_data(self.p("old"), b"o2", version=0)
        t.check(self.p("old"), 1)
        t.delete(self.p("gone"), version=0)
        res = t.commit()
        self.assertEqual(len(res), 6)
        self.assertEqual(res[:2], [self.p("new"), self.p("new", "kid")])
        self.assertTrue(res[2].startswith(self.p("seq-")), res[2])
        self.assertIsInstance(res[3], ZnodeStat)
        self.assertEqual(res[3].version, 1)
        self.assertEqual(res[4:], [True, True])
        # Every op of a multi shares one zxid.
        st_new = c.exists(self.p("new"))
        st_kid = c.exists(self.p("new", "kid"))
        st_old = c.exists(self.p("old"))
        self.assertEqual(st_new.czxid, st_kid.czxid)
        self.assertEqual(st_old.mzxid, st_new.czxid)
        self.assertEqual(res[3], st_old)
        self.assertEqual(c.get(self.p("old"))[0], b"o2")
        self.assertIsNone(c.exists(self.p("gone")))
        self.assertEqual(c.exists(self.root).pzxid, st_new.czxid)

    def test_context_manager_commits(self):
        c = self.client()
        c.ensure_path(self.root)
        with c.transaction() as t:
            t.create(self.p("cm"), b"x")
        self.assertEqual(c.get(self.p("cm"))[0], b"x")

    def test_failure_results_and_nothing_applied(self):
        c = self.client()
        c.ensure_path(self.root)
        c.create(self.p("exists"), b"e")
        c.create(self.p("full"))
        c.create(self.p("full", "kid"))
        cases = [
            ("create existing", lambda t: t.create(self.p("exists")), NodeExistsError),
            ("create orphan", lambda t: t.create(self.p("nope", "kid")), NoNodeError),
            ("set bad version", lambda t: t.set_data(self.p("exists"), b"x", version=7), BadVersionError),
            ("set missing", lambda t: t.set_data(self.p("nope"), b"x"), NoNodeError),
            ("check bad version", lambda t: t.check(self.p("exists"), 3), BadVersionError),
            ("check missing", lambda t: t.check(self.p("nope"), 0), NoNodeError),
            ("delete non-empty", lambda t: t.delete(self.p("full")), NotEmptyError),
            ("delete missing", lambda t: t.delete(self.p("nope")), NoNodeError),
            ("delete bad version", lambda t: t.delete(self.p("exists"), version=4), BadVersionError),
        ]
        before = c.exists(self.root)
        for name, failing, exc in cases:
            with self.subTest(case=name):
                t = c.transaction()
                t.create(self.p("a"), b"a")
                t.set_data(self.p("exists"), b"changed")
                failing(t)
                t.create(self.p("b"))
                t.delete(self.p("full", "kid"))
                res = t.commit()
                self.assertEqual([type(r) for r in res],
                                 [RolledBackError, RolledBackError, exc,
                                  RuntimeInconsistency, RuntimeInconsistency], res)
                self.assertIsNone(c.exists(self.p("a")))
                self.assertIsNone(c.exists(self.p("b")))
                self.assertIsNotNone(c.exists(self.p("full", "kid")))
                data, st = c.get(self.p("exists"))
                self.assertEqual((data, st.version), (b"e", 0))
        after = c.exists(self.root)
        self.assertEqual((after.cversion, after.numChildren), (before.cversion, before.numChildren))

    def test_failing_first_op(self):
        c = self.client()
        c.ensure_path(self.root)
        t = c.transaction()
        t.check(self.p("nope"), 0)
        t.create(self.p("x"))
        res = t.commit()
        self.assertEqual([type(r) for r in res], [NoNodeError, RuntimeInconsistency])
        self.assertIsNone(c.exists(self.p("x")))

    def test_ops_see_earlier_ops(self):
        c = self.client()
        c.ensure_path(self.root)
        t = c.transaction()
        t.create(self.p("tmp"), b"1")
        t.set_data(self.p("tmp"), b"2", version=0)
        t.check(self.p("tmp"), 1)
        t.delete(self.p("tmp"), version=1)
        t.create(self.p("tmp"), b"3")
        res = t.commit()
        self.assertEqual(res[0], self.p("tmp"))
        self.assertEqual(res[1].version, 1)
        self.assertEqual(res[2:], [True, True, self.p("tmp")])
        data, st = c.get(self.p("tmp"))
        self.assertEqual((data, st.version), (b"3", 0))

    def test_ephemeral_and_sequential_in_multi(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        t = a.transaction()
        t.create(self.p("e"), ephemeral=True)
        t.create(self.p("s-"), ephemeral=True, sequence=True)
        t.create(self.p("s-"), ephemeral=True, sequence=True)
        res = t.commit()
        self.assertEqual(res[0], self.p("e"))
        seqs = sorted(int(r[-10:]) for r in res[1:])
        self.assertEqual(seqs[1], seqs[0] + 1)
        b.sync(self.root)  # a may be connected to another member
        self.assertEqual(b.exists(self.p("e")).ephemeralOwner, a.client_id[0])
        a.stop()
        b.sync(self.root)
        self.assertEqual(b.get_children(self.root), [])

    def test_multi_fires_watches_only_on_commit(self):
        a = self.client()
        a.ensure_path(self.root)
        a.create(self.p("w"), b"0")
        events = []
        a.get(self.p("w"), watch=events.append)
        t = a.transaction()
        t.set_data(self.p("w"), b"1")
        t.check(self.p("w"), 99)
        res = t.commit()
        self.assertIsInstance(res[1], BadVersionError)
        # The failed multi left the one-shot watch armed: a later write
        # fires it.
        a.set(self.p("w"), b"2")
        wait_for(lambda: len(events) == 1, msg="watch after failed multi")
        self.assertEqual(events[0].type, "CHANGED")
        self.assertEqual(events[0].path, self.p("w"))
