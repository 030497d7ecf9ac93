"""Kazoo's recipes against the server: Lock (contention, FIFO, timeout,
cancel, release when the holder's session is lost), ReadLock/WriteLock,
Semaphore, Election, Barrier, DoubleBarrier, Counter, Party, ShallowParty,
Queue, LockingQueue, SetPartitioner, TreeCache and the non-blocking
leases."""

import datetime
import threading
import time

from kazoo.exceptions import (
    BadVersionError,
    CancelledError,
    ConnectionClosedError,
    LockTimeout,
    NoNodeError,
)
from kazoo.recipe.cache import TreeCache, TreeEvent

from kzsuite import EventLog, KazooTestCase, wait_for


def seq_of(name):
    """The sequence number at the end of a sequential node's name."""
    return int(name[-10:])


class Exclusion:
    """Proof of mutual exclusion for code run under a lock: a Python-side
    holder slot that must be free on entry, and a counter znode written
    back with the version it was read at (a second holder in the same
    window would make one write fail with BadVersion)."""

    def __init__(self, test, client, path):
        self.test = test
        self.path = path
        self.mu = threading.Lock()
        self.holder = None
        self.overlaps = []
        self.grants = []
        client.create(path, b"0", makepath=True)

    def critical(self, client, who, hold=0.005, token=None):
        with self.mu:
            if self.holder is not None:
                self.overlaps.append((self.holder, who))
            self.holder = who
            self.grants.append((who, token))
        data, st = client.get(self.path)
        time.sleep(hold)
        try:
            client.set(self.path, str(int(data) + 1).encode(), version=st.version)
        except BadVersionError:
            with self.mu:
                self.overlaps.append(("badversion", who))
        with self.mu:
            self.holder = None

    def check(self, client, expected):
        self.test.assertEqual(self.overlaps, [])
        # The holders may have written through other members of an
        # ensemble; the sync also covers what the caller reads next.
        client.sync(self.path)
        self.test.assertEqual(int(client.get(self.path)[0]), expected)


def nkids(client, path):
    """The number of children of path, 0 if it does not exist yet."""
    try:
        return len(client.get_children(path))
    except NoNodeError:
        return 0


def run_threads(fns, timeout=60):
    """Run each fn in a thread; re-raise the first exception; fail if any
    is still running after timeout seconds."""
    errors = []

    def wrap(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(fn,), daemon=True) for fn in fns]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        raise AssertionError("threads still running after %.0fs" % timeout)
    if errors:
        raise errors[0]


