package zkdcompat;

import static zkdcompat.LockScenarios.bytes;
import static zkdcompat.LockScenarios.str;
import static zkdcompat.ZkClientScenarios.create;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/**
 * WatchScenarios checks that watches survive a lost connection: the client re-sends them
 * (setWatches/setWatches2) and the server fires what it missed or re-arms the rest.
 */
final class WatchScenarios {
    private WatchScenarios() {}

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("zk_watches_across_reconnect", 60_000, WatchScenarios::acrossReconnect));
        s.add(new Main.Scenario("zk_watch_read_write_race", 60_000, WatchScenarios::readWriteRace));
        s.add(new Main.Scenario("zk_event_before_new_data", 60_000, WatchScenarios::eventBeforeNewData));
        s.add(new Main.Scenario("failover_curator_cache_kill9_restart", 120_000, WatchScenarios::cacheFailover));
    }

    /** sortedCopy returns a sorted copy of a synchronized list. */
    static List<String> sortedCopy(List<String> l) {
        List<String> out;
        synchronized (l) {
            out = new ArrayList<>(l);
        }
        Collections.sort(out);
        return out;
    }

    /**
     * While a client is cut off, another changes every watched node; on reconnect (same session)
     * the one-shot watches fire for what changed (data change, creation, deletion, children) and the
     * rest stay armed; persistent watches are re-armed without replaying missed changes.
     */
    static void acrossReconnect(Ctx c) throws Exception {
        String b = c.path("");
        ZooKeeper other = c.zk();
        create(other, b, null, CreateMode.PERSISTENT);
        for (String p : List.of("/a", "/c", "/d", "/same", "/p", "/r")) {
            create(other, b + p, "0", CreateMode.PERSISTENT);
        }
        Proxy proxy = c.proxy(c.cluster.members.get(0));
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        ZooKeeper z = c.zk(proxy.addr(), Ctx.SESSION_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState().toString());
            }
        });
        long sid = z.getSessionId();
        ZkClientScenarios.Recorder once = new ZkClientScenarios.Recorder();
        ZkClientScenarios.Recorder pers = new ZkClientScenarios.Recorder();
        ZkClientScenarios.Recorder rec = new ZkClientScenarios.Recorder();
        Ctx.sync(z, b); // other's creates may not have reached member 0 yet
        z.getData(b + "/a", once, null);
        Check.that(z.exists(b + "/b", once) == null, "/b exists already");
        z.getChildren(b + "/c", once);
        z.exists(b + "/d", once);
        z.getData(b + "/same", once, null);
        z.addWatch(b + "/p", pers, AddWatchMode.PERSISTENT);
        z.addWatch(b + "/r", rec, AddWatchMode.PERSISTENT_RECURSIVE);

        proxy.setBlackhole(true);
        proxy.dropAll();
        Check.waitFor(10_000, "client to see Disconnected", () -> states.contains("Disconnected"));
        other.setData(b + "/a", bytes("1"), -1);
        create(other, b + "/b", null, CreateMode.PERSISTENT);
        create(other, b + "/c/x", null, CreateMode.PERSISTENT);
        other.delete(b + "/d", -1);
        other.setData(b + "/p", bytes("1"), -1);
        create(other, b + "/r/k", null, CreateMode.PERSISTENT);
        Thread.sleep(200);
        Check.eq(List.of(), sortedCopy(once.events), "events while cut off");
        proxy.setBlackhole(false);
        Check.waitFor(15_000, "client to reconnect", () -> states.lastIndexOf("SyncConnected") > states.indexOf("Disconnected"));
        Check.eq(sid, z.getSessionId(), "session after reconnect");

        List<String> want = new ArrayList<>(List.of(
                "NodeDataChanged " + b + "/a",
                "NodeCreated " + b + "/b",
                "NodeChildrenChanged " + b + "/c",
                "NodeDeleted " + b + "/d"));
        Collections.sort(want);
        once.await(want.size());
        Check.eq(want, sortedCopy(once.events), "one-shot watch events delivered on reconnect");
        Check.eq(List.of(), sortedCopy(pers.events), "persistent watch events for changes missed while cut off");
        Check.eq(List.of(), sortedCopy(rec.events), "recursive watch events for changes missed while cut off");

        // The untouched watch is still armed; fired ones are gone; persistent ones are back.
        other.setData(b + "/same", bytes("1"), -1);
        other.setData(b + "/a", bytes("2"), -1);
        other.setData(b + "/p", bytes("2"), -1);
        create(other, b + "/r/k2", null, CreateMode.PERSISTENT);
        want.add("NodeDataChanged " + b + "/same");
        Collections.sort(want);
        once.await(want.size());
        Check.eq(want, sortedCopy(once.events), "one-shot events after reconnect");
        Check.eq(List.of("NodeDataChanged " + b + "/p"), pers.await(1), "persistent watch after reconnect");
        Check.eq(List.of("NodeCreated " + b + "/r/k2"), rec.await(1), "recursive watch after reconnect");
    }

    /**
     * One client reads with a watch while another writes the same node at the same moment, many
     * times over. Whatever the order the server picks, a read that missed the write must be followed
     * by exactly one event for it, and a read that saw it must get no event: reading and arming a
     * watch are one step against writes, as in ZooKeeper.
     */
    static void readWriteRace(Ctx c) throws Exception {
        String b = c.path("");
        // Both on one member: in an ensemble another member may not have applied the setup yet.
        String one = c.cluster.members.get(0).addr();
        ZooKeeper writer = c.zk(one, Ctx.SESSION_MS, e -> { });
        ZooKeeper reader = c.zk(one, Ctx.SESSION_MS, e -> { });
        create(writer, b, null, CreateMode.PERSISTENT);
        int rounds = 150;
        int missedChild = 0;
        int missedData = 0;
        List<ZkClientScenarios.Recorder> sawWrite = new ArrayList<>();
        List<ZkClientScenarios.Recorder> missedWrite = new ArrayList<>();
        List<String> missedWhat = new ArrayList<>();
        for (int i = 1; i <= rounds; i++) {
            ZkClientScenarios.Recorder rc = new ZkClientScenarios.Recorder();
            ZkClientScenarios.Recorder rd = new ZkClientScenarios.Recorder();
            // Fresh nodes each round, so that no earlier watch sees this round's writes.
            String p = b + "/r" + i;
            create(writer, p, null, CreateMode.PERSISTENT);
            create(writer, p + "/d", "0", CreateMode.PERSISTENT);
            String kid = "k" + i;
            String val = Integer.toString(i);
            CountDownLatch go = new CountDownLatch(1);
            // Delay the reader on even rounds and the writer on odd ones, by varying amounts.
            long readDelay = i % 2 == 0 ? (i % 16) * 60_000L : 0;
            long writeDelay = i % 2 == 1 ? (i % 16) * 60_000L : 0;
            Future<List<String>> kids = c.go1(() -> {
                go.await();
                spin(readDelay);
                return reader.getChildren(p, rc);
            });
            Future<String> data = c.go1(() -> {
                go.await();
                spin(readDelay);
                return str(reader.getData(p + "/d", rd, null));
            });
            Future<Void> w = c.go(() -> {
                go.await();
                spin(writeDelay);
                create(writer, p + "/" + kid, null, CreateMode.PERSISTENT);
                writer.setData(p + "/d", bytes(val), -1);
            });
            go.countDown();
            List<String> seen = kids.get(10, TimeUnit.SECONDS);
            String d = data.get(10, TimeUnit.SECONDS);
            w.get(10, TimeUnit.SECONDS);
            if (seen.contains(kid)) {
                sawWrite.add(rc);
            } else {
                missedChild++;
                missedWrite.add(rc);
                missedWhat.add("NodeChildrenChanged " + p);
                Check.eq(List.of("NodeChildrenChanged " + p), rc.await(1, 0), "round " + i + ": child events after a read that missed " + kid);
            }
            if (d.equals(val)) {
                sawWrite.add(rd);
            } else {
                missedData++;
                missedWrite.add(rd);
                missedWhat.add("NodeDataChanged " + p + "/d");
                Check.eq(List.of("NodeDataChanged " + p + "/d"), rd.await(1, 0), "round " + i + ": data events after a read that missed " + val);
            }
        }
        // No watch may fire twice, and a read that saw the write must get no event for it.
        Thread.sleep(500);
        for (int i = 0; i < missedWrite.size(); i++) {
            Check.eq(List.of(missedWhat.get(i)), sortedCopy(missedWrite.get(i).events), "events of a watch armed before the write");
        }
        for (ZkClientScenarios.Recorder r : sawWrite) {
            Check.eq(List.of(), sortedCopy(r.events), "events of a watch armed after the write");
        }
        System.out.printf("  (%d of %d child reads and %d data reads raced ahead of the write)%n", missedChild, rounds, missedData);
    }

    /** spin busy-waits ns nanoseconds (finer than Thread.sleep). */
    static void spin(long ns) {
        long until = System.nanoTime() + ns;
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }

    /**
     * ZooKeeper's ordering guarantee: a client sees the watch event for a change before any reply
     * that shows the changed data. The client keeps pipelined async reads in flight while another
     * client writes the watched node; the Java client runs watchers and callbacks on one thread in
     * arrival order, so a callback that sees the new version before the watcher ran is a violation.
     */
    static void eventBeforeNewData(Ctx c) throws Exception {
        String b = c.path("");
        // Both on one member: in an ensemble another member may not have applied the setup yet.
        String one = c.cluster.members.get(0).addr();
        ZooKeeper writer = c.zk(one, Ctx.SESSION_MS, e -> { });
        ZooKeeper reader = c.zk(one, Ctx.SESSION_MS, e -> { });
        create(writer, b, null, CreateMode.PERSISTENT);
        // Rounds until a violation shows or 8 s have passed.
        long deadline = System.nanoTime() + 8_000_000_000L;
        int rounds = 0;
        java.util.concurrent.atomic.AtomicInteger violations = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger sawNew = new java.util.concurrent.atomic.AtomicInteger();
        List<String> first = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; System.nanoTime() < deadline && violations.get() == 0; i++) {
            rounds++;
            String p = b + "/n" + i;
            create(writer, p, "0", CreateMode.PERSISTENT);
            java.util.concurrent.atomic.AtomicBoolean fired = new java.util.concurrent.atomic.AtomicBoolean();
            reader.getData(p, e -> fired.set(true), null);
            int reads = 30;
            CountDownLatch done = new CountDownLatch(reads);
            long spinNs = (i % 8) * 150_000L; // land the write at varying points of the burst
            Future<Void> w = c.go(() -> {
                spin(spinNs);
                writer.setData(p, bytes("1"), -1);
            });
            for (int k = 0; k < reads; k++) {
                reader.getData(p, false, (rc, path, ctx, data, stat) -> {
                    if (rc == 0 && stat.getVersion() == 1) {
                        sawNew.incrementAndGet();
                        if (!fired.get()) {
                            violations.incrementAndGet();
                            first.add(path);
                        }
                    }
                    done.countDown();
                }, null);
            }
            w.get(10, TimeUnit.SECONDS);
            Check.that(done.await(10, TimeUnit.SECONDS), "reads did not complete");
            // One more read after the write is certain to see it.
            reader.getData(p, false, (rc, path, ctx, data, stat) -> {
                sawNew.incrementAndGet();
                if (!fired.get()) {
                    violations.incrementAndGet();
                    first.add(path);
                }
            }, null);
            reader.sync(p, (rc, path, ctx) -> { }, null);
            Check.waitFor(5_000, "watch on " + p + " to fire", fired::get);
        }
        Check.that(violations.get() == 0, "%d of %d replies showed new data before the watch event for it (first at %s, round %d)",
                violations.get(), sawNew.get(), first.isEmpty() ? "-" : first.get(0), rounds);
    }

    /**
     * A CuratorCache (a persistent recursive watch underneath) keeps following changes after the
     * server is killed with SIGKILL and restarted: the client re-registers the watch on the new process.
     */
    static void cacheFailover(Ctx c) throws Exception {
        Cluster cl = c.newCluster("crash", Main.members(), new ServerProc.Options());
        String base = c.path("tree");
        CuratorFramework w = c.curator(cl.connectString(), FailoverScenarios.SESSION_MS);
        CuratorFramework r = c.curator(cl.connectString(), FailoverScenarios.SESSION_MS);
        w.create().creatingParentsIfNeeded().forPath(base + "/a", bytes("1"));
        Ctx.sync(r, base); // the cache's initial load reads w's /a, perhaps through another member
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch init = new CountDownLatch(1);
        CuratorCache cache = CuratorCache.build(r, base);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(n -> events.add("create " + n.getPath()))
                .forChanges((o, n) -> events.add("change " + n.getPath() + " " + str(n.getData())))
                .forDeletes(o -> events.add("delete " + o.getPath()))
                .forInitialized(init::countDown)
                .build());
        cache.start();
        try {
            Check.that(init.await(10, TimeUnit.SECONDS), "cache never initialized");
            w.setData().forPath(base + "/a", bytes("2"));
            Check.waitFor(5_000, "change before the crash", () -> events.contains("change " + base + "/a 2"));
            FailoverScenarios.crashAndRestart(cl, r);
            Check.that(r.blockUntilConnected(20, TimeUnit.SECONDS), "cache client did not reconnect");
            Check.that(w.blockUntilConnected(20, TimeUnit.SECONDS), "writer did not reconnect");
            w.create().forPath(base + "/b", bytes("x"));
            // A node deleted before Curator re-reads it is never reported; wait for the create.
            Check.waitFor(10_000, () -> "create of /b after the restart, have " + events,
                    () -> events.contains("create " + base + "/b"));
            w.setData().forPath(base + "/a", bytes("3"));
            w.delete().forPath(base + "/b");
            Check.waitFor(10_000, () -> "cache events after the restart, have " + events, () ->
                    events.contains("create " + base + "/b")
                            && events.contains("change " + base + "/a 3")
                            && events.contains("delete " + base + "/b"));
            Check.eq("3", str(cache.get(base + "/a").get().getData()), "cached /a after the restart");
            Check.that(cache.get(base + "/b").isEmpty(), "cache still has the deleted /b");
        } finally {
            cache.close();
        }
    }
}
