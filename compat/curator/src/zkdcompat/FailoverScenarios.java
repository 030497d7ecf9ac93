package zkdcompat;

import static zkdcompat.LockScenarios.bytes;
import static zkdcompat.LockScenarios.str;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;

/**
 * FailoverScenarios kill -9 the server a recipe's client is connected to in the middle of the
 * recipe, restart it on the same data directory and port, and check that the recipe carried on
 * with its guarantees intact. Each scenario runs on a private cluster.
 */
final class FailoverScenarios {
    private FailoverScenarios() {}

    /** Session timeout of the clients under test: long enough to outlive a restart. */
    static final int SESSION_MS = 10_000;

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("failover_mutex_kill9_restart", 120_000, FailoverScenarios::mutex));
        s.add(new Main.Scenario("failover_leader_latch_kill9_restart", 120_000, FailoverScenarios::leaderLatch));
        s.add(new Main.Scenario("failover_holder_dies_during_outage", 120_000, FailoverScenarios::holderDiesDuringOutage));
        s.add(new Main.Scenario("failover_mutex_contention_repeated_kill9", 150_000, FailoverScenarios::contentionUnderCrashes));
        s.add(new Main.Scenario("failover_client_ahead_of_wiped_server", 90_000, FailoverScenarios::clientAheadOfWipedServer));
    }

    /**
     * crashAndRestart kills the member client is connected to with SIGKILL, waits a moment, starts
     * it again on the same zoo.cfg and waits until it serves; it returns the restarted member.
     */
    static ServerProc crashAndRestart(Cluster cl, CuratorFramework client) throws Exception {
        ServerProc m = cl.memberOf(client.getZookeeperClient().getZooKeeper());
        Check.that(m != null, "cannot tell which member the client uses: %s", client.getZookeeperClient().getZooKeeper());
        m.kill9();
        Check.that(!m.alive(), "member %s survived kill -9", m.addr());
        Thread.sleep(500);
        m.start();
        return m;
    }

    /**
     * A holds a mutex and B waits on it when the server dies; after the restart A still holds it
     * (same session, same lock node), B has not got it, and B gets it only once A releases.
     */
    static void mutex(Ctx c) throws Exception {
        Cluster cl = c.newCluster("crash", Main.members(), new ServerProc.Options());
        String lock = c.path("lock");
        String data = c.path("data");
        CuratorFramework a = c.curator(cl.connectString(), SESSION_MS);
        CuratorFramework b = c.curator(cl.connectString(), SESSION_MS);
        List<ConnectionState> aStates = Collections.synchronizedList(new ArrayList<>());
        a.getConnectionStateListenable().addListener((x, st) -> aStates.add(st));
        a.create().creatingParentsIfNeeded().forPath(data, bytes("before"));
        long aSession = a.getZookeeperClient().getZooKeeper().getSessionId();

        InterProcessMutex ma = new InterProcessMutex(a, lock);
        ma.acquire();
        AtomicBoolean aHolds = new AtomicBoolean(true);
        AtomicInteger overlaps = new AtomicInteger();
        long[] gotAt = {0};
        InterProcessMutex mb = new InterProcessMutex(b, lock);
        Future<Void> waiter = c.go(() -> {
            Check.that(mb.acquire(60, TimeUnit.SECONDS), "waiter never got the lock");
            gotAt[0] = System.nanoTime();
            if (aHolds.get()) {
                overlaps.incrementAndGet();
            }
            try {
                Check.eq(1, b.getChildren().forPath(lock).size(), "lock nodes while the waiter holds");
            } finally {
                mb.release();
            }
        });
        Check.waitFor(10_000, "waiter to enqueue", () -> {
            try {
                return a.getChildren().forPath(lock).size() == 2;
            } catch (Exception e) {
                return false;
            }
        });
        List<String> before = new ArrayList<>(a.getChildren().forPath(lock));
        Collections.sort(before);

        crashAndRestart(cl, a);
        Check.that(a.blockUntilConnected(20, TimeUnit.SECONDS), "holder did not reconnect");
        Check.that(b.blockUntilConnected(20, TimeUnit.SECONDS), "waiter did not reconnect");
        Check.eq(aSession, a.getZookeeperClient().getZooKeeper().getSessionId(), "holder's session after the restart");
        Check.that(!aStates.contains(ConnectionState.LOST), "holder's client saw LOST: %s", aStates);
        List<String> after = new ArrayList<>(a.getChildren().forPath(lock));
        Collections.sort(after);
        Check.eq(before, after, "lock nodes after the restart");
        Check.eq("before", str(a.getData().forPath(data)), "data written before the crash");
        // The holder keeps working under the lock; the waiter must still wait.
        a.setData().forPath(data, bytes("after"));
        Thread.sleep(1500);
        Check.eq(0L, gotAt[0], "time the waiter got the lock while the holder still held it");
        Check.that(ma.isAcquiredInThisProcess(), "holder lost the lock");
        aHolds.set(false);
        ma.release();
        waiter.get(30, TimeUnit.SECONDS);
        Check.eq(0, overlaps.get(), "grants while the holder held the lock");
        Check.eq("after", str(b.getData().forPath(data)), "data written after the restart");
        // Curator made the lock path a container: once empty, the restarted server sweeps it.
        Check.waitFor(10_000, "emptied lock container to be swept after the restart",
                () -> !RecipeScenarios.exists(a, lock));
    }

    /**
     * The server dies while A holds a mutex and B waits; A dies too during the outage (its
     * connection goes silent for good). After the restart the server must still expire A's
     * session, one session timeout after it is back, and B then gets the lock.
     */
    static void holderDiesDuringOutage(Ctx c) throws Exception {
        Cluster cl = c.newCluster("crash", Main.members(), new ServerProc.Options());
        String lock = c.path("lock");
        ServerProc m = cl.members.get(0);
        Proxy proxy = c.proxy(m);
        int aTimeout = 3000;
        CuratorFramework a = c.curator(proxy.addr(), aTimeout, false);
        Check.eq(aTimeout, a.getZookeeperClient().getZooKeeper().getSessionTimeout(), "holder's session timeout");
        CuratorFramework b = c.curator(cl.connectString(), SESSION_MS);
        InterProcessMutex ma = new InterProcessMutex(a, lock);
        ma.acquire();
        InterProcessMutex mb = new InterProcessMutex(b, lock);
        long[] gotAt = {0};
        Future<Void> waiter = c.go(() -> {
            Check.that(mb.acquire(90, TimeUnit.SECONDS), "waiter never got the lock");
            gotAt[0] = System.nanoTime();
            try {
                Check.eq(1, b.getChildren().forPath(lock).size(), "lock nodes while the waiter holds");
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
        proxy.setBlackhole(true);
        proxy.dropAll();
        long silent = System.nanoTime();
        m.kill9();
        Thread.sleep(500);
        m.start();
        // A standalone server restarts every session's clock when it comes back; an ensemble's
        // leader kept counting while one member was down.
        long back = Main.members() == 1 ? System.nanoTime() : silent;
        try {
            waiter.get(40, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            StringBuilder sb = new StringBuilder("waiter still waiting 40 s after the restart; lock nodes "
                    + b.getChildren().forPath(lock) + "; dump of each member:");
            for (ServerProc x : cl.members) {
                sb.append("\n--- ").append(x.addr()).append('\n').append(x.fourLetter("dump"));
            }
            throw new AssertionError(sb.toString());
        }
        long ms = (gotAt[0] - back) / 1_000_000;
        Check.that(ms >= aTimeout / 3, "waiter got the lock %d ms after the restart, before the dead holder's %d ms session could expire", ms, aTimeout);
        Check.that(ms <= aTimeout + 10_000, "dead holder's session expired only %d ms after the restart (timeout %d ms)", ms, aTimeout);
        System.out.printf("  (waiter got the lock %d ms after the restart; dead holder's session %d ms)%n", ms, aTimeout);
    }

    /**
     * Three clients take a mutex in turns and, inside it, bump a counter znode with a
     * version-checked write, while the server is killed with SIGKILL and restarted three times.
     * Exclusion must hold throughout (one holder at a time, no version conflict, no lost bump), and
     * every client must keep making progress after the last restart.
     */
    static void contentionUnderCrashes(Ctx c) throws Exception {
        Cluster cl = c.newCluster("crash", Main.members(), new ServerProc.Options());
        String lock = c.path("lock");
        String counter = c.path("counter");
        int clients = 3;
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            cs.add(c.curator(cl.connectString(), SESSION_MS));
        }
        cs.get(0).create().creatingParentsIfNeeded().forPath(counter, bytes("0"));
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger conflicts = new AtomicInteger();
        AtomicInteger bumps = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger[] progress = new AtomicInteger[clients];
        List<Future<Void>> fs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework cf = cs.get(i);
            AtomicInteger mine = progress[i] = new AtomicInteger();
            fs.add(c.go(() -> {
                InterProcessMutex m = new InterProcessMutex(cf, lock);
                while (!stop.get()) {
                    if (!m.acquire(30, TimeUnit.SECONDS)) {
                        continue;
                    }
                    try {
                        if (holders.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        org.apache.zookeeper.data.Stat st = new org.apache.zookeeper.data.Stat();
                        int v = Integer.parseInt(str(cf.getData().storingStatIn(st).forPath(counter)));
                        try {
                            cf.setData().withVersion(st.getVersion()).forPath(counter, bytes(Integer.toString(v + 1)));
                            bumps.incrementAndGet();
                            mine.incrementAndGet();
                        } catch (org.apache.zookeeper.KeeperException.BadVersionException e) {
                            // Curator retries a setData after a connection loss; if the first attempt
                            // had applied, the retry sees our own bump. Anything else is a conflict.
                            int now = Integer.parseInt(str(cf.getData().forPath(counter)));
                            if (now == v + 1) {
                                bumps.incrementAndGet();
                                mine.incrementAndGet();
                            } else {
                                conflicts.incrementAndGet();
                            }
                        }
                        holders.decrementAndGet();
                    } finally {
                        m.release();
                    }
                    Thread.sleep(5);
                }
            }));
        }
        Check.waitFor(20_000, "some progress before the first crash", () -> bumps.get() >= 10);
        for (int k = 0; k < 3; k++) {
            crashAndRestart(cl, cs.get(k % clients));
            Thread.sleep(1500);
        }
        int[] after = new int[clients];
        for (int i = 0; i < clients; i++) {
            after[i] = progress[i].get();
        }
        Check.waitFor(30_000, "every client to progress after the last restart", () -> {
            for (int i = 0; i < clients; i++) {
                if (progress[i].get() <= after[i]) {
                    return false;
                }
            }
            return true;
        });
        stop.set(true);
        for (Future<Void> f : fs) {
            f.get(60, TimeUnit.SECONDS);
        }
        Check.eq(0, overlaps.get(), "critical sections that overlapped");
        Check.eq(0, conflicts.get(), "version conflicts inside the lock");
        Ctx.sync(cs.get(0), counter); // the last bump may have gone through another client and member
        Check.eq(Integer.toString(bumps.get()), str(cs.get(0).getData().forPath(counter)), "counter after all bumps");
        System.out.printf("  (%d bumps across 3 crashes)%n", bumps.get());
    }

    /**
     * The server loses its disk (kill -9, data wiped, restart). A client that saw later zxids must
     * not be let back in, neither reattached nor expired, while the server is behind it; once new
     * writes carry the server past what the client saw, the client learns its session is gone.
     */
    static void clientAheadOfWipedServer(Ctx c) throws Exception {
        Cluster cl = c.newCluster("wipe", Main.members(), new ServerProc.Options());
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        org.apache.zookeeper.ZooKeeper z = c.zk(cl.connectString(), SESSION_MS, e -> {
            if (e.getType() == org.apache.zookeeper.Watcher.Event.EventType.None) {
                states.add(e.getState().toString());
            }
        });
        for (int i = 0; i < 30; i++) {
            z.create("/n" + i, null, ZkClientScenarios.OPEN, org.apache.zookeeper.CreateMode.PERSISTENT);
        }
        ServerProc m = cl.memberOf(z);
        Check.that(m != null, "cannot tell which member the client uses: %s", z);
        m.kill9();
        m.wipeData();
        m.start();
        org.apache.zookeeper.ZooKeeper fresh = c.zk(m.addr(), SESSION_MS, e -> { });
        if (Main.members() > 1) {
            // An ensemble member that lost its disk catches up from the quorum: nothing is lost and
            // the client keeps its session.
            Check.waitFor(20_000, "wiped member to catch up", () -> {
                try {
                    return fresh.exists("/n29", false) != null;
                } catch (Exception e) {
                    return false;
                }
            });
            Check.waitFor(20_000, () -> "client back on its session, have " + states,
                    () -> states.lastIndexOf("SyncConnected") > Math.max(0, states.indexOf("Disconnected")));
            Check.that(!states.contains("Expired"), "client session expired: %s", states);
            return;
        }
        Check.that(fresh.exists("/n0", false) == null, "wiped server still has /n0");
        Check.waitFor(10_000, "Disconnected", () -> states.contains("Disconnected"));
        Thread.sleep(3000);
        List<String> after = new ArrayList<>(states.subList(states.indexOf("Disconnected"), states.size()));
        Check.that(!after.contains("SyncConnected") && !after.contains("Expired"),
                "client ahead of the server got %s (want it refused until the server catches up)", after);
        for (int i = 0; i < 80; i++) {
            fresh.create("/m" + i, null, ZkClientScenarios.OPEN, org.apache.zookeeper.CreateMode.PERSISTENT);
        }
        Check.waitFor(30_000, () -> "Expired once the server passed the client's zxid, have " + states,
                () -> states.contains("Expired"));
        Check.that(!states.subList(states.indexOf("Disconnected"), states.size()).contains("SyncConnected"),
                "client reattached to a session the wiped server never knew: %s", states);
    }

    /**
     * Two latches; the server dies under the leader's connection and comes back. Leadership never
     * splits, one latch leads again afterwards, both remain participants, and leadership still
     * moves when the leader closes.
     */
    static void leaderLatch(Ctx c) throws Exception {
        Cluster cl = c.newCluster("crash", Main.members(), new ServerProc.Options());
        String path = c.path("latch");
        List<CuratorFramework> cs = new ArrayList<>();
        List<LeaderLatch> ls = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            CuratorFramework cf = c.curator(cl.connectString(), SESSION_MS);
            LeaderLatch l = new LeaderLatch(cf, path, "p" + i);
            l.start();
            cs.add(cf);
            ls.add(l);
        }
        Check.waitFor(10_000, "a leader", () -> RecipeScenarios.leaders(ls).size() == 1);
        AtomicInteger split = new AtomicInteger();
        AtomicBoolean sampling = new AtomicBoolean(true);
        Future<Void> sampler = c.go(() -> {
            while (sampling.get()) {
                if (RecipeScenarios.leaders(ls).size() > 1) {
                    split.incrementAndGet();
                }
                Thread.sleep(2);
            }
        });
        LeaderLatch first = RecipeScenarios.leaders(ls).get(0);
        crashAndRestart(cl, cs.get(ls.indexOf(first)));
        for (CuratorFramework cf : cs) {
            Check.that(cf.blockUntilConnected(20, TimeUnit.SECONDS), "latch client did not reconnect");
        }
        Check.waitFor(20_000, "one leader after the restart", () -> RecipeScenarios.leaders(ls).size() == 1);
        Check.waitFor(10_000, "both latches to be participants again", () -> {
            try {
                for (LeaderLatch l : ls) {
                    if (l.getParticipants().size() != 2) {
                        return false;
                    }
                }
                return true;
            } catch (Exception e) {
                return false;
            }
        });
        Thread.sleep(500);
        LeaderLatch now = RecipeScenarios.leaders(ls).get(0);
        for (LeaderLatch l : ls) {
            Check.eq(now.getId(), l.getLeader().getId(), "leader as " + l.getId() + " sees it");
        }
        now.close();
        LeaderLatch other = ls.get(1 - ls.indexOf(now));
        Check.that(other.await(10, TimeUnit.SECONDS), "leadership did not move after the restart");
        sampling.set(false);
        sampler.get(5, TimeUnit.SECONDS);
        Check.eq(0, split.get(), "samples with two leaders");
        other.close();
    }
}