class LockTest(KazooTestCase):

    def test_lock_contention_exclusion_and_fifo(self):
        setup = self.client()
        ex = Exclusion(self, setup, self.p("counter"))
        n, rounds = 5, 4
        clients = [self.client() for _ in range(n)]

        def worker(i):
            c = clients[i]
            for _ in range(rounds):
                lock = c.Lock(self.p("lock"), "worker-%d" % i)
                with lock:
                    ex.critical(c, i, token=seq_of(lock.node))

        run_threads([lambda i=i: worker(i) for i in range(n)])
        ex.check(setup, n * rounds)
        tokens = [t for _, t in ex.grants]
        # Grants follow the sequence numbers of the lock nodes: FIFO.
        self.assertEqual(tokens, sorted(tokens))
        self.assertEqual(len(set(tokens)), n * rounds)
        self.assertEqual(setup.get_children(self.p("lock")), [])

    def test_contenders_in_order(self):
        a, b, c = self.client(), self.client(), self.client()
        la = a.Lock(self.p("lock"), "first")
        self.assertTrue(la.acquire())
        lb = b.Lock(self.p("lock"), "second")
        lc = c.Lock(self.p("lock"), "third")
        got = []
        tb = threading.Thread(target=lambda: got.append(("b", lb.acquire())), daemon=True)
        tb.start()
        wait_for(lambda: nkids(a, self.p("lock")) == 2, msg="b queued")
        tc = threading.Thread(target=lambda: got.append(("c", lc.acquire())), daemon=True)
        tc.start()
        wait_for(lambda: nkids(a, self.p("lock")) == 3, msg="c queued")
        self.assertEqual(la.contenders(), ["first", "second", "third"])
        self.assertEqual(got, [])
        la.release()
        tb.join(10)
        self.assertEqual(got, [("b", True)])
        lb.release()
        tc.join(10)
        self.assertEqual(got, [("b", True), ("c", True)])
        lc.release()

    def test_lock_timeout_and_nonblocking(self):
        a, b = self.client(), self.client()
        la = a.Lock(self.p("lock"), "holder")
        la.acquire()
        lb = b.Lock(self.p("lock"), "waiter")
        t0 = time.monotonic()
        with self.assertRaises(LockTimeout):
            lb.acquire(timeout=0.5)
        self.assertGreaterEqual(time.monotonic() - t0, 0.45)
        self.assertFalse(lb.acquire(blocking=False))
        # The failed attempts removed their nodes.
        wait_for(lambda: nkids(a, self.p("lock")) == 1, msg="waiter node removed")
        la.release()
        self.assertTrue(lb.acquire(timeout=5))
        lb.release()

    def test_lock_cancel(self):
        a, b = self.client(), self.client()
        la = a.Lock(self.p("lock"))
        la.acquire()
        lb = b.Lock(self.p("lock"))
        result = []

        def waiter():
            try:
                result.append(lb.acquire())
            except CancelledError:
                result.append("cancelled")

        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        wait_for(lambda: nkids(a, self.p("lock")) == 2, msg="waiter queued")
        lb.cancel()
        t.join(10)
        self.assertEqual(result, ["cancelled"])
        wait_for(lambda: nkids(a, self.p("lock")) == 1, msg="cancelled node removed")
        self.assertTrue(la.is_acquired)
        la.release()

    def test_lock_released_when_holder_session_dies(self):
        # The holder is a separate process, killed with SIGKILL: nothing
        # deletes its lock node but the server's session expiry.
        timeout = 2.0
        holder = self.client_process(self.cluster.hosts, timeout, "lock:%s:holder" % self.p("lock"))
        waiter = self.client()
        lw = waiter.Lock(self.p("lock"), "waiter")
        waiter.sync(self.p("lock"))  # the holder may be connected to another member
        self.assertEqual(lw.contenders(), ["holder"])
        self.assertFalse(lw.acquire(blocking=False))
        holder.kill()
        t0 = time.monotonic()
        self.assertTrue(lw.acquire(timeout=20))
        elapsed = time.monotonic() - t0
        self.assertGreater(elapsed, timeout * 0.5, "lock released before the session expired")
        self.assertEqual(lw.contenders(), ["waiter"])
        lw.release()

    def test_read_write_lock(self):
        r1c, r2c, wc, r3c = self.client(), self.client(), self.client(), self.client()
        r1 = r1c.ReadLock(self.p("rw"), "r1")
        r2 = r2c.ReadLock(self.p("rw"), "r2")
        self.assertTrue(r1.acquire(timeout=5))
        self.assertTrue(r2.acquire(timeout=5))  # readers share
        w = wc.WriteLock(self.p("rw"), "w")
        with self.assertRaises(LockTimeout):
            w.acquire(timeout=0.3)
        got = []
        t = threading.Thread(target=lambda: got.append(w.acquire()), daemon=True)
        t.start()
        wait_for(lambda: nkids(r1c, self.p("rw")) == 3, msg="writer queued")
        # A reader arriving after a waiting writer waits for it.
        r3 = r3c.ReadLock(self.p("rw"), "r3")
        self.assertFalse(r3.acquire(blocking=False))
        r1.release()
        time.sleep(0.2)
        self.assertEqual(got, [])
        r2.release()
        t.join(10)
        self.assertEqual(got, [True])
        self.assertFalse(r3.acquire(blocking=False))
        w.release()
        self.assertTrue(r3.acquire(timeout=5))
        r3.release()

    def test_semaphore(self):
        cs = [self.client() for _ in range(3)]
        sems = [c.Semaphore(self.p("sem"), "s%d" % i, max_leases=2) for i, c in enumerate(cs)]
        self.assertTrue(sems[0].acquire(timeout=5))
        self.assertTrue(sems[1].acquire(timeout=5))
        with self.assertRaises(LockTimeout):
            sems[2].acquire(timeout=0.3)
        # Leases are taken through other servers of an ensemble: each
        # reader syncs before listing what other clients wrote.
        cs[0].sync(self.p("sem"))
        self.assertEqual(sorted(sems[0].lease_holders()), ["s0", "s1"])
        sems[0].release()
        self.assertTrue(sems[2].acquire(timeout=5))
        cs[1].sync(self.p("sem"))
        self.assertEqual(sorted(sems[1].lease_holders()), ["s1", "s2"])
        sems[1].release()
        sems[2].release()
        cs[0].sync(self.p("sem"))
        self.assertEqual(sems[0].lease_holders(), [])
        # A semaphore with a different max_leases is refused.
        other = cs[0].Semaphore(self.p("sem"), "x", max_leases=3)
        with self.assertRaises(ValueError):
            other.acquire(timeout=1)


