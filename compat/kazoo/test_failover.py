"""Failover inside a recipe: the server a Kazoo Lock's holder and waiters
are connected to is killed with SIGKILL and restarted on the same data
and port. Sessions (10 s) outlive the outage, so the holder keeps the
lock, the waiters keep their places, exclusion holds (the counter check
of test_recipes.Exclusion) and the recipe carries on.

With an ensemble (run --members 3) the member the holder is connected to
is the one killed; today that is the only member.
"""

import threading
import time

from kazoo.exceptions import BadVersionError, ConnectionLoss, SessionExpiredError
from kazoo.protocol.states import KazooState
from kazoo.recipe.cache import TreeCache, TreeEvent

from harness import Proxy
from kzsuite import EventLog, KazooTestCase, StateRecorder, wait_for
from test_recipes import run_threads


def retrying(client, fn, *args, **kw):
    """fn under the client's retry policy (ConnectionLoss is retried)."""
    return client.retry(fn, *args, **kw)


class CrashCounter:
    """Mutual-exclusion proof that survives connection loss: a Python-side
    holder slot, and a counter znode written with the version read. A
    write that was applied just before the connection broke is recognised
    on retry (BadVersion, but the node holds our value at our version)."""

    def __init__(self, client, path):
        self.path = path
        self.mu = threading.Lock()
        self.holder = None
        self.overlaps = []
        self.grants = []
        client.create(path, b"0", makepath=True)

    def critical(self, client, who):
        with self.mu:
            if self.holder is not None:
                self.overlaps.append((self.holder, who))
            self.holder = who
            self.grants.append(who)
        data, st = retrying(client, client.get, self.path)
        want = str(int(data) + 1).encode()
        while True:
            try:
                client.set(self.path, want, version=st.version)
                break
            except ConnectionLoss:
                wait_for(lambda: client.connected, timeout=30, msg="reconnect")
            except BadVersionError:
                now, nst = retrying(client, client.get, self.path)
                if now == want and nst.version == st.version + 1:
                    break  # our write landed before the connection broke
                with self.mu:
                    self.overlaps.append(("badversion", who))
                break
        with self.mu:
            self.holder = None


