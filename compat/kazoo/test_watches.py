"""Watches through Kazoo: one-shot get/exists/get_children watches and the
events each write fires, and the DataWatch and ChildrenWatch recipes."""

import time

from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from kzsuite import EventLog, KazooTestCase, wait_for


def kinds(events):
    """(type, path) of each Kazoo WatchedEvent."""
    return [(e.type, e.path) for e in events]


class WatchTest(KazooTestCase):

    def test_get_watch_fires_once_on_change(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        a.create(self.p("d"), b"0")
        ev = EventLog()
        a.get(self.p("d"), watch=ev)
        b.set(self.p("d"), b"1")
        self.assertEqual(kinds(ev.wait_len(1)), [("CHANGED", self.p("d"))])
        self.assertEqual(ev.items[0].state, "CONNECTED")
        b.set(self.p("d"), b"2")  # one-shot: no second event
        b.delete(self.p("d"))
        time.sleep(0.3)
        self.assertEqual(len(ev.snapshot()), 1)

    def test_get_watch_fires_on_delete(self):
        a = self.client()
        a.ensure_path(self.root)
        a.create(self.p("d"), b"0")
        ev = EventLog()
        a.get(self.p("d"), watch=ev)
        self.client().delete(self.p("d"))
        self.assertEqual(kinds(ev.wait_len(1)), [("DELETED", self.p("d"))])

    def test_exists_watch_created_and_deleted(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        ev = EventLog()
        self.assertIsNone(a.exists(self.p("e"), watch=ev))
        b.create(self.p("e"))
        self.assertEqual(kinds(ev.wait_len(1)), [("CREATED", self.p("e"))])
        self.assertIsNotNone(a.exists(self.p("e"), watch=ev))
        b.set(self.p("e"), b"x")
        self.assertEqual(kinds(ev.wait_len(2))[1], ("CHANGED", self.p("e")))
        a.exists(self.p("e"), watch=ev)
        b.delete(self.p("e"))
        self.assertEqual(kinds(ev.wait_len(3))[2], ("DELETED", self.p("e")))

    def test_children_watch(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.p("p"))
        ev = EventLog()
        self.assertEqual(a.get_children(self.p("p"), watch=ev), [])
        b.set(self.p("p"), b"data")  # data changes do not fire child watches
        b.create(self.p("p", "k1"))
        self.assertEqual(kinds(ev.wait_len(1)), [("CHILD", self.p("p"))])
        a.get_children(self.p("p"), watch=ev)
        b.delete(self.p("p", "k1"))
        self.assertEqual(kinds(ev.wait_len(2))[1], ("CHILD", self.p("p")))
        a.get_children(self.p("p"), watch=ev)
        b.delete(self.p("p"))
        self.assertEqual(kinds(ev.wait_len(3))[2], ("DELETED", self.p("p")))
        time.sleep(0.2)
        self.assertEqual(len(ev.snapshot()), 3)

    def test_one_event_per_watcher_kind(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.p("n"))
        data_ev, child_ev, exist_ev = EventLog(), EventLog(), EventLog()
        a.get(self.p("n"), watch=data_ev)
        a.get_children(self.p("n"), watch=child_ev)
        a.exists(self.p("n"), watch=exist_ev)
        b.delete(self.p("n"))
        self.assertEqual(kinds(data_ev.wait_len(1)), [("DELETED", self.p("n"))])
        self.assertEqual(kinds(child_ev.wait_len(1)), [("DELETED", self.p("n"))])
        self.assertEqual(kinds(exist_ev.wait_len(1)), [("DELETED", self.p("n"))])

    def test_watch_seen_before_later_read(self):
        # ZooKeeper's ordering guarantee: a client sees the watch event
        # before it sees the new data (the event precedes later replies).
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        a.create(self.p("o"), b"0")
        for i in range(1, 21):
            ev = EventLog()
            a.get(self.p("o"), watch=ev)
            b.set(self.p("o"), str(i).encode())
            wait_for(lambda: a.get(self.p("o"))[0] == str(i).encode(), msg="new data")
            # Kazoo queues the event callback when the event frame is read,
            # which precedes the reply that carried the new data.
            self.assertEqual(len(ev.wait_len(1, timeout=5)), 1)

    def test_watches_many_paths(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        ev = EventLog()
        n = 50
        for i in range(n):
            a.create(self.p("m%d" % i))
            a.get(self.p("m%d" % i), watch=ev)
        t = b.transaction()
        for i in range(n):
            t.set_data(self.p("m%d" % i), b"x")
        t.commit()
        got = ev.wait_len(n)
        self.assertEqual(sorted(e.path for e in got), sorted(self.p("m%d" % i) for i in range(n)))
        self.assertEqual({e.type for e in got}, {"CHANGED"})


class WatcherRecipeTest(KazooTestCase):

    def test_data_watch(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        seen = EventLog()

        @DataWatch(a, self.p("dw"))
        def watcher(data, stat, event):
            seen((data, stat.version if stat else None, event.type if event else None))

        self.assertEqual(seen.wait_len(1), [(None, None, None)])
        b.create(self.p("dw"), b"a")
        self.assertEqual(seen.wait_len(2)[1], (b"a", 0, "CREATED"))
        b.set(self.p("dw"), b"b")
        self.assertEqual(seen.wait_len(3)[2], (b"b", 1, "CHANGED"))
        b.delete(self.p("dw"))
        self.assertEqual(seen.wait_len(4)[3], (None, None, "DELETED"))
        b.create(self.p("dw"), b"c")
        self.assertEqual(seen.wait_len(5)[4], (b"c", 0, "CREATED"))

    def test_data_watch_stops_when_false(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.root)
        a.create(self.p("stop"), b"0")
        seen = EventLog()

        def watcher(data, stat):
            seen(data)
            return data != b"1"

        DataWatch(a, self.p("stop"), watcher)
        seen.wait_len(1)
        b.set(self.p("stop"), b"1")
        self.assertEqual(seen.wait_len(2), [b"0", b"1"])
        b.set(self.p("stop"), b"2")
        time.sleep(0.3)
        self.assertEqual(seen.snapshot(), [b"0", b"1"])

    def test_children_watch(self):
        a = self.client()
        b = self.client()
        a.ensure_path(self.p("cw"))
        seen = EventLog()
        ChildrenWatch(a, self.p("cw"), lambda kids, event: seen((sorted(kids), event and event.type)),
                      send_event=True)
        self.assertEqual(seen.wait_len(1), [([], None)])
        b.create(self.p("cw", "x"))
        wait_for(lambda: seen.snapshot()[-1] == (["x"], "CHILD"), msg="x added")
        b.create(self.p("cw", "y"))
        wait_for(lambda: seen.snapshot()[-1] == (["x", "y"], "CHILD"), msg="y added")
        b.delete(self.p("cw", "x"))
        wait_for(lambda: seen.snapshot()[-1] == (["y"], "CHILD"), msg="x removed")


class FanOutTest(KazooTestCase):

    def test_many_sessions_watch_one_node(self):
        n = 30
        writer = self.client()
        writer.ensure_path(self.p("hot"))
        watchers = [self.client() for _ in range(n)]
        logs = [EventLog() for _ in range(n)]
        for c, log in zip(watchers, logs):
            c.sync(self.p("hot"))  # the writer may be connected to another member
            c.get_children(self.p("hot"), watch=log)
            c.get(self.p("hot"), watch=log)
        writer.create(self.p("hot", "k"))
        for log in logs:
            self.assertEqual(kinds(log.wait_len(1)), [("CHILD", self.p("hot"))])
        writer.set(self.p("hot"), b"x")
        for log in logs:
            self.assertEqual(kinds(log.wait_len(2))[1], ("CHANGED", self.p("hot")))

    def test_many_children(self):
        c = self.client()
        c.ensure_path(self.p("big"))
        n = 2000
        rs = [c.create_async(self.p("big", "child-%05d" % i), b"v") for i in range(n)]
        for r in rs:
            r.get(timeout=60)
        kids, st = c.get_children(self.p("big"), include_data=True)
        self.assertEqual(sorted(kids), ["child-%05d" % i for i in range(n)])
        self.assertEqual((st.numChildren, st.cversion), (n, n))