class CoordinationTest(KazooTestCase):

    def test_election(self):
        n = 3
        clients = [self.client() for _ in range(n)]
        elections = [c.Election(self.p("elect"), "cand-%d" % i) for i, c in enumerate(clients)]
        leaders = []
        go = [threading.Event() for _ in range(n)]
        lead_mu = threading.Lock()
        current = [None]
        overlaps = []

        def lead(i):
            with lead_mu:
                if current[0] is not None:
                    overlaps.append((current[0], i))
                current[0] = i
                leaders.append(i)
            go[i].wait(20)
            with lead_mu:
                current[0] = None

        def candidate(i):
            try:
                elections[i].run(lead, i)
            except ConnectionClosedError:
                pass  # candidate 1's client was stopped while it led

        threads = []
        for i in range(n):
            t = threading.Thread(target=candidate, args=(i,), daemon=True)
            t.start()
            threads.append(t)
            wait_for(lambda i=i: nkids(clients[0], self.p("elect")) == i + 1,
                     msg="candidate %d registered" % i)
        wait_for(lambda: leaders == [0], msg="first leader")
        # clients[0] saw every candidate; clients[1] may be on another member.
        clients[1].sync(self.p("elect"))
        self.assertEqual(elections[1].contenders(), ["cand-0", "cand-1", "cand-2"])
        go[0].set()
        wait_for(lambda: leaders == [0, 1], msg="second leader")
        # A leader whose session closes hands over too (it is gone from
        # the Python side's view first: its process would be dead).
        with lead_mu:
            current[0] = None
        clients[1].stop()
        wait_for(lambda: leaders == [0, 1, 2], msg="third leader")
        go[2].set()
        go[1].set()
        for t in threads:
            t.join(10)
        self.assertEqual(overlaps, [])

    def test_election_cancel(self):
        a, b = self.client(), self.client()
        ea = a.Election(self.p("el"), "a")
        eb = b.Election(self.p("el"), "b")
        release = threading.Event()
        ran = []
        ta = threading.Thread(target=ea.run, args=(lambda: (ran.append("a"), release.wait(20)),), daemon=True)
        ta.start()
        wait_for(lambda: ran == ["a"], msg="a leads")
        tb = threading.Thread(target=eb.run, args=(lambda: ran.append("b"),), daemon=True)
        tb.start()
        wait_for(lambda: nkids(a, self.p("el")) == 2, msg="b waits")
        eb.cancel()
        tb.join(10)
        self.assertFalse(tb.is_alive())
        release.set()
        ta.join(10)
        self.assertEqual(ran, ["a"])

    def test_barrier(self):
        a, b = self.client(), self.client()
        barrier = a.Barrier(self.p("bar"))
        waiter = b.Barrier(self.p("bar"))
        self.assertTrue(waiter.wait(timeout=0.1))  # no barrier yet
        barrier.create()
        b.sync(self.p("bar"))  # a may be connected to another member
        self.assertFalse(waiter.wait(timeout=0.3))
        got = []
        t = threading.Thread(target=lambda: got.append(waiter.wait(timeout=20)), daemon=True)
        t.start()
        time.sleep(0.2)
        barrier.remove()
        t.join(10)
        self.assertEqual(got, [True])

    def test_double_barrier(self):
        n = 3
        clients = [self.client() for _ in range(n)]
        barriers = [c.DoubleBarrier(self.p("dbl"), n, identifier="m%d" % i)
                    for i, c in enumerate(clients)]
        entered, left = [], []
        mu = threading.Lock()

        def member(i):
            barriers[i].enter()
            with mu:
                entered.append((i, time.monotonic()))
            barriers[i].leave()
            with mu:
                left.append((i, time.monotonic()))

        ts = []
        for i in range(n - 1):
            t = threading.Thread(target=member, args=(i,), daemon=True)
            t.start()
            ts.append(t)
        time.sleep(0.5)
        self.assertEqual(entered, [])  # waiting for the last member
        t = threading.Thread(target=member, args=(n - 1,), daemon=True)
        t.start()
        ts.append(t)
        for t in ts:
            t.join(20)
        self.assertEqual(sorted(i for i, _ in entered), list(range(n)))
        self.assertEqual(sorted(i for i, _ in left), list(range(n)))
        # Nobody left before everybody entered.
        self.assertLessEqual(max(t for _, t in entered), min(t for _, t in left))

    def test_counter(self):
        n, incs = 4, 10
        clients = [self.client() for _ in range(n)]

        def bump(c):
            counter = c.Counter(self.p("count"))
            for _ in range(incs):
                counter += 1

        run_threads([lambda c=c: bump(c) for c in clients])
        clients[0].sync(self.p("count"))  # the others may be on other members
        counter = clients[0].Counter(self.p("count"))
        self.assertEqual(counter.value, n * incs)
        counter -= 5
        self.assertEqual((counter.pre_value, counter.post_value), (n * incs, n * incs - 5))
        f = clients[0].Counter(self.p("fcount"), default=0.5)
        f += 0.25
        self.assertEqual(f.value, 0.75)

    def test_party_and_shallow_party(self):
        for kind in ("Party", "ShallowParty"):
            with self.subTest(kind=kind):
                path = self.p(kind.lower())
                cs = [self.client() for _ in range(3)]
                parties = [getattr(c, kind)(path, "member-%d" % i) for i, c in enumerate(cs)]
                for p in parties:
                    p.join()
                # Members joined through other servers of an ensemble:
                # sync before reading what other clients wrote.
                cs[0].sync(path)
                self.assertEqual(len(parties[0]), 3)
                self.assertEqual(sorted(parties[0]), ["member-0", "member-1", "member-2"])
                parties[1].leave()
                cs[2].sync(path)
                self.assertEqual(sorted(parties[2]), ["member-0", "member-2"])
                cs[2].stop()  # ephemeral membership ends with the session
                wait_for(lambda: sorted(parties[0]) == ["member-0"], msg="member-2 gone")