class FailoverTest(KazooTestCase):

    @classmethod
    def setUpClass(cls):
        cls.cluster = None

    def test_lock_held_across_kill9(self):
        cl = self.own_cluster()
        a, b = self.client(cl), self.client(cl)
        rec_a, rec_b = StateRecorder(), StateRecorder()
        a.add_listener(rec_a)
        b.add_listener(rec_b)
        sid_a, sid_b = a.client_id[0], b.client_id[0]
        counter = CrashCounter(a, self.p("counter"))
        la = a.Lock(self.p("lock"), "a")
        lb = b.Lock(self.p("lock"), "b")
        self.assertTrue(la.acquire(timeout=5))
        got = []
        t = threading.Thread(target=lambda: got.append(lb.acquire(timeout=60)), daemon=True)
        t.start()
        wait_for(lambda: la.contenders() == ["a", "b"], msg="b queued")

        member = cl.member_for(a)
        b_too = cl.member_for(b) is member  # always so when standalone
        member.kill()
        rec_a.wait_for(KazooState.SUSPENDED)
        member.start()
        rec_a.wait_for(KazooState.CONNECTED)
        if b_too:
            rec_b.wait_for(KazooState.CONNECTED)
        self.assertEqual((a.client_id[0], b.client_id[0]), (sid_a, sid_b))

        # a still holds; b still waits in second place.
        self.assertEqual(retrying(a, la.contenders), ["a", "b"])
        time.sleep(0.3)
        self.assertEqual(got, [])
        self.assertTrue(la.is_acquired)
        counter.critical(a, "a")
        la.release()
        t.join(30)
        self.assertEqual(got, [True])
        counter.critical(b, "b")
        lb.release()
        self.assertEqual(counter.overlaps, [])
        self.assertEqual(counter.grants, ["a", "b"])
        a.sync(self.p("counter"))  # b may be connected to another member
        self.assertEqual(a.get(self.p("counter"))[0], b"2")
        self.assertNotIn(KazooState.LOST, rec_a.states + rec_b.states)

    def test_lock_contention_through_kill9(self):
        cl = self.own_cluster()
        setup = self.client(cl)
        counter = CrashCounter(setup, self.p("counter"))
        n, rounds = 4, 6
        clients = [self.client(cl) for _ in range(n)]
        recs = [StateRecorder() for _ in range(n)]
        for c, r in zip(clients, recs):
            c.add_listener(r)
        sids = [c.client_id[0] for c in clients]
        crashed = threading.Event()

        def worker(i):
            c = clients[i]
            for _ in range(rounds):
                lock = c.Lock(self.p("lock"), "w%d" % i)
                lock.acquire(timeout=60)
                try:
                    counter.critical(c, i)
                    if not crashed.is_set():
                        time.sleep(0.05)  # keep the lock busy until the crash
                finally:
                    while True:
                        try:
                            lock.release()
                            break
                        except (ConnectionLoss, SessionExpiredError):
                            time.sleep(0.05)

        done = []
        th = threading.Thread(target=lambda: done.append(run_threads(
            [lambda i=i: worker(i) for i in range(n)], timeout=120)), daemon=True)
        th.start()
        wait_for(lambda: len(counter.grants) >= n * rounds // 3, timeout=30, msg="some grants")
        member = cl.member_for(clients[0])
        member.kill()
        at_crash = len(counter.grants)
        time.sleep(0.3)
        member.start()
        crashed.set()
        th.join(120)
        self.assertFalse(th.is_alive(), "workers did not finish")
        self.assertEqual(done, [None])
        self.assertEqual(counter.overlaps, [])
        self.assertEqual(len(counter.grants), n * rounds)
        self.assertLess(at_crash, n * rounds - n, "the crash came after the contention")
        # The workers may have written through other members; the sync
        # also covers the lock's children read below.
        setup.sync(self.p("counter"))
        self.assertEqual(int(setup.get(self.p("counter"))[0]), n * rounds)
        self.assertEqual([c.client_id[0] for c in clients], sids)
        for r in recs:
            self.assertNotIn(KazooState.LOST, r.states)
        self.assertEqual(setup.get_children(self.p("lock")), [])


    def test_election_and_party_across_kill9(self):
        cl = self.own_cluster()
        clients = [self.client(cl) for _ in range(3)]
        leaders = []
        release = [threading.Event() for _ in range(3)]

        def lead(i):
            leaders.append(i)
            release[i].wait(60)

        parties = [c.Party(self.p("party"), "m%d" % i) for i, c in enumerate(clients)]
        for p in parties:
            p.join()
        threads = []
        for i, c in enumerate(clients):
            e = c.Election(self.p("elect"), "c%d" % i)
            t = threading.Thread(target=e.run, args=(lead, i), daemon=True)
            t.start()
            threads.append(t)
            wait_for(lambda i=i: len(e.contenders()) == i + 1, msg="candidate %d" % i)
        wait_for(lambda: leaders == [0], msg="first leader")

        cl.kill_all()
        cl.start_all()
        wait_for(lambda: all(c.connected for c in clients), timeout=30, msg="reconnect")
        time.sleep(0.3)
        self.assertEqual(leaders, [0], "leadership changed across the crash")
        self.assertEqual(sorted(parties[1]), ["m0", "m1", "m2"])
        release[0].set()
        wait_for(lambda: leaders == [0, 1], msg="second leader")
        release[1].set()
        wait_for(lambda: leaders == [0, 1, 2], msg="third leader")
        release[2].set()
        for t in threads:
            t.join(10)


    def test_locking_queue_across_kill9(self):
        cl = self.own_cluster()
        a, b = self.client(cl), self.client(cl)
        qa = a.LockingQueue(self.p("lq"))
        qb = b.LockingQueue(self.p("lq"))
        qa.put_all([b"j1", b"j2"])
        self.assertEqual(qa.get(timeout=5), b"j1")
        cl.kill_all()
        cl.start_all()
        wait_for(lambda: a.connected and b.connected, timeout=30, msg="reconnect")
        # a's hold on j1 survived the crash: b gets j2, then nothing.
        self.assertEqual(retrying(b, qb.get, timeout=5), b"j2")
        self.assertTrue(retrying(b, qb.consume))
        self.assertIsNone(qb.get(timeout=0.5))
        self.assertTrue(retrying(a, qa.consume))
        self.assertEqual(len(qa), 0)

    def test_tree_cache_across_cut_connection(self):
        cl = self.own_cluster()
        server = cl.members[0]
        proxy = Proxy(server.host, server.port)
        self.addCleanup(proxy.close)
        w = self.client(cl)
        c = self.client(cl, hosts=proxy.address)
        w.create(self.p("t", "x"), b"1", makepath=True)
        c.sync(self.p("t"))  # w may be connected to another member
        cache = TreeCache(c, self.p("t"))
        ev = EventLog()
        cache.listen(ev)
        cache.start()
        self.addCleanup(cache.close)
        wait_for(lambda: any(e.event_type == TreeEvent.INITIALIZED for e in ev.snapshot()),
                 msg="initialized")
        proxy.refuse(True)
        proxy.sever()
        wait_for(lambda: any(e.event_type == TreeEvent.CONNECTION_SUSPENDED for e in ev.snapshot()),
                 msg="suspended")
        w.set(self.p("t", "x"), b"2")
        w.create(self.p("t", "y"), b"new")
        proxy.refuse(False)
        wait_for(lambda: any(e.event_type == TreeEvent.CONNECTION_RECONNECTED for e in ev.snapshot()),
                 msg="reconnected")
        wait_for(lambda: cache.get_data(self.p("t", "x")) is not None
                 and cache.get_data(self.p("t", "x")).data == b"2", msg="x refreshed")
        wait_for(lambda: cache.get_data(self.p("t", "y")) is not None, msg="y added")
        self.assertEqual(cache.get_data(self.p("t", "y")).data, b"new")
        self.assertEqual(sorted(cache.get_children(self.p("t"))), ["x", "y"])


class CrashSessionTest(KazooTestCase):
    """Sessions across a server crash (SIGKILL and restart on the same
    data): ZooKeeper reloads every session and restarts its clock at
    startup, so a live client keeps its session even after an outage
    longer than its timeout, a dead client's session still expires (one
    timeout after the restart) and a closed session stays closed."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = None

    def test_dead_holder_released_after_restart(self):
        cl = self.own_cluster()
        timeout = 2.0
        holder = self.client_process(cl.hosts, timeout, "lock:%s:holder" % self.p("lock"))
        waiter = self.client(cl)
        lw = waiter.Lock(self.p("lock"), "waiter")
        waiter.sync(self.p("lock"))  # the holder may be connected to another member
        self.assertEqual(lw.contenders(), ["holder"])
        holder.kill()
        cl.kill_all()
        cl.start_all()
        t0 = time.monotonic()
        self.assertTrue(lw.acquire(timeout=30))
        elapsed = time.monotonic() - t0
        self.assertGreater(elapsed, timeout * 0.5,
                           "the dead holder's session ended before its timeout ran from the restart")
        self.assertEqual(lw.contenders(), ["waiter"])
        lw.release()

    def test_live_session_survives_outage_longer_than_timeout(self):
        cl = self.own_cluster()
        timeout = 2.0
        a = self.client(cl, timeout=timeout)
        rec = StateRecorder()
        a.add_listener(rec)
        sid = a.client_id[0]
        a.create(self.p("eph"), b"e", ephemeral=True, makepath=True)
        cl.kill_all()
        rec.wait_for(KazooState.SUSPENDED)
        time.sleep(timeout * 1.5)
        # kill_all kills the members one after the other: the client may
        # have resumed its session on a member killed a moment later, so a
        # CONNECTED may be recorded already. Wait for the one after the
        # restart (start_all can return before an ensemble has a leader).
        reconnects = rec.states.count(KazooState.CONNECTED)
        cl.start_all()
        rec.wait_for(KazooState.CONNECTED, count=reconnects + 1, timeout=30)
        self.assertEqual(a.client_id[0], sid)
        self.assertNotIn(KazooState.LOST, rec.states)
        # Stay connected past another timeout: the session is really live.
        time.sleep(timeout * 1.5)
        other = self.client(cl)
        other.sync(self.p("eph"))  # a may be connected to another member
        self.assertEqual(other.exists(self.p("eph")).ephemeralOwner, sid)
        self.assertNotIn(KazooState.LOST, rec.states)

    def test_closed_session_stays_closed(self):
        cl = self.own_cluster()
        a = self.client(cl)
        a.create(self.p("eph"), ephemeral=True, makepath=True)
        sid, passwd = a.client_id
        a.stop()
        cl.kill_all()
        cl.start_all()
        b = self.client(cl)
        b.sync(self.p("eph"))  # a member may show a's closeSession late
        self.assertIsNone(b.exists(self.p("eph")))
        c = self.client(cl, client_id=(sid, passwd))
        self.assertNotEqual(c.client_id[0], sid)

    def test_acknowledged_writes_survive_kill9(self):
        cl = self.own_cluster()
        a = self.client(cl)
        a.ensure_path(self.root)
        results = [a.create_async(self.p("n-"), b"%d" % i, sequence=True) for i in range(300)]
        names = [r.get(timeout=30) for r in results]
        t = a.transaction()
        t.create(self.p("multi"), b"m")
        t.set_data(self.p("n-%010d" % 0), b"changed")
        t.commit()
        before = {n: a.get(self.p(n)) for n in a.get_children(self.root)}
        cl.kill_all()
        cl.start_all()
        b = self.client(cl)
        b.sync(self.root)  # a member may apply a's writes late after the restart
        after = {n: b.get(self.p(n)) for n in b.get_children(self.root)}
        self.assertEqual(len(after), 301)
        self.assertEqual(after, before)  # data and every Stat field
        self.assertEqual(sorted(self.p(n) for n in after if n.startswith("n-")), names)
