package zkdcompat;

import static zkdcompat.LockScenarios.bytes;
import static zkdcompat.LockScenarios.str;
import static zkdcompat.RecipeScenarios.STRINGS;
import static zkdcompat.RecipeScenarios.collector;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.NodeCache;
import org.apache.curator.framework.recipes.cache.PathChildrenCache;
import org.apache.curator.framework.recipes.cache.PathChildrenCacheEvent;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.recipes.shared.SharedValueListener;
import org.apache.curator.framework.recipes.shared.SharedValueReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

/** MoreRecipeScenarios checks Curator's older caches (one-shot watches), more queues, SharedValue and ACLs. */
@SuppressWarnings("deprecation") // TreeCache, PathChildrenCache and NodeCache are deprecated but widely used
final class MoreRecipeScenarios {
    private MoreRecipeScenarios() {}

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("tree_cache", 30_000, MoreRecipeScenarios::treeCache));
        s.add(new Main.Scenario("path_children_cache", 30_000, MoreRecipeScenarios::pathChildrenCache));
        s.add(new Main.Scenario("node_cache", 30_000, MoreRecipeScenarios::nodeCache));
        s.add(new Main.Scenario("shared_value", 30_000, MoreRecipeScenarios::sharedValue));
        s.add(new Main.Scenario("simple_distributed_queue", 30_000, MoreRecipeScenarios::simpleQueue));
        s.add(new Main.Scenario("distributed_priority_queue", 30_000, MoreRecipeScenarios::priorityQueue));
        s.add(new Main.Scenario("distributed_delay_queue", 30_000, MoreRecipeScenarios::delayQueue));
        s.add(new Main.Scenario("curator_acl_digest_auth", 30_000, MoreRecipeScenarios::aclDigest));
    }

    /** byPath groups "kind path ..." event strings by their path, keeping order within a path. */
    static Map<String, List<String>> byPath(List<String> events) {
        Map<String, List<String>> got = new HashMap<>();
        synchronized (events) {
            for (String e : events) {
                got.computeIfAbsent(e.split(" ")[1], k -> new ArrayList<>()).add(e);
            }
        }
        return got;
    }

    /** TreeCache loads a subtree with one-shot watches and follows adds, updates and removals at any depth. */
    static void treeCache(Ctx c) throws Exception {
        String base = c.path("tree");
        CuratorFramework w = c.curator();
        w.create().creatingParentsIfNeeded().forPath(base + "/a", bytes("1"));
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch init = new CountDownLatch(1);
        CuratorFramework cr = c.curator();
        Ctx.sync(cr, base); // the cache's initial load reads w's /a, perhaps through another member
        TreeCache cache = TreeCache.newBuilder(cr, base).build();
        cache.getListenable().addListener((cl, e) -> {
            if (e.getType() == TreeCacheEvent.Type.INITIALIZED) {
                init.countDown();
            } else if (e.getData() != null && init.getCount() == 0) {
                events.add(e.getType() + " " + e.getData().getPath());
            }
        });
        cache.start();
        try {
            Check.that(init.await(10, TimeUnit.SECONDS), "tree cache never initialized");
            Check.eq("1", str(cache.getCurrentData(base + "/a").getData()), "cached /a");
            Check.eq(List.of("a"), new ArrayList<>(cache.getCurrentChildren(base).keySet()), "cached children of the root");
            w.create().forPath(base + "/b", bytes("x"));
            w.create().forPath(base + "/b/c", bytes("y"));
            // TreeCache reads a new node's children only after it learns of the node, so
            // wait for /b/c before deleting it.
            Check.waitFor(10_000, () -> "NODE_ADDED of /b/c, have " + events, () -> events.contains("NODE_ADDED " + base + "/b/c"));
            w.setData().forPath(base + "/a", bytes("2"));
            w.delete().forPath(base + "/b/c");
            Map<String, List<String>> want = new HashMap<>();
            want.put(base + "/a", List.of("NODE_UPDATED " + base + "/a"));
            want.put(base + "/b", List.of("NODE_ADDED " + base + "/b"));
            want.put(base + "/b/c", List.of("NODE_ADDED " + base + "/b/c", "NODE_REMOVED " + base + "/b/c"));
            Check.waitFor(10_000, () -> "4 tree cache events, have " + events, () -> events.size() >= 4);
            Thread.sleep(200);
            Check.eq(want, byPath(events), "tree cache events by path");
            Check.eq("2", str(cache.getCurrentData(base + "/a").getData()), "cached /a after the update");
            Check.that(cache.getCurrentData(base + "/b/c") == null, "cache still has the removed /b/c");
            Check.eq(0, cache.getCurrentChildren(base + "/b").size(), "cached children of /b");
        } finally {
            cache.close();
        }
    }

    /** PathChildrenCache builds the initial children and reports child adds, updates and removals. */
    static void pathChildrenCache(Ctx c) throws Exception {
        String base = c.path("pc");
        CuratorFramework w = c.curator();
        w.create().creatingParentsIfNeeded().forPath(base + "/one", bytes("1"));
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        CuratorFramework cr = c.curator();
        Ctx.sync(cr, base); // the cache's initial load reads w's /one, perhaps through another member
        PathChildrenCache cache = new PathChildrenCache(cr, base, true);
        CountDownLatch init = new CountDownLatch(1);
        cache.getListenable().addListener((cl, e) -> {
            if (e.getType() == PathChildrenCacheEvent.Type.INITIALIZED) {
                init.countDown();
            } else if (e.getData() != null && init.getCount() == 0) {
                events.add(e.getType() + " " + e.getData().getPath() + " " + str(e.getData().getData()));
            }
        });
        cache.start(PathChildrenCache.StartMode.POST_INITIALIZED_EVENT);
        try {
            Check.that(init.await(10, TimeUnit.SECONDS), "path children cache never initialized");
            List<ChildData> initial = cache.getCurrentData();
            Check.eq(1, initial.size(), "initial children");
            Check.eq("1", str(initial.get(0).getData()), "initial child data");
            w.create().forPath(base + "/two", bytes("2"));
            // The cache lists children after a child event; a child deleted before that is never
            // reported, so wait for /two first.
            Check.waitFor(10_000, () -> "CHILD_ADDED of /two, have " + events,
                    () -> events.contains("CHILD_ADDED " + base + "/two 2"));
            w.setData().forPath(base + "/one", bytes("11"));
            w.delete().forPath(base + "/two");
            w.create().forPath(base + "/one/grandchild");
            Map<String, List<String>> want = new HashMap<>();
            want.put(base + "/one", List.of("CHILD_UPDATED " + base + "/one 11"));
            want.put(base + "/two", List.of("CHILD_ADDED " + base + "/two 2", "CHILD_REMOVED " + base + "/two 2"));
            Check.waitFor(10_000, () -> "3 child events, have " + events, () -> events.size() >= 3);
            Thread.sleep(300);
            Check.eq(want, byPath(events), "child events by path (no event for a grandchild)");
            Check.eq("11", str(cache.getCurrentData(base + "/one").getData()), "cached child after the update");
        } finally {
            cache.close();
        }
    }

    /** NodeCache follows one node through creation, updates and deletion. */
    static void nodeCache(Ctx c) throws Exception {
        String path = c.path("node");
        CuratorFramework w = c.curator();
        NodeCache cache = new NodeCache(c.curator(), path);
        List<String> seen = Collections.synchronizedList(new ArrayList<>());
        cache.getListenable().addListener(() -> {
            ChildData d = cache.getCurrentData();
            seen.add(d == null ? "<gone>" : str(d.getData()));
        });
        cache.start(true);
        try {
            Check.that(cache.getCurrentData() == null, "cache of a missing node has data");
            w.create().creatingParentsIfNeeded().forPath(path, bytes("v1"));
            Check.waitFor(5_000, () -> "v1, have " + seen, () -> seen.contains("v1"));
            w.setData().forPath(path, bytes("v2"));
            Check.waitFor(5_000, () -> "v2, have " + seen, () -> seen.contains("v2"));
            w.delete().forPath(path);
            Check.waitFor(5_000, () -> "deletion, have " + seen, () -> seen.contains("<gone>"));
            Check.that(cache.getCurrentData() == null, "cache has data after the delete");
            Check.eq(List.of("v1", "v2", "<gone>"), new ArrayList<>(seen), "node cache sequence");
        } finally {
            cache.close();
        }
    }

    /** SharedValue propagates byte values and refuses a write based on a stale version. */
    static void sharedValue(Ctx c) throws Exception {
        String path = c.path("value");
        SharedValue a = new SharedValue(c.curator(), path, bytes("seed"));
        CuratorFramework bc = c.curator();
        SharedValue b = new SharedValue(bc, path, bytes("other-seed"));
        List<String> heard = Collections.synchronizedList(new ArrayList<>());
        a.start();
        // b's start reads the value a created, perhaps through another member.
        Ctx.sync(bc, path);
        b.start();
        b.getListenable().addListener(new SharedValueListener() {
            @Override
            public void valueHasChanged(SharedValueReader r, byte[] v) {
                heard.add(str(v));
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState st) { }
        });
        try {
            Check.eq("seed", str(b.getValue()), "value seen by the second client");
            VersionedValue<byte[]> stale = b.getVersionedValue();
            a.setValue(bytes("one"));
            Check.waitFor(5_000, "second client to hear 'one'", () -> heard.contains("one"));
            Check.that(!b.trySetValue(stale, bytes("two")), "trySetValue with a stale version succeeded");
            Check.that(b.trySetValue(b.getVersionedValue(), bytes("three")), "trySetValue with the current version failed");
            Check.waitFor(5_000, "first client to see 'three'", () -> "three".equals(str(a.getValue())));
        } finally {
            a.close();
            b.close();
        }
    }

    /** SimpleDistributedQueue is FIFO, polls time out on empty, and take() blocks until an offer. */
    static void simpleQueue(Ctx c) throws Exception {
        String path = c.path("sq");
        SimpleDistributedQueue q1 = new SimpleDistributedQueue(c.curator(), path);
        CuratorFramework c2 = c.curator();
        SimpleDistributedQueue q2 = new SimpleDistributedQueue(c2, path);
        long t0 = System.nanoTime();
        Check.that(q1.poll(300, TimeUnit.MILLISECONDS) == null, "poll on an empty queue returned an item");
        Check.that((System.nanoTime() - t0) / 1_000_000 >= 250, "poll returned before its timeout");
        for (int i = 0; i < 5; i++) {
            Check.that(q1.offer(bytes("i" + i)), "offer failed");
        }
        Ctx.sync(c2, path); // q1 offered through another client, perhaps another member
        Check.eq("i0", str(q2.peek()), "peek");
        List<String> got = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            got.add(str(q2.take()));
        }
        Check.eq(List.of("i0", "i1", "i2", "i3", "i4"), got, "take order");
        Check.that(q2.peek() == null, "queue not empty after taking everything");
        Future<String> taker = c.go1(() -> str(q2.take()));
        Thread.sleep(300);
        Check.that(!taker.isDone(), "take() returned on an empty queue");
        q1.offer(bytes("late"));
        Check.eq("late", taker.get(10, TimeUnit.SECONDS), "item taken by the blocked take()");
    }

    /** A priority queue hands out lower priority numbers first. */
    static void priorityQueue(Ctx c) throws Exception {
        String path = c.path("pq");
        DistributedPriorityQueue<String> prod = QueueBuilder.builder(c.curator(), null, STRINGS, path).buildPriorityQueue(0);
        prod.start();
        int[] prios = {5, -3, 9, 0, 2};
        for (int p : prios) {
            prod.put("p" + p, p);
        }
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        // The consumer's first listing must hold every item put, or it hands out a subset first.
        CuratorFramework cc = c.curator();
        Ctx.sync(cc, path);
        DistributedPriorityQueue<String> cons = QueueBuilder.builder(cc, collector(got), STRINGS, path).buildPriorityQueue(0);
        cons.start();
        try {
            Check.waitFor(10_000, "5 items", () -> got.size() >= 5);
            Check.eq(List.of("p-3", "p0", "p2", "p5", "p9"), new ArrayList<>(got), "priority order");
        } finally {
            cons.close();
            prod.close();
        }
    }

    /** A delay queue hands out nothing before its time, and items in order of their times. */
    static void delayQueue(Ctx c) throws Exception {
        String path = c.path("dq");
        DistributedDelayQueue<String> prod = QueueBuilder.builder(c.curator(), null, STRINGS, path).buildDelayQueue();
        prod.start();
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        Map<String, Long> gotAt = Collections.synchronizedMap(new HashMap<>());
        DistributedDelayQueue<String> cons = QueueBuilder.builder(c.curator(), new org.apache.curator.framework.recipes.queue.QueueConsumer<String>() {
            @Override
            public void consumeMessage(String m) {
                gotAt.put(m, System.currentTimeMillis());
                got.add(m);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState st) { }
        }, STRINGS, path).buildDelayQueue();
        cons.start();
        try {
            long now = System.currentTimeMillis();
            prod.put("late", now + 1500);
            prod.put("soon", now + 400);
            Check.waitFor(10_000, "both items", () -> got.size() >= 2);
            Check.eq(List.of("soon", "late"), new ArrayList<>(got), "delay order");
            Check.that(gotAt.get("soon") >= now + 400, "'soon' consumed %d ms early", now + 400 - gotAt.get("soon"));
            Check.that(gotAt.get("late") >= now + 1500, "'late' consumed %d ms early", now + 1500 - gotAt.get("late"));
        } finally {
            cons.close();
            prod.close();
        }
    }

    /** Digest ACLs made through Curator keep out clients without the credentials and let the owner in. */
    static void aclDigest(Ctx c) throws Exception {
        String base = c.path("");
        String path = c.path("secret");
        CuratorFramework alice = CuratorFrameworkFactory.builder()
                .connectString(c.cluster.connectString())
                .sessionTimeoutMs(Ctx.SESSION_MS)
                .retryPolicy(new ExponentialBackoffRetry(50, 3))
                .authorization("digest", bytes("alice:secret"))
                .build();
        c.track(alice);
        alice.start();
        Check.that(alice.blockUntilConnected(20, TimeUnit.SECONDS), "alice did not connect");
        CuratorFramework anon = c.curator();
        alice.create().forPath(base);
        alice.create().withACL(ZooDefs.Ids.CREATOR_ALL_ACL).forPath(path, bytes("top"));
        String digest = DigestAuthenticationProvider.generateDigest("alice:secret");
        Stat st = new Stat();
        List<ACL> acl = alice.getACL().storingStatIn(st).forPath(path);
        Check.eq(List.of(new ACL(ZooDefs.Perms.ALL, new Id("digest", digest))), acl, "ACL stored for the creator");
        Ctx.sync(anon, path); // alice may be connected to another member
        Check.throwsType(KeeperException.NoAuthException.class, "anonymous getData", () -> anon.getData().forPath(path));
        Check.throwsType(KeeperException.NoAuthException.class, "anonymous setData", () -> anon.setData().forPath(path, bytes("x")));
        Check.throwsType(KeeperException.NoAuthException.class, "anonymous getACL", () -> anon.getACL().forPath(path));
        Check.eq("top", str(alice.getData().forPath(path)), "alice reads her node");
        Check.eq(0, st.getAversion(), "aversion before setACL");
        alice.setACL().withVersion(0).withACL(List.of(
                new ACL(ZooDefs.Perms.ALL, new Id("digest", digest)),
                new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE))).forPath(path);
        Ctx.sync(anon, path);
        Check.eq(1, anon.checkExists().forPath(path).getAversion(), "aversion after setACL");
        Check.eq("top", str(anon.getData().forPath(path)), "anonymous read after READ for anyone");
        Check.throwsType(KeeperException.NoAuthException.class, "anonymous setData with READ only",
                () -> anon.setData().forPath(path, bytes("x")));
        Check.throwsType(KeeperException.BadVersionException.class, "setACL with a stale aversion",
                () -> alice.setACL().withVersion(0).withACL(ZooDefs.Ids.OPEN_ACL_UNSAFE).forPath(path));
        anon.getZookeeperClient().getZooKeeper().addAuthInfo("digest", bytes("alice:secret"));
        anon.setData().forPath(path, bytes("after-addauth"));
        Ctx.sync(alice, path);
        Check.eq("after-addauth", str(alice.getData().forPath(path)), "write after addauth");
    }
}