class QueueTest(KazooTestCase):

    def test_queue_priority_and_fifo(self):
        c = self.client()
        q = c.Queue(self.p("q"))
        q.put(b"low-1", priority=200)
        q.put(b"high", priority=1)
        q.put(b"mid-1")
        q.put(b"mid-2")
        q.put(b"low-2", priority=200)
        self.assertEqual(len(q), 5)
        self.assertEqual([q.get() for _ in range(5)], [b"high", b"mid-1", b"mid-2", b"low-1", b"low-2"])
        self.assertIsNone(q.get())
        self.assertEqual(len(q), 0)

    def test_queue_concurrent_consumers(self):
        producer = self.client()
        q = producer.Queue(self.p("q"))
        items = [b"item-%03d" % i for i in range(40)]
        for it in items:
            q.put(it)
        got = []
        mu = threading.Lock()
        consumers = [self.client() for _ in range(3)]

        def consume(c):
            # The producer may be connected to another member: a consumer
            # that saw an empty queue would stop early.
            c.sync(self.p("q"))
            cq = c.Queue(self.p("q"))
            while True:
                v = cq.get()
                if v is None:
                    return
                with mu:
                    got.append(v)

        run_threads([lambda c=c: consume(c) for c in consumers])
        self.assertEqual(sorted(got), items)  # each item exactly once

    def test_locking_queue(self):
        a, b = self.client(), self.client()
        qa = a.LockingQueue(self.p("lq"))
        qb = b.LockingQueue(self.p("lq"))
        qa.put(b"one")
        qa.put_all([b"two", b"three"], priority=50)
        self.assertEqual(len(qa), 3)
        self.assertEqual(qa.get(timeout=5), b"two")
        self.assertTrue(qa.holds_lock())
        # b cannot take the item a holds; it gets the next one.
        self.assertEqual(qb.get(timeout=5), b"three")
        self.assertTrue(qa.consume())
        self.assertFalse(qa.holds_lock())
        # b gives its item back; a then gets it.
        self.assertTrue(qb.release())
        # b may be connected to another member: unsynced, a could still see
        # b's lock on the item and take the next one.
        a.sync(self.p("lq"))
        self.assertEqual(qa.get(timeout=5), b"three")
        self.assertTrue(qa.consume())
        self.assertEqual(qb.get(timeout=5), b"one")
        self.assertTrue(qb.consume())
        a.sync(self.p("lq"))  # b may be connected to another member
        self.assertEqual(len(qa), 0)
        self.assertIsNone(qa.get(timeout=0.3))
        # A blocked get returns when an item arrives.
        got = []
        t = threading.Thread(target=lambda: got.append(qb.get(timeout=20)), daemon=True)
        t.start()
        time.sleep(0.2)
        qa.put(b"late")
        t.join(10)
        self.assertEqual(got, [b"late"])

    def test_locking_queue_item_returns_when_holder_dies(self):
        a, b = self.client(), self.client()
        qa = a.LockingQueue(self.p("lq"))
        qa.put(b"job")
        self.assertEqual(qa.get(timeout=5), b"job")
        qb = b.LockingQueue(self.p("lq"))
        self.assertIsNone(qb.get(timeout=0.3))
        a.stop()  # the holder's ephemeral lock on the item goes with it
        self.assertEqual(qb.get(timeout=10), b"job")
        self.assertTrue(qb.consume())


