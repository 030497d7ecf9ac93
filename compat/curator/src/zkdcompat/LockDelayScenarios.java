package zkdcompat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * LockDelayScenarios runs Curator's stock InterProcessMutex on a cluster whose zoo.cfg sets
 * zkd.lockDelayMs (docs/fencing.md "Lock delay"): an expired holder's node stays as a tombstone for the
 * delay and the waiter is granted only after it goes; a release hands over at once. ZooKeeper ignores
 * the key, so against it only the hand-over is checked.
 */
final class LockDelayScenarios {
    private LockDelayScenarios() {}

    /** DELAY_MS is the zkd.lockDelayMs the scenario's cluster runs with. */
    static final int DELAY_MS = 3000;

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("lock_delay", 120_000, LockDelayScenarios::expiredHolder));
    }

    /**
     * isTombstone reports whether lock node p is a tombstone as a client sees it: the node exists but
     * its fencing token is NoNode (its session expired, so nobody holds it).
     */
    static boolean isTombstone(CuratorFramework cf, String p) throws Exception {
        Ctx.sync(cf, p);
        if (cf.checkExists().forPath(p) == null) {
            return false;
        }
        try {
            cf.getData().forPath(FencingScenarios.KEY_PATH + p);
            return false;
        } catch (KeeperException.NoNodeException e) {
            return true;
        }
    }

    /** Holder is a mutex acquired and later released on one pool thread (InterProcessMutex is per thread). */
    record Holder(CompletableFuture<Boolean> acquired, CountDownLatch release, Future<Void> released) { }

    /**
     * hold acquires m on a pool thread, waiting up to waitSec; acquired completes with the result. The
     * thread then releases m once release is counted down; released finishes after that.
     */
    static Holder hold(Ctx c, InterProcessMutex m, long waitSec) {
        CompletableFuture<Boolean> acquired = new CompletableFuture<>();
        CountDownLatch release = new CountDownLatch(1);
        Future<Void> released = c.go(() -> {
            boolean got;
            try {
                got = m.acquire(waitSec, TimeUnit.SECONDS);
            } catch (Exception e) {
                acquired.completeExceptionally(e);
                throw e;
            }
            acquired.complete(got);
            if (got) {
                release.await();
                m.release();
            }
        });
        return new Holder(acquired, release, released);
    }

    /** waitContenders waits until lock has n children, as read after a sync. */
    static void waitContenders(CuratorFramework cf, String lock, int n, String what) throws InterruptedException {
        Check.waitFor(20_000, what, () -> {
            try {
                Ctx.sync(cf, lock);
                return cf.getChildren().forPath(lock).size() == n;
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** stamp creates a persistent node under base and returns its stat: a write's log time (ctime). */
    static Stat stamp(CuratorFramework cf, String base, String name) throws Exception {
        String p = cf.create().forPath(base + "/" + name, name.getBytes(StandardCharsets.UTF_8));
        return cf.checkExists().forPath(p);
    }

    /**
     * Holder A (behind a Proxy) takes an InterProcessMutex and waiter B queues; A's connection goes
     * silent until its session expires. On zkd A's node stays as a tombstone while B keeps waiting, and
     * B is granted only once the node is gone, with a first write as holder at least DELAY_MS of log time
     * after a write made before A was cut off. B then releases and C, already queued, is granted with
     * no tombstone left behind by B.
     */
    static void expiredHolder(Ctx c) throws Exception {
        boolean zkd = Main.target() == ServerProc.Target.ZKD;
        ServerProc.Options o = new ServerProc.Options();
        o.extra.put("zkd.lockDelayMs", Integer.toString(DELAY_MS));
        Cluster cl = c.newCluster("delay", Main.members(), o);
        CuratorFramework admin = c.curator(cl.connectString(), Ctx.SESSION_MS);
        String base = c.path("");
        String lock = c.path("lock");
        admin.create().creatingParentsIfNeeded().forPath(base);
        if (zkd) {
            Check.waitFor(20_000, "the fencing key", () -> {
                try {
                    return admin.checkExists().forPath(FencingScenarios.KEY_PATH) != null;
                } catch (Exception e) {
                    return false;
                }
            });
        }

        Proxy proxy = c.proxy(cl.members.get(0));
        CuratorFramework a = c.curator(proxy.addr(), 2000, false);
        InterProcessMutex ma = new InterProcessMutex(a, lock);
        Check.that(ma.acquire(20, TimeUnit.SECONDS), "A did not get the free lock");
        String nodeA = FencingScenarios.ownNode(a, lock);
        if (zkd) {
            Check.that(!isTombstone(admin, nodeA), "A's live node %s looks like a tombstone", nodeA);
        }

        CuratorFramework b = c.curator(cl.connectString(), Ctx.SESSION_MS);
        InterProcessMutex mb = new InterProcessMutex(b, lock);
        Holder hb = hold(c, mb, 90);
        CompletableFuture<Boolean> bGot = hb.acquired();
        waitContenders(admin, lock, 2, "B queued behind A");
        // A's expiry entry comes after this write in the log, so its log time is no earlier.
        Stat cut = stamp(admin, base, "cut");
        proxy.setBlackhole(true);

        if (zkd) {
            Check.waitFor(30_000, "A's node " + nodeA + " to become a tombstone", () -> {
                try {
                    return isTombstone(admin, nodeA);
                } catch (Exception e) {
                    return false;
                }
            });
            // B's state is read first and the tombstone after: if B was already granted and the
            // tombstone still stands, B was granted while it existed.
            boolean bDone = bGot.isDone();
            Check.that(!(bDone && isTombstone(admin, nodeA)), "B granted while A's tombstone %s exists", nodeA);
        }
        Check.that(bGot.get(100, TimeUnit.SECONDS), "B never got the lock after A's session expired");
        Ctx.sync(b, lock);
        Check.that(b.checkExists().forPath(nodeA) == null, "B granted while A's node %s exists", nodeA);
        Stat granted = stamp(b, base, "granted-b");
        if (zkd) {
            Check.that(granted.getCtime() >= cut.getCtime() + DELAY_MS,
                    "B wrote as holder at log time %d, less than %d ms after A was cut off (%d)",
                    granted.getCtime(), DELAY_MS, cut.getCtime());
        }

        // A release is a delete: C, queued behind B, is granted with no tombstone in between.
        String nodeB = FencingScenarios.ownNode(b, lock);
        CuratorFramework cc = c.curator(cl.connectString(), Ctx.SESSION_MS);
        InterProcessMutex mc = new InterProcessMutex(cc, lock);
        Holder hc = hold(c, mc, 60);
        waitContenders(admin, lock, 2, "C queued behind B");
        hb.release().countDown();
        hb.released().get(20, TimeUnit.SECONDS);
        Ctx.sync(admin, lock);
        Check.that(admin.checkExists().forPath(nodeB) == null, "B's node %s still there after release", nodeB);
        Check.that(hc.acquired().get(60, TimeUnit.SECONDS), "C never got the lock after B released");
        Ctx.sync(cc, lock);
        Check.eq(List.of(FencingScenarios.ownNode(cc, lock).substring(lock.length() + 1)),
                cc.getChildren().forPath(lock), "lock children while C holds it");
        hc.release().countDown();
        hc.released().get(20, TimeUnit.SECONDS);
        proxy.setBlackhole(false);
    }
}
