package zkdcompat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;

/** LockScenarios checks Curator's lock recipes: mutexes, semaphores, read-write and multi locks. */
final class LockScenarios {
    private LockScenarios() {}

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("mutex_exclusion", 90_000, LockScenarios::mutexExclusion));
        s.add(new Main.Scenario("mutex_fifo", 60_000, LockScenarios::mutexFifo));
        s.add(new Main.Scenario("mutex_reentrant", 30_000, LockScenarios::mutexReentrant));
        s.add(new Main.Scenario("mutex_acquire_timeout", 30_000, LockScenarios::mutexTimeout));
        s.add(new Main.Scenario("mutex_release_on_session_loss", 60_000, LockScenarios::mutexSessionLoss));
        s.add(new Main.Scenario("mutex_revocation", 30_000, LockScenarios::mutexRevocation));
        s.add(new Main.Scenario("semaphore_v2", 60_000, LockScenarios::semaphoreV2));
        s.add(new Main.Scenario("read_write_lock", 30_000, LockScenarios::readWriteLock));
        s.add(new Main.Scenario("semaphore_mutex", 30_000, LockScenarios::semaphoreMutex));
        s.add(new Main.Scenario("multi_lock", 30_000, LockScenarios::multiLock));
    }

    /** bytes encodes s as UTF-8. */
    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** str decodes b as UTF-8. */
    static String str(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    /**
     * Four clients, two threads each, take one lock path in turns; inside, each does a non-atomic
     * read-modify-write of a znode counter and of an in-memory counter. Any overlap shows up as a
     * second holder or a lost update.
     */
    static void mutexExclusion(Ctx c) throws Exception {
        String lock = c.path("lock");
        String counter = c.path("counter");
        int clients = 4;
        int threads = 2;
        int rounds = 10;
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            cs.add(c.curator());
        }
        cs.get(0).create().creatingParentsIfNeeded().forPath(counter, bytes("0"));
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger maxHolders = new AtomicInteger();
        int[] memCounter = {0};
        List<Future<Void>> fs = new ArrayList<>();
        for (CuratorFramework cf : cs) {
            for (int t = 0; t < threads; t++) {
                InterProcessMutex m = new InterProcessMutex(cf, lock);
                fs.add(c.go(() -> {
                    for (int r = 0; r < rounds; r++) {
                        m.acquire();
                        try {
                            int h = holders.incrementAndGet();
                            maxHolders.accumulateAndGet(h, Math::max);
                            int v = Integer.parseInt(str(cf.getData().forPath(counter)));
                            int mem = memCounter[0];
                            Thread.sleep(1);
                            cf.setData().forPath(counter, bytes(Integer.toString(v + 1)));
                            memCounter[0] = mem + 1;
                            holders.decrementAndGet();
                        } finally {
                            m.release();
                        }
                    }
                }));
            }
        }
        for (Future<Void> f : fs) {
            f.get(80, TimeUnit.SECONDS);
        }
        int want = clients * threads * rounds;
        Ctx.sync(cs.get(0), lock); // the last release may have gone through another member
        Check.eq(1, maxHolders.get(), "most simultaneous holders");
        Check.eq(Integer.toString(want), str(cs.get(0).getData().forPath(counter)), "znode counter after all rounds");
        Check.eq(want, memCounter[0], "in-memory counter after all rounds");
        List<String> left = new ArrayList<>();
        try {
            left.addAll(cs.get(0).getChildren().forPath(lock));
        } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
            // Curator made the lock path a container; once empty the server may have swept it already.
        }
        Check.eq(List.of(), left, "lock nodes left after all releases");
    }

    /** Waiters queued one after another are granted the lock in the order they asked. */
    static void mutexFifo(Ctx c) throws Exception {
        String lock = c.path("lock");
        CuratorFramework holderClient = c.curator();
        InterProcessMutex holder = new InterProcessMutex(holderClient, lock);
        holder.acquire();
        int waiters = 5;
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Future<Void>> fs = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            int id = i;
            InterProcessMutex m = new InterProcessMutex(c.curator(), lock);
            fs.add(c.go(() -> {
                m.acquire();
                try {
                    order.add(id);
                    Thread.sleep(20);
                } finally {
                    m.release();
                }
            }));
            int want = i + 2;
            Check.waitFor(10_000, "waiter " + i + " to enqueue", () -> {
                try {
                    return holderClient.getChildren().forPath(lock).size() == want;
                } catch (Exception e) {
                    return false;
                }
            });
        }
        Check.eq(0, order.size(), "grants while the first holder still holds");
        Check.eq(waiters + 1, holder.getParticipantNodes().size(), "participants");
        holder.release();
        for (Future<Void> f : fs) {
            f.get(20, TimeUnit.SECONDS);
        }
        Check.eq(List.of(0, 1, 2, 3, 4), order, "grant order");
    }

    /** A holder may take the lock again in the same thread; it stays held until every acquire is released. */
    static void mutexReentrant(Ctx c) throws Exception {
        String lock = c.path("lock");
        CuratorFramework a = c.curator();
        InterProcessMutex ma = new InterProcessMutex(a, lock);
        InterProcessMutex mb = new InterProcessMutex(c.curator(), lock);
        ma.acquire();
        Check.that(ma.acquire(1, TimeUnit.SECONDS), "re-acquire by the holder thread failed");
        Check.eq(1, a.getChildren().forPath(lock).size(), "lock nodes after a re-entrant acquire");
        ma.release();
        Check.that(ma.isAcquiredInThisProcess(), "lock lost after one of two releases");
        Check.that(!mb.acquire(300, TimeUnit.MILLISECONDS), "other client got a lock still held once");
        ma.release();
        Check.that(!ma.isAcquiredInThisProcess(), "lock still held after both releases");
        Check.that(mb.acquire(5, TimeUnit.SECONDS), "other client did not get the released lock");
        mb.release();
    }

    /** An acquire with a time limit gives up on time and removes its own lock node. */
    static void mutexTimeout(Ctx c) throws Exception {
        String lock = c.path("lock");
        CuratorFramework a = c.curator();
        InterProcessMutex ma = new InterProcessMutex(a, lock);
        InterProcessMutex mb = new InterProcessMutex(c.curator(), lock);
        ma.acquire();
        long t0 = System.nanoTime();
        Check.that(!mb.acquire(500, TimeUnit.MILLISECONDS), "acquire succeeded while another client holds the lock");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        Check.that(ms >= 450, "timed acquire gave up after %d ms, before its 500 ms", ms);
        Check.that(ms < 5000, "timed acquire took %d ms to give up", ms);
        Ctx.sync(a, lock); // b's timed-out attempt deleted its node, perhaps through another member
        Check.eq(1, a.getChildren().forPath(lock).size(), "lock nodes after the timed-out acquire");
        ma.release();
        Check.that(mb.acquire(5, TimeUnit.SECONDS), "acquire after release");
        mb.release();
    }

    /**
     * A holder whose connection goes silent loses the lock when the server expires its session, not
     * before; the waiter then gets it and the holder's client sees LOST.
     */
    static void mutexSessionLoss(Ctx c) throws Exception {
        String lock = c.path("lock");
        ServerProc member = c.cluster.members.get(0);
        Proxy proxy = c.proxy(member);
        CuratorFramework a = c.curator(proxy.addr(), 2000, false);
        List<ConnectionState> states = Collections.synchronizedList(new ArrayList<>());
        a.getConnectionStateListenable().addListener((cl, st) -> states.add(st));
        int timeout = a.getZookeeperClient().getZooKeeper().getSessionTimeout();
        Check.eq(2000, timeout, "negotiated session timeout");
        InterProcessMutex ma = new InterProcessMutex(a, lock);
        ma.acquire();
        CuratorFramework b = c.curator();
        InterProcessMutex mb = new InterProcessMutex(b, lock);
        long[] gotAt = {0};
        Future<Void> waiter = c.go(() -> {
            Check.that(mb.acquire(30, TimeUnit.SECONDS), "waiter never got the lock");
            gotAt[0] = System.nanoTime();
            try {
                Check.eq(1, b.getChildren().forPath(lock).size(), "lock nodes once the holder's session expired");
            } finally {
                mb.release();
            }
        });
        Check.waitFor(10_000, "waiter to enqueue", () -> {
            try {
                return b.getChildren().forPath(lock).size() == 2;
            } catch (Exception e) {
                return false;
            }
        });
        Thread.sleep(300);
        long t0 = System.nanoTime();
        proxy.setBlackhole(true);
        waiter.get(30, TimeUnit.SECONDS);
        long ms = (gotAt[0] - t0) / 1_000_000;
        Check.that(ms >= timeout / 2, "waiter got the lock %d ms after the holder went silent, before its %d ms session could expire", ms, timeout);
        Check.that(ms <= timeout + 5000, "waiter got the lock only %d ms after the holder went silent (session %d ms)", ms, timeout);
        Check.waitFor(15_000, "holder's client to see LOST", () -> states.contains(ConnectionState.LOST));
        proxy.setBlackhole(false);
    }

    /** A revocable holder hears a revocation request (a setData on its lock node) and gives the lock up. */
    static void mutexRevocation(Ctx c) throws Exception {
        String lock = c.path("lock");
        CuratorFramework a = c.curator();
        CuratorFramework b = c.curator();
        InterProcessMutex ma = new InterProcessMutex(a, lock);
        CountDownLatch asked = new CountDownLatch(1);
        ma.makeRevocable(m -> asked.countDown());
        ma.acquire();
        InterProcessMutex mb = new InterProcessMutex(b, lock);
        Check.that(!mb.acquire(300, TimeUnit.MILLISECONDS), "lock free while held");
        Ctx.sync(a, lock); // b's timed-out attempt deleted its node, perhaps through another member
        Collection<String> nodes = ma.getParticipantNodes();
        Check.eq(1, nodes.size(), "participants");
        String holderNode = nodes.iterator().next();
        Check.that(holderNode.startsWith(lock + "/"), "participant %s is not a full path under %s", holderNode, lock);
        org.apache.curator.framework.recipes.locks.Revoker.attemptRevoke(b, holderNode);
        Check.that(asked.await(10, TimeUnit.SECONDS), "holder never heard the revocation request");
        ma.release();
        Check.that(mb.acquire(10, TimeUnit.SECONDS), "lock not free after the revoked holder released");
        mb.release();
    }

    /** A semaphore with three leases never grants more than three at once and does grant three. */
    static void semaphoreV2(Ctx c) throws Exception {
        String path = c.path("sem");
        int max = 3;
        AtomicInteger inUse = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        CountDownLatch allIn = new CountDownLatch(max);
        List<Future<Void>> fs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            CuratorFramework cf = c.curator();
            for (int t = 0; t < 2; t++) {
                InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(cf, path, max);
                fs.add(c.go(() -> {
                    for (int r = 0; r < 4; r++) {
                        Lease l = sem.acquire();
                        try {
                            int n = inUse.incrementAndGet();
                            peak.accumulateAndGet(n, Math::max);
                            allIn.countDown();
                            Thread.sleep(30);
                            inUse.decrementAndGet();
                        } finally {
                            sem.returnLease(l);
                        }
                    }
                }));
            }
        }
        for (Future<Void> f : fs) {
            f.get(50, TimeUnit.SECONDS);
        }
        Check.that(peak.get() <= max, "%d leases held at once, max %d", peak.get(), max);
        Check.that(peak.get() >= 2, "leases never overlapped (peak %d): the semaphore serialised", peak.get());

        CuratorFramework c1 = c.curator();
        InterProcessSemaphoreV2 s1 = new InterProcessSemaphoreV2(c1, path, max);
        InterProcessSemaphoreV2 s2 = new InterProcessSemaphoreV2(c.curator(), path, max);
        Collection<Lease> three = s1.acquire(max, 5, TimeUnit.SECONDS);
        Check.that(three != null && three.size() == max, "could not take all %d leases", max);
        Check.that(s2.acquire(300, TimeUnit.MILLISECONDS) == null, "a fourth lease was granted");
        Ctx.sync(c1, path); // s2's timed-out attempt deleted its lease node, perhaps through another member
        Check.eq(max, s1.getParticipantNodes().size(), "lease nodes");
        Lease one = three.iterator().next();
        s1.returnLease(one);
        Lease l = s2.acquire(5, TimeUnit.SECONDS);
        Check.that(l != null, "no lease after one was returned");
        s2.returnLease(l);
        for (Lease x : three) {
            if (x != one) {
                s1.returnLease(x);
            }
        }
    }

    /** Readers share, a writer excludes readers and writers, and a writer may downgrade to a read lock. */
    static void readWriteLock(Ctx c) throws Exception {
        String path = c.path("rw");
        InterProcessReadWriteLock rw1 = new InterProcessReadWriteLock(c.curator(), path);
        InterProcessReadWriteLock rw2 = new InterProcessReadWriteLock(c.curator(), path);
        InterProcessReadWriteLock rw3 = new InterProcessReadWriteLock(c.curator(), path);
        rw1.readLock().acquire();
        Check.that(rw2.readLock().acquire(5, TimeUnit.SECONDS), "second reader blocked by a reader");
        Check.that(!rw3.writeLock().acquire(300, TimeUnit.MILLISECONDS), "writer got the lock while readers hold it");
        rw1.readLock().release();
        Check.that(!rw3.writeLock().acquire(300, TimeUnit.MILLISECONDS), "writer got the lock while one reader holds it");
        rw2.readLock().release();
        Check.that(rw3.writeLock().acquire(5, TimeUnit.SECONDS), "writer blocked with no readers");
        Check.that(!rw1.readLock().acquire(300, TimeUnit.MILLISECONDS), "reader got the lock while a writer holds it");
        Check.that(!rw2.writeLock().acquire(300, TimeUnit.MILLISECONDS), "second writer got the lock");
        Check.that(rw3.readLock().acquire(5, TimeUnit.SECONDS), "writer could not downgrade to a read lock");
        rw3.writeLock().release();
        Check.that(!rw2.writeLock().acquire(300, TimeUnit.MILLISECONDS), "writer got the lock while the downgraded reader holds it");
        Check.that(rw1.readLock().acquire(5, TimeUnit.SECONDS), "reader blocked by a downgraded reader");
        rw1.readLock().release();
        rw3.readLock().release();
        Check.that(rw2.writeLock().acquire(5, TimeUnit.SECONDS), "writer blocked after every lock was released");
        rw2.writeLock().release();
    }

    /** InterProcessSemaphoreMutex excludes other clients and is not re-entrant. */
    static void semaphoreMutex(Ctx c) throws Exception {
        String path = c.path("sm");
        InterProcessSemaphoreMutex m1 = new InterProcessSemaphoreMutex(c.curator(), path);
        InterProcessSemaphoreMutex m2 = new InterProcessSemaphoreMutex(c.curator(), path);
        m1.acquire();
        Check.that(m1.isAcquiredInThisProcess(), "holder does not know it holds");
        Check.that(!m1.acquire(300, TimeUnit.MILLISECONDS), "semaphore mutex was re-entrant");
        Check.that(!m2.acquire(300, TimeUnit.MILLISECONDS), "other client got a held semaphore mutex");
        m1.release();
        Check.that(m2.acquire(5, TimeUnit.SECONDS), "other client could not get the released mutex");
        Check.that(!m1.acquire(300, TimeUnit.MILLISECONDS), "first client got it back while held");
        m2.release();
    }

    /** A multi-lock takes all of its locks or none, and holds all of them while acquired. */
    static void multiLock(Ctx c) throws Exception {
        String l1 = c.path("l1");
        String l2 = c.path("l2");
        CuratorFramework a = c.curator();
        CuratorFramework b = c.curator();
        CuratorFramework d = c.curator();
        InterProcessMultiLock multi = new InterProcessMultiLock(a, List.of(l1, l2));
        InterProcessMutex b2 = new InterProcessMutex(b, l2);
        InterProcessMutex d1 = new InterProcessMutex(d, l1);
        b2.acquire();
        Check.that(!multi.acquire(500, TimeUnit.MILLISECONDS), "multi-lock acquired while one of its locks is held");
        Check.that(d1.acquire(2, TimeUnit.SECONDS), "failed multi-lock kept its first lock");
        d1.release();
        b2.release();
        Check.that(multi.acquire(5, TimeUnit.SECONDS), "multi-lock blocked with both locks free");
        Check.that(!d1.acquire(300, TimeUnit.MILLISECONDS), "first lock free while the multi-lock holds");
        Check.that(!b2.acquire(300, TimeUnit.MILLISECONDS), "second lock free while the multi-lock holds");
        multi.release();
        Check.that(d1.acquire(5, TimeUnit.SECONDS), "first lock held after multi-lock release");
        Check.that(b2.acquire(5, TimeUnit.SECONDS), "second lock held after multi-lock release");
        d1.release();
        b2.release();
    }
}
