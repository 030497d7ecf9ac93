package zkdcompat;

import static zkdcompat.LockScenarios.bytes;
import static zkdcompat.LockScenarios.str;
import static zkdcompat.ZkClientScenarios.OPEN;
import static zkdcompat.ZkClientScenarios.create;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/** ZkMoreScenarios covers the Java client's edges: watch removal, sizes, timeouts, sequence names, auth failure. */
final class ZkMoreScenarios {
    private ZkMoreScenarios() {}

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("zk_remove_watches", 30_000, ZkMoreScenarios::removeWatches));
        s.add(new Main.Scenario("zk_large_data", 60_000, ZkMoreScenarios::largeData));
        s.add(new Main.Scenario("zk_session_timeout_negotiation", 30_000, ZkMoreScenarios::timeouts));
        s.add(new Main.Scenario("zk_sequential_names", 30_000, ZkMoreScenarios::sequentialNames));
        s.add(new Main.Scenario("zk_multi_create_modes", 30_000, ZkMoreScenarios::multiCreateModes));
        s.add(new Main.Scenario("zk_auth_failed", 30_000, ZkMoreScenarios::authFailed));
        s.add(new Main.Scenario("zk_pipelined_async_ops", 60_000, ZkMoreScenarios::pipelined));
        s.add(new Main.Scenario("zk_many_watches_across_reconnect", 60_000, ZkMoreScenarios::manyWatches));
        s.add(new Main.Scenario("zk_can_be_read_only_client", 30_000, ZkMoreScenarios::canBeReadOnly));
        s.add(new Main.Scenario("zk_stat_bookkeeping", 30_000, ZkMoreScenarios::statBookkeeping));
        s.add(new Main.Scenario("zk_acl_schemes_and_perms", 30_000, ZkMoreScenarios::aclSchemes));
        s.add(new Main.Scenario("zk_super_digest_from_zoo_cfg", 60_000, ZkMoreScenarios::superDigest));
    }

    /** removeWatches removes one kind of watch and reports it; removing a missing watch is NoWatcher. */
    static void removeWatches(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        ZooKeeper other = c.zk();
        String p = c.path("");
        create(z, p, "0", CreateMode.PERSISTENT);
        ZkClientScenarios.Recorder r = new ZkClientScenarios.Recorder();
        z.getData(p, r, null);
        z.getChildren(p, r);
        z.removeWatches(p, r, Watcher.WatcherType.Children, false);
        Check.eq(List.of("ChildWatchRemoved " + p), r.await(1), "events after removing the child watch");
        create(other, p + "/k", null, CreateMode.PERSISTENT);
        other.setData(p, bytes("1"), -1);
        List<String> want = List.of("ChildWatchRemoved " + p, "NodeDataChanged " + p);
        Check.eq(want, r.await(2), "events after a child create and a data change");
        Check.throwsType(KeeperException.NoWatcherException.class, "removing a fired data watch",
                () -> z.removeWatches(p, r, Watcher.WatcherType.Data, false));
        z.exists(p, r);
        z.removeAllWatches(p, Watcher.WatcherType.Any, false);
        Check.eq(List.of("ChildWatchRemoved " + p, "NodeDataChanged " + p, "DataWatchRemoved " + p), r.await(3),
                "events after removeAllWatches");
        other.setData(p, bytes("2"), -1);
        Thread.sleep(300);
        Check.eq(3, r.events.size(), "events after a write with no watch left");
    }

    /** Data just under jute.maxbuffer round-trips; a request over it loses the connection but not the session. */
    static void largeData(Ctx c) throws Exception {
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        ZooKeeper z = c.zk(c.cluster.connectString(), Ctx.SESSION_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState().toString());
            }
        });
        String p = c.path("");
        create(z, p, null, CreateMode.PERSISTENT);
        byte[] big = new byte[1_000_000];
        Arrays.fill(big, (byte) 'z');
        big[0] = 'a';
        big[big.length - 1] = 'b';
        create(z, p + "/big", null, CreateMode.PERSISTENT);
        z.setData(p + "/big", big, -1);
        Stat st = new Stat();
        byte[] got = z.getData(p + "/big", false, st);
        Check.eq(big.length, st.getDataLength(), "dataLength of 1,000,000 bytes");
        Check.that(Arrays.equals(big, got), "1,000,000 bytes came back different");
        long sid = z.getSessionId();
        byte[] huge = new byte[1_200_000];
        Check.throwsType(KeeperException.ConnectionLossException.class, "setData of 1,200,000 bytes",
                () -> z.setData(p + "/big", huge, -1));
        Check.waitFor(15_000, () -> "Disconnected then SyncConnected after the refused packet, have " + states,
                () -> states.contains("Disconnected") && states.lastIndexOf("SyncConnected") > states.indexOf("Disconnected"));
        Check.eq(sid, z.getSessionId(), "session after the refused packet");
        Check.eq(big.length, z.exists(p + "/big", false).getDataLength(), "data after the refused write");
    }

    /** Requested session timeouts are clamped to [2, 20] × tickTime (tickTime 500 here). */
    static void timeouts(Ctx c) throws Exception {
        int[][] cases = {{100, 1000}, {999, 1000}, {5000, 5000}, {10_000, 10_000}, {100_000, 10_000}};
        for (int[] k : cases) {
            ZooKeeper z = c.zk(c.cluster.connectString(), k[0], e -> { });
            Check.eq(k[1], z.getSessionTimeout(), "negotiated timeout for a request of " + k[0] + " ms");
            z.close();
        }
    }

    /** Sequence suffixes follow the parent's cversion (creates and deletes), for every sequential mode. */
    static void sequentialNames(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String p = c.path("");
        create(z, p, null, CreateMode.PERSISTENT);
        create(z, p + "/a", null, CreateMode.PERSISTENT);
        create(z, p + "/b", null, CreateMode.PERSISTENT);
        z.delete(p + "/a", -1);
        Check.eq(3, z.exists(p, false).getCversion(), "cversion after two creates and a delete");
        List<String> names = new ArrayList<>();
        names.add(create(z, p + "/s-", null, CreateMode.PERSISTENT_SEQUENTIAL));
        names.add(create(z, p + "/e-", null, CreateMode.EPHEMERAL_SEQUENTIAL));
        names.add(create(z, p + "/", null, CreateMode.PERSISTENT_SEQUENTIAL));
        KeeperException e = Check.throwsType(KeeperException.class, "create an existing node", () ->
                create(z, p + "/b", null, CreateMode.PERSISTENT));
        Check.eq(KeeperException.Code.NODEEXISTS, e.code(), "create an existing node");
        z.delete(names.get(0), -1);
        names.add(create(z, p + "/s-", null, CreateMode.PERSISTENT_SEQUENTIAL));
        Stat st = z.exists(p, false);
        Check.eq(List.of(p + "/s-0000000002", p + "/e-0000000003", p + "/0000000004", p + "/s-0000000005"), names,
                "sequential names (cversion " + st.getCversion() + ")");
        List<String> kids = new ArrayList<>(z.getChildren(p, false));
        Collections.sort(kids);
        Check.eq(List.of("0000000004", "b", "e-0000000003", "s-0000000005"), kids, "children");
        Check.throwsType(KeeperException.NoChildrenForEphemeralsException.class, "child of an ephemeral",
                () -> create(z, names.get(1) + "/x", null, CreateMode.PERSISTENT));
        Check.throwsType(KeeperException.NoNodeException.class, "create under a missing parent",
                () -> create(z, p + "/missing/x", null, CreateMode.PERSISTENT));
        Check.throwsType(KeeperException.NotEmptyException.class, "delete a node with children",
                () -> z.delete(p, -1));
        Check.throwsType(KeeperException.BadVersionException.class, "delete with a wrong version",
                () -> z.delete(p + "/b", 7));
    }

    /** A multi may create every kind of node, returning each created path and Stat. */
    static void multiCreateModes(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String p = c.path("");
        create(z, p, null, CreateMode.PERSISTENT);
        List<OpResult> rs = z.multi(List.of(
                Op.create(p + "/c", null, OPEN, CreateMode.CONTAINER),
                Op.create(p + "/c/e", bytes("eph"), OPEN, CreateMode.EPHEMERAL),
                Op.create(p + "/t", bytes("ttl"), OPEN, CreateMode.PERSISTENT_WITH_TTL, 60_000),
                Op.create(p + "/q-", null, OPEN, CreateMode.EPHEMERAL_SEQUENTIAL)));
        Check.eq(4, rs.size(), "results");
        List<String> paths = new ArrayList<>();
        for (OpResult r : rs) {
            Check.that(r instanceof OpResult.CreateResult, "result %s is not a create", r);
            paths.add(((OpResult.CreateResult) r).getPath());
        }
        Check.eq(List.of(p + "/c", p + "/c/e", p + "/t", p + "/q-0000000002"), paths, "created paths");
        // Plain creates (opcode create) carry no Stat; container and TTL creates (their own opcodes) do.
        Check.that(((OpResult.CreateResult) rs.get(1)).getStat() == null, "plain create in a multi returned a Stat");
        Stat box = ((OpResult.CreateResult) rs.get(0)).getStat();
        Stat ttl = ((OpResult.CreateResult) rs.get(2)).getStat();
        Check.that(box != null && ttl != null, "container/TTL create in a multi returned no Stat");
        Check.eq(z.exists(p + "/t", false), ttl, "TTL node's Stat from the multi");
        Check.eq(0L, ttl.getEphemeralOwner(), "ephemeralOwner of the TTL node");
        Check.eq(3, ttl.getDataLength(), "dataLength of the TTL node");
        Check.eq(box.getCzxid(), ttl.getCzxid(), "one zxid for the whole multi");
        Check.eq(z.getSessionId(), z.exists(p + "/c/e", false).getEphemeralOwner(), "ephemeralOwner of the ephemeral");
    }

    /**
     * Thousands of async reads and writes in flight on one connection complete in the order sent
     * (the Java client drops the connection on an out-of-order xid), each read seeing every earlier
     * write of the session, with zxids that never go back.
     */
    static void pipelined(Ctx c) throws Exception {
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        ZooKeeper z = c.zk(c.cluster.connectString(), Ctx.SESSION_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState().toString());
            }
        });
        String p = c.path("");
        create(z, p, "0", CreateMode.PERSISTENT);
        int n = 3000;
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        List<String> bad = Collections.synchronizedList(new ArrayList<>());
        long[] lastMzxid = {0};
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            int k = i;
            switch (i % 3) {
                case 0 -> z.setData(p, bytes(Integer.toString(i)), -1, (rc, path, ctx, st) -> {
                    order.add("w" + k);
                    if (rc != 0) {
                        bad.add("setData " + k + " rc " + rc);
                    } else if (st.getMzxid() <= lastMzxid[0]) {
                        bad.add("setData " + k + " mzxid went back");
                    } else {
                        lastMzxid[0] = st.getMzxid();
                    }
                    done.countDown();
                }, null);
                case 1 -> z.getData(p, false, (rc, path, ctx, data, st) -> {
                    order.add("r" + k);
                    // The last write sent before this read is k - 1.
                    if (rc != 0 || !str(data).equals(Integer.toString(k - 1))) {
                        bad.add("getData " + k + " saw " + (data == null ? "rc " + rc : str(data)));
                    }
                    done.countDown();
                }, null);
                default -> z.create(p + "/c" + k, null, OPEN, CreateMode.PERSISTENT, (rc, path, ctx, name) -> {
                    order.add("c" + k);
                    if (rc != 0) {
                        bad.add("create " + k + " rc " + rc);
                    }
                    done.countDown();
                }, null);
            }
        }
        Check.that(done.await(40, java.util.concurrent.TimeUnit.SECONDS), "only %d of %d callbacks", n - done.getCount(), n);
        Check.eq(List.of(), bad.subList(0, Math.min(5, bad.size())), "failed or stale ops (first 5)");
        for (int i = 0; i < n; i++) {
            String want = (i % 3 == 0 ? "w" : i % 3 == 1 ? "r" : "c") + i;
            if (!want.equals(order.get(i))) {
                throw new AssertionError("callback " + i + " was " + order.get(i) + ", want " + want);
            }
        }
        Check.that(!states.contains("Disconnected"), "connection dropped during the pipeline: %s", states);
        Check.eq(n / 3, z.getAllChildrenNumber(p), "children created");
    }

    /**
     * Thousands of watches on long paths (more than one setWatches frame's worth, which the Java
     * client splits at 128 KiB) survive a reconnect: those whose nodes appeared meanwhile fire, the
     * rest are re-armed and fire later.
     */
    static void manyWatches(Ctx c) throws Exception {
        String p = c.path("");
        ZooKeeper other = c.zk();
        create(other, p, null, CreateMode.PERSISTENT);
        Proxy proxy = c.proxy(c.cluster.members.get(0));
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        ZooKeeper z = c.zk(proxy.addr(), Ctx.SESSION_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState().toString());
            }
        });
        String pad = "x".repeat(100);
        int n = 3000;
        ZkClientScenarios.Recorder r = new ZkClientScenarios.Recorder();
        java.util.concurrent.CountDownLatch armed = new java.util.concurrent.CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            z.exists(p + "/" + pad + i, r, (rc, path, ctx, st) -> armed.countDown(), null);
        }
        Check.that(armed.await(30, java.util.concurrent.TimeUnit.SECONDS), "exists calls did not finish");
        proxy.setBlackhole(true);
        proxy.dropAll();
        Check.waitFor(10_000, "Disconnected", () -> states.contains("Disconnected"));
        List<String> want = new ArrayList<>();
        for (int i = 0; i < n; i += 300) {
            create(other, p + "/" + pad + i, null, CreateMode.PERSISTENT);
            want.add("NodeCreated " + p + "/" + pad + i);
        }
        proxy.setBlackhole(false);
        Check.waitFor(15_000, "reconnect", () -> states.lastIndexOf("SyncConnected") > states.indexOf("Disconnected"));
        Collections.sort(want);
        r.await(want.size());
        Check.eq(want, WatchScenarios.sortedCopy(r.events), "events for nodes created while cut off");
        for (int i = 150; i < n; i += 300) {
            create(other, p + "/" + pad + i, null, CreateMode.PERSISTENT);
            want.add("NodeCreated " + p + "/" + pad + i);
        }
        Collections.sort(want);
        r.await(want.size());
        Check.eq(want, WatchScenarios.sortedCopy(r.events), "events for nodes created after the reconnect");
    }

    /** A client that allows read-only mode connects to a normal server as a normal read-write session. */
    static void canBeReadOnly(Ctx c) throws Exception {
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.CountDownLatch up = new java.util.concurrent.CountDownLatch(1);
        ZooKeeper z = new ZooKeeper(c.cluster.connectString(), Ctx.SESSION_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState().toString());
                up.countDown();
            }
        }, true);
        try {
            Check.that(up.await(20, java.util.concurrent.TimeUnit.SECONDS), "no connection");
            Check.eq(List.of("SyncConnected"), new ArrayList<>(states), "connection states");
            String p = c.path("");
            create(z, p, "rw", CreateMode.PERSISTENT);
            Check.eq("rw", str(z.getData(p, false, null)), "write and read back");
            Check.eq(ZooKeeper.States.CONNECTED, z.getState(), "client state");
        } finally {
            z.close();
        }
    }

    /** Every Stat field moves as ZooKeeper moves it through creates, child changes, writes and ACL changes. */
    static void statBookkeeping(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String p = c.path("");
        long before = System.currentTimeMillis();
        Stat s0 = new Stat();
        z.create(p, bytes("abc"), OPEN, CreateMode.PERSISTENT, s0);
        Check.eq(s0.getCzxid(), s0.getMzxid(), "mzxid at create");
        Check.eq(s0.getCzxid(), s0.getPzxid(), "pzxid at create");
        Check.eq(s0.getCtime(), s0.getMtime(), "mtime at create");
        Check.that(Math.abs(s0.getCtime() - before) < 60_000, "ctime %d far from the client's clock %d", s0.getCtime(), before);
        Check.eq(0, s0.getVersion(), "version at create");
        Check.eq(0, s0.getCversion(), "cversion at create");
        Check.eq(0, s0.getAversion(), "aversion at create");
        Check.eq(0L, s0.getEphemeralOwner(), "ephemeralOwner of a persistent node");
        Check.eq(3, s0.getDataLength(), "dataLength");
        Check.eq(0, s0.getNumChildren(), "numChildren at create");

        Stat k1 = new Stat();
        z.create(p + "/k1", null, OPEN, CreateMode.EPHEMERAL, k1);
        Check.eq(z.getSessionId(), k1.getEphemeralOwner(), "ephemeralOwner of an ephemeral");
        Check.eq(0, k1.getDataLength(), "dataLength of null data");
        Stat s1 = z.exists(p, false);
        Check.eq(k1.getCzxid(), s1.getPzxid(), "pzxid after a child create");
        Check.eq(1, s1.getCversion(), "cversion after a child create");
        Check.eq(1, s1.getNumChildren(), "numChildren after a child create");
        Check.eq(s0.getMzxid(), s1.getMzxid(), "mzxid after a child create");
        Check.eq(0, s1.getVersion(), "version after a child create");

        Stat s2 = z.setData(p, bytes("hello!"), 0);
        Check.that(s2.getMzxid() > k1.getCzxid(), "mzxid after setData");
        Check.eq(1, s2.getVersion(), "version after setData");
        Check.eq(6, s2.getDataLength(), "dataLength after setData");
        Check.that(s2.getMtime() >= s2.getCtime(), "mtime before ctime");
        Check.eq(s1.getPzxid(), s2.getPzxid(), "pzxid after setData");

        z.delete(p + "/k1", -1);
        Stat s3 = new Stat();
        List<String> kids = z.getChildren(p, false, s3);
        Check.eq(List.of(), kids, "children after the delete");
        Check.that(s3.getPzxid() > s2.getMzxid(), "pzxid after a child delete (%d) not past the last write (%d)", s3.getPzxid(), s2.getMzxid());
        Check.eq(2, s3.getCversion(), "cversion after a child delete");
        Check.eq(0, s3.getNumChildren(), "numChildren after a child delete");
        Check.eq(s2.getMzxid(), s3.getMzxid(), "mzxid after a child delete");
        Check.eq(z.exists(p, false), s3, "getChildren2's Stat is exists' Stat");

        Stat s4 = z.setACL(p, OPEN, 0);
        Check.eq(1, s4.getAversion(), "aversion after setACL");
        Check.eq(s3.getMzxid(), s4.getMzxid(), "mzxid after setACL");
        Check.eq(1, s4.getVersion(), "version after setACL");
        Stat s5 = new Stat();
        Check.eq("hello!", str(z.getData(p, false, s5)), "data");
        Check.eq(s4, s5, "getData's Stat after setACL");
        Check.that(s4.getPzxid() == s3.getPzxid(), "pzxid after setACL");
    }

    /** code returns the KeeperException code body throws, or fails. */
    static KeeperException.Code code(String what, Check.Thrower body) {
        return Check.throwsType(KeeperException.class, what, body).code();
    }

    /** acl builds a one-entry ACL list. */
    static List<org.apache.zookeeper.data.ACL> acl(int perms, String scheme, String id) {
        // A mutable list: the client's validateACL calls contains(null), which List.of refuses.
        return new ArrayList<>(List.of(new org.apache.zookeeper.data.ACL(perms, new org.apache.zookeeper.data.Id(scheme, id))));
    }

    /** ip and digest ACLs, the auth scheme, invalid ACLs, and which permission each operation needs. */
    static void aclSchemes(Ctx c) throws Exception {
        ZooKeeper z = c.zk();
        String p = c.path("");
        create(z, p, null, CreateMode.PERSISTENT);
        int all = org.apache.zookeeper.ZooDefs.Perms.ALL;
        int read = org.apache.zookeeper.ZooDefs.Perms.READ;
        z.create(p + "/ip", bytes("ip"), acl(all, "ip", "127.0.0.1"), CreateMode.PERSISTENT);
        Check.eq("ip", str(z.getData(p + "/ip", false, null)), "read with a matching ip ACL");
        z.create(p + "/net", bytes("net"), acl(all, "ip", "127.0.0.0/8"), CreateMode.PERSISTENT);
        Check.eq("net", str(z.getData(p + "/net", false, null)), "read with a matching ip/bits ACL");
        z.create(p + "/far", bytes("far"), acl(all, "ip", "10.1.2.0/24"), CreateMode.PERSISTENT);
        Check.eq(KeeperException.Code.NOAUTH, code("read with a foreign ip ACL", () -> z.getData(p + "/far", false, null)), "read with a foreign ip ACL");
        Check.eq(KeeperException.Code.INVALIDACL, code("auth ACL without credentials",
                () -> z.create(p + "/auth", null, acl(all, "auth", ""), CreateMode.PERSISTENT)), "auth ACL without credentials");
        Check.eq(KeeperException.Code.INVALIDACL, code("digest ACL without a colon",
                () -> z.create(p + "/bad", null, acl(all, "digest", "nocolon"), CreateMode.PERSISTENT)), "digest ACL without a colon");
        Check.eq(KeeperException.Code.INVALIDACL, code("empty ACL",
                () -> z.create(p + "/empty", null, List.of(), CreateMode.PERSISTENT)), "empty ACL");
        Check.eq(KeeperException.Code.INVALIDACL, code("unknown scheme",
                () -> z.create(p + "/unk", null, acl(all, "nosuch", "x"), CreateMode.PERSISTENT)), "unknown scheme");

        // Each operation needs its own permission.
        z.create(p + "/ro", bytes("ro"), acl(read, "world", "anyone"), CreateMode.PERSISTENT);
        Check.eq(KeeperException.Code.NOAUTH, code("setData on READ-only", () -> z.setData(p + "/ro", bytes("x"), -1)), "setData on READ-only");
        Check.eq(KeeperException.Code.NOAUTH, code("create under READ-only",
                () -> create(z, p + "/ro/kid", null, CreateMode.PERSISTENT)), "create under READ-only");
        Check.eq(KeeperException.Code.NOAUTH, code("setACL on READ-only",
                () -> z.setACL(p + "/ro", OPEN, -1)), "setACL on READ-only");
        z.create(p + "/admin", bytes("a"), acl(org.apache.zookeeper.ZooDefs.Perms.ADMIN, "world", "anyone"), CreateMode.PERSISTENT);
        Check.eq(KeeperException.Code.NOAUTH, code("getData on ADMIN-only", () -> z.getData(p + "/admin", false, null)), "getData on ADMIN-only");
        Check.eq(acl(org.apache.zookeeper.ZooDefs.Perms.ADMIN, "world", "anyone"), z.getACL(p + "/admin", new Stat()), "getACL on ADMIN-only");
        z.create(p + "/w", null, acl(org.apache.zookeeper.ZooDefs.Perms.WRITE, "world", "anyone"), CreateMode.PERSISTENT);
        Check.eq(KeeperException.Code.NOAUTH, code("getACL on WRITE-only", () -> z.getACL(p + "/w", new Stat())), "getACL on WRITE-only");
        Check.eq(KeeperException.Code.NOAUTH, code("getChildren on WRITE-only", () -> z.getChildren(p + "/w", false)), "getChildren on WRITE-only");
        Check.that(z.exists(p + "/w", false) != null, "exists needs no permission");
        z.create(p + "/nodel", null, acl(all & ~org.apache.zookeeper.ZooDefs.Perms.DELETE, "world", "anyone"), CreateMode.PERSISTENT);
        create(z, p + "/nodel/kid", null, CreateMode.PERSISTENT);
        Check.eq(KeeperException.Code.NOAUTH, code("delete under a parent without DELETE",
                () -> z.delete(p + "/nodel/kid", -1)), "delete under a parent without DELETE");
        z.setACL(p + "/nodel", OPEN, 0);
        z.delete(p + "/nodel/kid", -1);
        Check.eq(KeeperException.Code.BADVERSION, code("setACL with a stale aversion", () -> z.setACL(p + "/nodel", OPEN, 0)), "setACL with a stale aversion");

        // auth: the creator's digest identity replaces the entry.
        z.addAuthInfo("digest", bytes("dave:pw"));
        z.create(p + "/mine", null, acl(all, "auth", ""), CreateMode.PERSISTENT);
        Check.eq(acl(all, "digest", org.apache.zookeeper.server.auth.DigestAuthenticationProvider.generateDigest("dave:pw")),
                z.getACL(p + "/mine", new Stat()), "ACL stored for an auth entry");
        ZooKeeper anon = c.zk();
        Ctx.sync(anon, p); // else z's create may not have reached anon's member (NoNode, not NoAuth)
        Check.eq(KeeperException.Code.NOAUTH, code("anonymous read of dave's node", () -> anon.getData(p + "/mine", false, null)), "anonymous read of dave's node");
    }

    /** A super digest set in zoo.cfg (a zookeeper.* system property for ZooKeeper) lets the super user past every ACL. */
    static void superDigest(Ctx c) throws Exception {
        ServerProc.Options o = new ServerProc.Options();
        String digest = org.apache.zookeeper.server.auth.DigestAuthenticationProvider.generateDigest("super:letmein");
        o.extra.put("DigestAuthenticationProvider.superDigest", digest);
        Cluster cl = c.newCluster("super", Main.members(), o);
        ZooKeeper owner = c.zk(cl.connectString(), Ctx.SESSION_MS, e -> { });
        owner.addAuthInfo("digest", bytes("erin:pw"));
        owner.create("/locked", bytes("s3cret"), acl(org.apache.zookeeper.ZooDefs.Perms.ALL, "auth", ""), CreateMode.PERSISTENT);
        ZooKeeper anon = c.zk(cl.connectString(), Ctx.SESSION_MS, e -> { });
        // Each reader below reads what owner wrote, perhaps through another member.
        Ctx.sync(anon, "/locked");
        Check.eq(KeeperException.Code.NOAUTH, code("anonymous read", () -> anon.getData("/locked", false, null)), "anonymous read");
        ZooKeeper sup = c.zk(cl.connectString(), Ctx.SESSION_MS, e -> { });
        sup.addAuthInfo("digest", bytes("super:letmein"));
        Ctx.sync(sup, "/locked");
        Check.eq("s3cret", str(sup.getData("/locked", false, null)), "super user's read");
        sup.setData("/locked", bytes("changed"), -1);
        sup.delete("/locked", -1);
        owner.create("/locked2", null, acl(org.apache.zookeeper.ZooDefs.Perms.ALL, "auth", ""), CreateMode.PERSISTENT);
        ZooKeeper wrong = c.zk(cl.connectString(), Ctx.SESSION_MS, e -> { });
        wrong.addAuthInfo("digest", bytes("super:wrong"));
        Ctx.sync(wrong, "/locked2");
        Check.eq(KeeperException.Code.NOAUTH, code("read with a wrong super password",
                () -> wrong.getData("/locked2", false, null)), "read with a wrong super password");
    }

    /** addauth with an unknown scheme ends in AuthFailed; the handle refuses further requests. */
    static void authFailed(Ctx c) throws Exception {
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        ZooKeeper z = c.zk(c.cluster.connectString(), Ctx.SESSION_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState().toString());
            }
        });
        z.addAuthInfo("nosuchscheme", bytes("whatever"));
        Check.waitFor(10_000, () -> "AuthFailed, have " + states, () -> states.contains("AuthFailed"));
        Check.throwsType(KeeperException.AuthFailedException.class, "a request after AuthFailed",
                () -> z.exists("/", false));
        // A well-formed digest succeeds on a new handle.
        ZooKeeper ok = c.zk();
        ok.addAuthInfo("digest", bytes("carol:pw"));
        Check.that(ok.exists("/zookeeper", false) != null, "request after a good addauth");
        Check.that(states.indexOf("AuthFailed") >= 0 && !states.subList(states.indexOf("AuthFailed"), states.size()).contains("SyncConnected"),
                "client reconnected after AuthFailed: %s", states);
    }
}
