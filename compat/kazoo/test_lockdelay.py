"""zkd's lock delay (zkd.lockDelayMs, docs/fencing.md) through Kazoo's
stock Lock, unmodified: when a holder's session expires, its node stays a
tombstone for the delay, so the next waiter is granted only after it.

The tombstone is seen over the client protocol: the node still exists but
its fencing token (/zookeeper/fencing<path>) is NoNode, as nobody holds it.
Against ZooKeeper (--server zookeeper), which has no lock delay (the key is
an unused system property there), the scenario checks only that the lock
is handed over on expiry.
"""

import threading

from kazoo.exceptions import NoNodeError

import kzsuite
from kzsuite import KazooTestCase, wait_for

DELAY_MS = 5000
TOKEN_PREFIX = "/zookeeper/fencing"


class LockDelayTest(KazooTestCase):

    server_opts = {"extra_cfg": {"zkd.lockDelayMs": str(DELAY_MS)}}

    def test_expired_holder_delays_waiter(self):
        # Holder A is a Kazoo process holding Kazoo's Lock, paused with
        # SIGSTOP until its session expires; B waits with Lock.acquire in
        # a thread. While A's node is a tombstone B is not granted; B's
        # first write as holder is at least DELAY_MS of log time after a
        # write made before A was paused.
        c = self.client()
        lock = self.p("lock")
        holder = self.client_process(self.cluster.hosts, 1.0, "lock:%s:holder" % lock)
        c.sync(lock)
        node_a = [lock + "/" + n for n in c.get_children(lock)][0]
        waiter = self.client()
        lw = waiter.Lock(lock, "waiter")
        granted = threading.Event()
        errors = []

        def acquire():
            try:
                if lw.acquire(timeout=90):
                    granted.set()
            except Exception as e:  # noqa: BLE001 -- reported below
                errors.append(e)
        t = threading.Thread(target=acquire, daemon=True)
        t.start()
        wait_for(lambda: len(c.get_children(lock)) == 2, timeout=20, msg="B queued behind A")
        mark = self.p("mark")
        c.create(mark, b"before")
        _, before = c.get(mark)
        holder.pause()
        try:
            if kzsuite.CONFIG.kind == "zkd":
                # A's token turns NoNode when its node becomes a tombstone.
                wait_for(lambda: self._no_token(c, node_a), timeout=30, msg="A's node to become a tombstone")
                self.assertIsNotNone(c.exists(node_a), "the tombstone is not visible")
                self.assertFalse(granted.is_set(), "B granted while A's tombstone exists")
            t.join(90)
            self.assertEqual(errors, [])
            self.assertTrue(granted.is_set(), "B never got the lock after A's session expired")
            self.assertIsNone(waiter.exists(node_a), "B granted while A's node exists")
            c.create(self.p("granted"), b"")
            # Read back on the session that wrote it: another member may
            # not have applied the create yet (no sync).
            _, after = c.get(self.p("granted"))
            if kzsuite.CONFIG.kind == "zkd":
                self.assertGreaterEqual(after.ctime - before.mtime, DELAY_MS,
                                        "B granted less than the delay (log time) after A's pause")
            lw.release()
        finally:
            holder.resume()

    @staticmethod
    def _no_token(client, node):
        try:
            client.get(TOKEN_PREFIX + node)
            return False
        except NoNodeError:
            return True

    def test_release_not_delayed(self):
        # A release hands over at once: B is granted while A's token was
        # never NoNode with A's node present (no tombstone).
        a, b = self.client(), self.client()
        lock = self.p("lock")
        la, lb = a.Lock(lock, "a"), b.Lock(lock, "b")
        self.assertTrue(la.acquire(timeout=10))
        granted = threading.Event()
        t = threading.Thread(target=lambda: lb.acquire(timeout=60) and granted.set(), daemon=True)
        t.start()
        wait_for(lambda: len(a.get_children(lock)) == 2, timeout=20, msg="B queued behind A")
        node_a = [lock + "/" + n for n in a.get_children(lock) if n.startswith(la.prefix)][0]
        la.release()
        self.assertIsNone(a.exists(node_a))
        t.join(60)
        self.assertTrue(granted.is_set(), "B not granted after A's release")
        lb.release()