class PartitionCacheLeaseTest(KazooTestCase):

    def test_set_partitioner(self):
        items = ["a", "b", "c", "d", "e", "f"]
        c1, c2 = self.client(), self.client()
        p1 = c1.SetPartitioner(self.p("part"), set=items, identifier="p1", time_boundary=0.5)
        p2 = c2.SetPartitioner(self.p("part"), set=items, identifier="p2", time_boundary=0.5)

        def settle(*ps):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                for p in ps:
                    if p.failed:
                        raise AssertionError("partitioner failed")
                    if p.release:
                        p.release_set()
                if all(p.acquired for p in ps):
                    return
                time.sleep(0.05)
            raise AssertionError("partitioners did not settle")

        settle(p1, p2)
        s1, s2 = set(p1), set(p2)
        self.assertEqual(s1 | s2, set(items))
        self.assertEqual(s1 & s2, set())
        self.assertEqual(len(s1), 3)
        # A member leaving makes the other take everything.
        p2.finish()
        wait_for(lambda: p1.release, timeout=20, msg="release asked after p2 left")
        p1.release_set()
        settle(p1)
        self.assertEqual(set(p1), set(items))
        p1.finish()

    def test_tree_cache(self):
        c, w = self.client(), self.client()
        w.create(self.p("tree", "a"), b"A", makepath=True)
        w.create(self.p("tree", "a", "b"), b"B")
        c.sync(self.p("tree"))  # w may be connected to another member
        cache = TreeCache(c, self.p("tree"))
        ev = EventLog()
        cache.listen(ev)
        cache.start()
        self.addCleanup(cache.close)
        wait_for(lambda: any(e.event_type == TreeEvent.INITIALIZED for e in ev.snapshot()),
                 msg="cache initialized")
        added = {e.event_data.path for e in ev.snapshot() if e.event_type == TreeEvent.NODE_ADDED}
        self.assertEqual(added, {self.p("tree"), self.p("tree", "a"), self.p("tree", "a", "b")})
        self.assertEqual(cache.get_data(self.p("tree", "a", "b")).data, b"B")
        self.assertEqual(sorted(cache.get_children(self.p("tree", "a"))), ["b"])

        def saw(kind, path, data=None):
            return lambda: any(e.event_type == kind and e.event_data.path == path
                               and (data is None or e.event_data.data == data)
                               for e in ev.snapshot())

        w.set(self.p("tree", "a"), b"A2")
        wait_for(saw(TreeEvent.NODE_UPDATED, self.p("tree", "a"), b"A2"), msg="update")
        w.create(self.p("tree", "a", "c"), b"C")
        wait_for(saw(TreeEvent.NODE_ADDED, self.p("tree", "a", "c"), b"C"), msg="add")
        w.delete(self.p("tree", "a", "b"))
        wait_for(saw(TreeEvent.NODE_REMOVED, self.p("tree", "a", "b")), msg="remove")
        self.assertEqual(sorted(cache.get_children(self.p("tree", "a"))), ["c"])
        # The cached stat is the one of the last data read (child changes
        # do not refresh it): version and mzxid match the server's.
        cst, sst = cache.get_data(self.p("tree", "a")).stat, w.exists(self.p("tree", "a"))
        self.assertEqual((cst.version, cst.mzxid, cst.czxid), (sst.version, sst.mzxid, sst.czxid))

    def test_non_blocking_lease(self):
        a, b = self.client(), self.client()
        dur = datetime.timedelta(seconds=60)
        la = a.NonBlockingLease(self.p("lease"), dur, identifier="a")
        self.assertTrue(la)
        lb = b.NonBlockingLease(self.p("lease"), dur, identifier="b")
        self.assertFalse(lb)
        # The holder renews its own lease.
        self.assertTrue(a.NonBlockingLease(self.p("lease"), dur, identifier="a"))
        # After expiry (a clock an hour ahead), another holder may take it.
        later = lambda: datetime.datetime.utcnow() + datetime.timedelta(hours=1)  # noqa: E731
        self.assertTrue(b.NonBlockingLease(self.p("lease"), dur, identifier="b", utcnow=later))
        self.assertFalse(a.NonBlockingLease(self.p("lease"), dur, identifier="a"))

    def test_multi_non_blocking_lease(self):
        cs = [self.client() for _ in range(3)]
        dur = datetime.timedelta(seconds=60)
        got = [bool(c.MultiNonBlockingLease(2, self.p("mlease"), dur, identifier="c%d" % i))
               for i, c in enumerate(cs)]
        self.assertEqual(got, [True, True, False])
