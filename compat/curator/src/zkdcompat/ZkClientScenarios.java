package zkdcompat;

import static zkdcompat.LockScenarios.bytes;
import static zkdcompat.LockScenarios.str;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.api.transaction.OperationType;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Stat;

/** ZkClientScenarios drives the plain ZooKeeper 3.8 Java client: multi, TTL, containers, persistent watches, newer reads. */
final class ZkClientScenarios {
    private ZkClientScenarios() {}

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("zk_multi", 30_000, ZkClientScenarios::multi));
        s.add(new Main.Scenario("zk_multi_read", 30_000, ZkClientScenarios::multiRead));
        s.add(new Main.Scenario("curator_transaction", 30_000, ZkClientScenarios::curatorTransaction));
        s.add(new Main.Scenario("zk_ttl_nodes", 60_000, ZkClientScenarios::ttl));
        s.add(new Main.Scenario("zk_ttl_needs_extended_types", 90_000, ZkClientScenarios::ttlDisabled));
        s.add(new Main.Scenario("zk_container_nodes", 60_000, ZkClientScenarios::containers));
        s.add(new Main.Scenario("zk_add_watch_persistent", 30_000, ZkClientScenarios::persistentWatch));
        s.add(new Main.Scenario("zk_add_watch_recursive", 30_000, ZkClientScenarios::recursiveWatch));
        s.add(new Main.Scenario("zk_get_ephemerals", 30_000, ZkClientScenarios::getEphemerals));
        s.add(new Main.Scenario("zk_get_all_children_number", 30_000, ZkClientScenarios::allChildrenNumber));
        s.add(new Main.Scenario("zk_who_am_i", 30_000, ZkClientScenarios::whoAmI));
        s.add(new Main.Scenario("zk_system_nodes_and_config", 30_000, ZkClientScenarios::systemNodes));
    }

    /** OPEN is world:anyone with every permission. */
    static final List<org.apache.zookeeper.data.ACL> OPEN = ZooDefs.Ids.OPEN_ACL_UNSAFE;

    /** create creates path with data (null for none) and mode under OPEN, returning the created path. */
    static String create(ZooKeeper z, String path, String data, CreateMode mode) throws Exception {
        return z.create(path, data == null ? null : bytes(data), OPEN, mode);
    }

    /** errs maps multi results to their error codes (0 for a success). */
    static List<Integer> errs(List<OpResult> rs) {
        List<Integer> out = new ArrayList<>();
        for (OpResult r : rs) {
            out.add(r instanceof OpResult.ErrorResult e ? e.getErr() : 0);
        }
        return out;
    }

    /** A multi applies all of its ops under one zxid, or none of them, with per-op error results. */
    static void multi(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String b = c.path("");
        create(z, b, "", CreateMode.PERSISTENT);
        List<OpResult> rs = z.multi(List.of(
                Op.create(b + "/a", bytes("1"), OPEN, CreateMode.PERSISTENT),
                Op.create(b + "/s-", null, OPEN, CreateMode.PERSISTENT_SEQUENTIAL),
                Op.setData(b + "/a", bytes("2"), 0),
                Op.check(b + "/a", 1),
                Op.delete(b + "/s-0000000001", 0)));
        Check.eq(5, rs.size(), "results");
        Check.that(rs.get(0) instanceof OpResult.CreateResult, "result 0 is %s", rs.get(0));
        Check.eq(b + "/a", ((OpResult.CreateResult) rs.get(0)).getPath(), "created path");
        Check.eq(b + "/s-0000000001", ((OpResult.CreateResult) rs.get(1)).getPath(), "sequential path inside a multi");
        Check.that(rs.get(2) instanceof OpResult.SetDataResult, "result 2 is %s", rs.get(2));
        Stat st = ((OpResult.SetDataResult) rs.get(2)).getStat();
        Check.eq(1, st.getVersion(), "version after setData in the multi");
        Check.eq(st.getCzxid(), st.getMzxid(), "create and setData of one multi share a zxid");
        Check.that(rs.get(3) instanceof OpResult.CheckResult, "result 3 is %s", rs.get(3));
        Check.that(rs.get(4) instanceof OpResult.DeleteResult, "result 4 is %s", rs.get(4));
        Check.eq("2", str(z.getData(b + "/a", false, null)), "data after the multi");
        Check.that(z.exists(b + "/s-0000000001", false) == null, "deleted sequential node still exists");
        Stat parent = z.exists(b, false);
        Check.eq(3, parent.getCversion(), "parent cversion after create, create, delete");

        KeeperException e = Check.throwsType(KeeperException.class, "multi with a bad version", () -> z.multi(List.of(
                Op.create(b + "/c", null, OPEN, CreateMode.PERSISTENT),
                Op.setData(b + "/a", bytes("3"), 99),
                Op.create(b + "/d", null, OPEN, CreateMode.PERSISTENT))));
        Check.eq(KeeperException.Code.BADVERSION, e.code(), "multi error code");
        Check.eq(List.of(0, -103, -2), errs(e.getResults()), "per-op error codes");
        Check.that(z.exists(b + "/c", false) == null, "op before the failing one was applied");
        Check.eq("2", str(z.getData(b + "/a", false, null)), "data after the failed multi");

        e = Check.throwsType(KeeperException.class, "multi creating an existing node", () -> z.multi(List.of(
                Op.create(b + "/a", null, OPEN, CreateMode.PERSISTENT),
                Op.delete(b + "/a", -1))));
        Check.eq(KeeperException.Code.NODEEXISTS, e.code(), "multi error code");
        Check.eq(List.of(-110, -2), errs(e.getResults()), "per-op error codes");

        e = Check.throwsType(KeeperException.class, "multi deleting a node with children", () -> z.multi(List.of(
                Op.check(b + "/a", 1),
                Op.delete(b, -1))));
        Check.eq(KeeperException.Code.NOTEMPTY, e.code(), "multi error code");
        Check.eq(List.of(0, -111), errs(e.getResults()), "per-op error codes");
        Check.that(z.exists(b, false) != null, "parent deleted by a failed multi");
    }

    /** A read-only multi answers every read, with an error result for a missing node. */
    static void multiRead(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String b = c.path("");
        create(z, b, "root", CreateMode.PERSISTENT);
        create(z, b + "/x", "dx", CreateMode.PERSISTENT);
        create(z, b + "/y", "dy", CreateMode.PERSISTENT);
        List<OpResult> rs = z.multi(List.of(Op.getChildren(b), Op.getData(b + "/x")));
        Check.eq(2, rs.size(), "results");
        List<String> kids = new ArrayList<>(((OpResult.GetChildrenResult) rs.get(0)).getChildren());
        Collections.sort(kids);
        Check.eq(List.of("x", "y"), kids, "children");
        OpResult.GetDataResult d = (OpResult.GetDataResult) rs.get(1);
        Check.eq("dx", str(d.getData()), "data");
        Check.eq(z.exists(b + "/x", false), d.getStat(), "stat");

        // Unlike a write multi, a read multi answers each op on its own and throws nothing.
        List<OpResult> r2 = z.multi(List.of(Op.getData(b + "/y"), Op.getData(b + "/missing"), Op.getChildren(b + "/x")));
        Check.eq(3, r2.size(), "read multi results");
        Check.eq("dy", str(((OpResult.GetDataResult) r2.get(0)).getData()), "read before the missing node");
        Check.that(r2.get(1) instanceof OpResult.ErrorResult, "missing node's result is %s", r2.get(1));
        Check.eq(-101, ((OpResult.ErrorResult) r2.get(1)).getErr(), "missing node's error");
        Check.eq(List.of(), ((OpResult.GetChildrenResult) r2.get(2)).getChildren(), "read after the missing node");
    }

    /** Curator's transaction API maps onto multi, including a failing transaction that applies nothing. */
    static void curatorTransaction(Ctx c) throws Exception {
        CuratorFramework cf = c.curator();
        String b = c.path("");
        cf.create().forPath(b);
        List<CuratorTransactionResult> rs = cf.transaction().forOperations(
                cf.transactionOp().create().forPath(b + "/t", bytes("a")),
                cf.transactionOp().setData().forPath(b + "/t", bytes("b")),
                cf.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(b + "/q-"),
                cf.transactionOp().check().withVersion(1).forPath(b + "/t"));
        Check.eq(4, rs.size(), "results");
        Check.eq(OperationType.CREATE, rs.get(0).getType(), "op 0 type");
        Check.eq(b + "/t", rs.get(0).getResultPath(), "op 0 path");
        Check.eq(1, rs.get(1).getResultStat().getVersion(), "version after the transaction's setData");
        Check.eq(b + "/q-0000000001", rs.get(2).getResultPath(), "sequential path");
        Check.eq(0, rs.get(3).getError(), "check result");
        Check.throwsType(KeeperException.NoNodeException.class, "transaction deleting a missing node", () ->
                cf.transaction().forOperations(
                        cf.transactionOp().create().forPath(b + "/u"),
                        cf.transactionOp().delete().forPath(b + "/missing")));
        Check.that(cf.checkExists().forPath(b + "/u") == null, "a failed transaction's create was applied");
    }

    /** TTL nodes report ephemeralOwner 0, live while written to or while they have children, and are swept after their TTL. */
    static void ttl(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String b = c.path("");
        create(z, b, "", CreateMode.PERSISTENT);
        Stat st = new Stat();
        z.create(b + "/t1", bytes("x"), OPEN, CreateMode.PERSISTENT_WITH_TTL, st, 500);
        Check.eq(0L, st.getEphemeralOwner(), "ephemeralOwner of a TTL node");
        Check.eq(1, st.getDataLength(), "dataLength from create2");
        String seq = z.create(b + "/s-", null, OPEN, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, null, 60_000);
        Check.eq(b + "/s-0000000001", seq, "sequential TTL path");
        z.create(b + "/parent", null, OPEN, CreateMode.PERSISTENT_WITH_TTL, null, 500);
        create(z, b + "/parent/kid", null, CreateMode.PERSISTENT);
        z.create(b + "/busy", null, OPEN, CreateMode.PERSISTENT_WITH_TTL, null, 1000);

        long t0 = System.nanoTime();
        Check.waitFor(10_000, "TTL node t1 to be swept", () -> missing(z, b + "/t1"));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        Check.that(ms >= 300, "t1 swept %d ms after create, TTL 500 ms", ms);
        // Writes keep /busy's mtime fresh; a TTL node with a child stays.
        for (int i = 0; i < 8; i++) {
            z.setData(b + "/busy", bytes("v" + i), -1);
            Thread.sleep(250);
        }
        Check.that(!missing(z, b + "/busy"), "TTL node swept although written every 250 ms (TTL 1000 ms)");
        Check.that(!missing(z, b + "/parent"), "TTL node with a child was swept");
        Check.that(!missing(z, seq), "sequential TTL node with a 60 s TTL was swept");
        z.delete(b + "/parent/kid", -1);
        Check.waitFor(10_000, "childless TTL parent to be swept", () -> missing(z, b + "/parent"));
        Check.waitFor(10_000, "idle TTL node to be swept", () -> missing(z, b + "/busy"));
        Check.that(!missing(z, seq), "sequential TTL node with a 60 s TTL was swept");
    }

    /** Without extendedTypesEnabled a TTL create is refused; containers still work. */
    static void ttlDisabled(Ctx c) throws Exception {
        ServerProc.Options o = new ServerProc.Options();
        o.extendedTypes = false;
        Cluster plain = c.newCluster("plain", Main.members(), o);
        ZooKeeper z = c.zk(plain.connectString(), Ctx.SESSION_MS, e -> { });
        KeeperException e = Check.throwsType(KeeperException.class, "TTL create without extended types", () ->
                z.create("/ttl", null, OPEN, CreateMode.PERSISTENT_WITH_TTL, null, 1000));
        Check.eq(KeeperException.Code.UNIMPLEMENTED, e.code(), "TTL create error");
        Check.that(z.exists("/ttl", false) == null, "refused TTL node exists");
        create(z, "/box", null, CreateMode.CONTAINER);
        Check.that(z.exists("/box", false) != null, "container create without extended types");
    }

    /** Containers go once their last child goes, not before they ever had one; Curator's parent containers cascade. */
    static void containers(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String b = c.path("");
        create(z, b, "", CreateMode.PERSISTENT);
        Stat st = new Stat();
        z.create(b + "/c1", null, OPEN, CreateMode.CONTAINER, st);
        Check.eq(0L, st.getEphemeralOwner(), "ephemeralOwner of a container");
        create(z, b + "/c1/x", null, CreateMode.PERSISTENT);
        create(z, b + "/never", null, CreateMode.CONTAINER);
        Thread.sleep(600);
        Check.that(!missing(z, b + "/c1"), "container with a child was swept");
        z.delete(b + "/c1/x", -1);
        Check.waitFor(10_000, "emptied container to be swept", () -> missing(z, b + "/c1"));
        Check.that(!missing(z, b + "/never"), "container that never had a child was swept");

        // An ephemeral child's session ends: its container goes too.
        create(z, b + "/c2", null, CreateMode.CONTAINER);
        ZooKeeper other = c.zk();
        create(other, b + "/c2/e", null, CreateMode.EPHEMERAL);
        other.close();
        Check.waitFor(10_000, "container of a closed session's ephemeral to be swept", () -> missing(z, b + "/c2"));

        // Curator's creatingParentContainersIfNeeded uses createContainer for the parents.
        CuratorFramework cf = c.curator();
        cf.create().creatingParentContainersIfNeeded().forPath(b + "/deep/p/leaf");
        Ctx.sync(z, b); // cf may be connected to another member
        Stat deep = z.exists(b + "/deep", false);
        Check.that(deep != null, "parent container missing");
        cf.delete().forPath(b + "/deep/p/leaf");
        Check.waitFor(15_000, "cascade of parent containers to be swept", () -> missing(z, b + "/deep"));
    }

    /** Recorder collects events as "Type path" strings. */
    static final class Recorder implements Watcher {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void process(WatchedEvent e) {
            if (e.getType() != Event.EventType.None) {
                events.add(e.getType() + " " + e.getPath());
            }
        }

        /** await waits until n events arrived, then a quiet 300 ms for extras, and returns a copy. */
        List<String> await(int n) throws InterruptedException {
            return await(n, 300);
        }

        /** await waits until n events arrived, then quietMs for extras, and returns a copy. */
        List<String> await(int n, long quietMs) throws InterruptedException {
            try {
                Check.waitFor(10_000, n + " events", () -> events.size() >= n);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; have " + events);
            }
            Thread.sleep(quietMs);
            synchronized (events) {
                return new ArrayList<>(events);
            }
        }
    }

    /** A PERSISTENT watch fires for data and child changes of its node, again and again, until removed. */
    static void persistentWatch(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        ZooKeeper w = c.zk();
        String p = c.path("");
        create(z, p, "0", CreateMode.PERSISTENT);
        Recorder r = new Recorder();
        // Else w's member may apply z's create after the watch is armed and report it.
        Ctx.sync(w, p);
        w.addWatch(p, r, AddWatchMode.PERSISTENT);
        z.setData(p, bytes("1"), -1);
        z.setData(p, bytes("2"), -1);
        create(z, p + "/k", null, CreateMode.PERSISTENT);
        create(z, p + "/k/g", null, CreateMode.PERSISTENT);
        z.setData(p + "/k", bytes("x"), -1);
        z.delete(p + "/k/g", -1);
        z.delete(p + "/k", -1);
        z.delete(p, -1);
        create(z, p, "again", CreateMode.PERSISTENT);
        List<String> want = List.of(
                "NodeDataChanged " + p,
                "NodeDataChanged " + p,
                "NodeChildrenChanged " + p,
                "NodeChildrenChanged " + p,
                "NodeDeleted " + p,
                "NodeCreated " + p);
        Check.eq(want, r.await(want.size()), "persistent watch events");
        w.removeWatches(p, r, Watcher.WatcherType.Any, false);
        List<String> want2 = new ArrayList<>(want);
        want2.add("PersistentWatchRemoved " + p);
        Check.eq(want2, r.await(want2.size()), "events after removeWatches");
        z.setData(p, bytes("3"), -1);
        Thread.sleep(300);
        Check.eq(want2, r.await(want2.size()), "events after a write to an unwatched node");
        Check.throwsType(KeeperException.NoWatcherException.class, "removing a removed watch",
                () -> w.removeWatches(p, r, Watcher.WatcherType.Any, false));
    }

    /** A PERSISTENT_RECURSIVE watch reports every create, change and delete below it with the node's path, and no child events. */
    static void recursiveWatch(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        ZooKeeper w = c.zk();
        String p = c.path("");
        create(z, p, null, CreateMode.PERSISTENT);
        Recorder r = new Recorder();
        // Else w's member may apply z's create after the watch is armed and report it.
        Ctx.sync(w, p);
        w.addWatch(p, r, AddWatchMode.PERSISTENT_RECURSIVE);
        Recorder oneShot = new Recorder();
        create(z, p + "/a", null, CreateMode.PERSISTENT);
        create(z, p + "/a/b", "1", CreateMode.PERSISTENT);
        Ctx.sync(w, p); // z's create may not have reached w's member yet
        w.getData(p + "/a/b", oneShot, null);
        z.setData(p + "/a/b", bytes("2"), -1);
        z.setData(p + "/a/b", bytes("3"), -1);
        z.setData(p, bytes("r"), -1);
        create(z, p + "/e", null, CreateMode.EPHEMERAL);
        z.delete(p + "/a/b", -1);
        z.delete(p + "/a", -1);
        List<String> want = List.of(
                "NodeCreated " + p + "/a",
                "NodeCreated " + p + "/a/b",
                "NodeDataChanged " + p + "/a/b",
                "NodeDataChanged " + p + "/a/b",
                "NodeDataChanged " + p,
                "NodeCreated " + p + "/e",
                "NodeDeleted " + p + "/a/b",
                "NodeDeleted " + p + "/a");
        Check.eq(want, r.await(want.size()), "recursive watch events");
        Check.eq(List.of("NodeDataChanged " + p + "/a/b"), oneShot.await(1), "one-shot data watch beside a recursive one");
        z.close();
        Check.eq(List.of("NodeDeleted " + p + "/e"), r.await(want.size() + 1).subList(want.size(), want.size() + 1),
                "event for an ephemeral deleted by its session's close");
    }

    /** sorted returns a sorted copy of l. */
    static List<String> sorted(List<String> l) {
        List<String> out = new ArrayList<>(l);
        Collections.sort(out);
        return out;
    }

    /** getEphemerals lists the caller's own ephemerals, filtered by path prefix as a string. */
    static void getEphemerals(Ctx c) throws Exception {
        ZooKeeper z1 = c.zk();
        ZooKeeper z2 = c.zk();
        String b = c.path("");
        create(z1, b, null, CreateMode.PERSISTENT);
        create(z1, b + "/p", null, CreateMode.PERSISTENT);
        create(z1, b + "/e1", null, CreateMode.EPHEMERAL);
        String seq = create(z1, b + "/e1x-", null, CreateMode.EPHEMERAL_SEQUENTIAL);
        create(z1, b + "/p/e2", null, CreateMode.EPHEMERAL);
        create(z2, b + "/other", null, CreateMode.EPHEMERAL);
        Check.eq(sorted(List.of(b + "/e1", seq, b + "/p/e2")), sorted(z1.getEphemerals(b)), "z1 ephemerals under " + b);
        Check.eq(sorted(List.of(b + "/e1", seq, b + "/p/e2")), sorted(z1.getEphemerals()), "all z1 ephemerals");
        Check.eq(sorted(List.of(b + "/e1", seq)), sorted(z1.getEphemerals(b + "/e1")), "z1 ephemerals with prefix /e1");
        Check.eq(List.of(b + "/other"), z2.getEphemerals(b), "z2 ephemerals");
        Check.eq(List.of(), z1.getEphemerals(b + "/nothing"), "ephemerals under a missing path");
        z1.delete(b + "/e1", -1);
        Check.eq(sorted(List.of(seq, b + "/p/e2")), sorted(z1.getEphemerals(b)), "z1 ephemerals after a delete");
    }

    /** getAllChildrenNumber counts every descendant, not the node itself nor a sibling sharing its name prefix. */
    static void allChildrenNumber(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String b = c.path("n");
        create(z, c.path(""), null, CreateMode.PERSISTENT);
        create(z, b, null, CreateMode.PERSISTENT);
        for (String p : List.of("/a", "/a/x", "/a/y", "/a/y/z", "/c")) {
            create(z, b + p, null, CreateMode.PERSISTENT);
        }
        create(z, b + "x", null, CreateMode.PERSISTENT);
        create(z, b + "x/sib", null, CreateMode.PERSISTENT);
        Check.eq(5, z.getAllChildrenNumber(b), "descendants of " + b);
        Check.eq(3, z.getAllChildrenNumber(b + "/a"), "descendants of /a");
        Check.eq(0, z.getAllChildrenNumber(b + "/c"), "descendants of a leaf");
        Check.eq(8, z.getAllChildrenNumber(c.path("")), "descendants of the scenario root");
        Check.throwsType(KeeperException.NoNodeException.class, "getAllChildrenNumber of a missing node",
                () -> z.getAllChildrenNumber(b + "/missing"));
    }

    /** infos renders whoAmI results as sorted "scheme:user" strings. */
    static List<String> infos(List<ClientInfo> l) {
        List<String> out = new ArrayList<>();
        for (ClientInfo i : l) {
            out.add(i.getAuthScheme() + ":" + i.getUser());
        }
        Collections.sort(out);
        return out;
    }

    /** whoAmI names the connection's identities: its address, then every added digest user. */
    static void whoAmI(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        Check.eq(List.of("ip:127.0.0.1"), infos(z.whoAmI()), "identities without auth");
        z.addAuthInfo("digest", bytes("alice:secret"));
        Check.eq(List.of("digest:alice", "ip:127.0.0.1"), infos(z.whoAmI()), "identities after addauth");
        z.addAuthInfo("digest", bytes("bob:pw"));
        Check.eq(List.of("digest:alice", "digest:bob", "ip:127.0.0.1"), infos(z.whoAmI()), "identities after a second addauth");
    }

    /**
     * The system nodes exist, /zookeeper/config is what getConfig reads (empty for a standalone
     * server, the server.N lines and a version for an ensemble), and the system subtree is protected.
     */
    static void systemNodes(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        List<String> kids = sorted(z.getChildren("/zookeeper", false));
        Check.eq(List.of("config", "quota"), kids, "children of /zookeeper");
        Stat st = new Stat();
        String cfg = str(z.getConfig(false, st));
        Check.eq(st, z.exists("/zookeeper/config", false), "getConfig's stat is /zookeeper/config's");
        if (Main.members() == 1) {
            Check.eq("", cfg, "getConfig of a standalone server");
        } else {
            for (int i = 1; i <= Main.members(); i++) {
                Check.that(cfg.contains("server." + i + "="), "config lacks server.%d: %s", i, cfg);
            }
            Check.that(cfg.contains("version="), "config lacks its version: %s", cfg);
        }
        KeeperException e = Check.throwsType(KeeperException.class, "create under /zookeeper/config",
                () -> create(z, "/zookeeper/config/x", null, CreateMode.PERSISTENT));
        Check.eq(KeeperException.Code.NOAUTH, e.code(), "create under /zookeeper/config (read-only ACL)");
        e = Check.throwsType(KeeperException.class, "delete /zookeeper", () -> z.delete("/zookeeper", -1));
        Check.eq(KeeperException.Code.BADARGUMENTS, e.code(), "delete /zookeeper");
        e = Check.throwsType(KeeperException.class, "setData /zookeeper/config",
                () -> z.setData("/zookeeper/config", bytes("x"), -1));
        Check.eq(KeeperException.Code.NOAUTH, e.code(), "setData /zookeeper/config");
    }

    /** missing reports whether path does not exist, false on any error. */
    static boolean missing(ZooKeeper z, String path) {
        try {
            return z.exists(path, false) == null;
        } catch (Exception e) {
            return false;
        }
    }

}
