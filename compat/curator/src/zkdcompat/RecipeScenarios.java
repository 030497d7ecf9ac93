package zkdcompat;

import static zkdcompat.LockScenarios.bytes;
import static zkdcompat.LockScenarios.str;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/** RecipeScenarios checks Curator's election, counter, barrier, queue, cache and node recipes. */
final class RecipeScenarios {
    private RecipeScenarios() {}

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("leader_latch", 60_000, RecipeScenarios::leaderLatch));
        s.add(new Main.Scenario("leader_selector", 60_000, RecipeScenarios::leaderSelector));
        s.add(new Main.Scenario("distributed_atomic_long", 90_000, RecipeScenarios::atomicLong));
        s.add(new Main.Scenario("shared_count", 30_000, RecipeScenarios::sharedCount));
        s.add(new Main.Scenario("distributed_barrier", 30_000, RecipeScenarios::barrier));
        s.add(new Main.Scenario("distributed_double_barrier", 30_000, RecipeScenarios::doubleBarrier));
        s.add(new Main.Scenario("distributed_queue", 60_000, RecipeScenarios::queue));
        s.add(new Main.Scenario("curator_cache", 30_000, RecipeScenarios::curatorCache));
        s.add(new Main.Scenario("persistent_node", 60_000, RecipeScenarios::persistentNode));
        s.add(new Main.Scenario("persistent_ttl_node", 60_000, RecipeScenarios::persistentTtlNode));
        s.add(new Main.Scenario("group_member", 30_000, RecipeScenarios::groupMember));
    }

    /** leaders returns the latches that think they lead. */
    static List<LeaderLatch> leaders(List<LeaderLatch> ls) {
        List<LeaderLatch> out = new ArrayList<>();
        for (LeaderLatch l : ls) {
            if (l.hasLeadership()) {
                out.add(l);
            }
        }
        return out;
    }

    /** Exactly one of three latches leads; every participant agrees who; leadership moves on close and on session end. */
    static void leaderLatch(Ctx c) throws Exception {
        String path = c.path("latch");
        List<CuratorFramework> cs = new ArrayList<>();
        List<LeaderLatch> ls = new ArrayList<>();
        Map<String, AtomicInteger> elected = new ConcurrentHashMap<>();
        for (int i = 0; i < 3; i++) {
            CuratorFramework cf = c.curator();
            String id = "p" + i;
            LeaderLatch l = new LeaderLatch(cf, path, id);
            elected.put(id, new AtomicInteger());
            l.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    elected.get(id).incrementAndGet();
                }

                @Override
                public void notLeader() { }
            });
            cs.add(cf);
            ls.add(l);
            l.start();
        }
        Check.waitFor(10_000, "a leader among 3 latches", () -> leaders(ls).size() == 1);
        LeaderLatch first = leaders(ls).get(0);
        // The listener runs after hasLeadership turns true.
        Check.waitFor(5_000, "isLeader call on the first leader", () -> elected.get(first.getId()).get() == 1);
        Check.waitFor(5_000, "every latch to name the leader", () -> {
            try {
                for (LeaderLatch l : ls) {
                    if (!first.getId().equals(l.getLeader().getId()) || l.getParticipants().size() != 3) {
                        return false;
                    }
                }
                return true;
            } catch (Exception e) {
                return false;
            }
        });
        Thread.sleep(300);
        Check.eq(1, leaders(ls).size(), "leaders after settling");
        Check.eq(first, leaders(ls).get(0), "leader after settling");

        // Leader steps down: exactly one of the other two takes over.
        int fi = ls.indexOf(first);
        first.close();
        List<LeaderLatch> rest = new ArrayList<>(ls);
        rest.remove(fi);
        Check.waitFor(10_000, "a new leader after close", () -> leaders(rest).size() == 1);
        LeaderLatch second = leaders(rest).get(0);
        Check.that(second.await(1, TimeUnit.SECONDS), "await on the new leader");
        Check.eq(2, second.getParticipants().size(), "participants after close");

        // Leader's session ends (client closed): the last latch takes over.
        int si = ls.indexOf(second);
        cs.get(si).close();
        rest.remove(second);
        LeaderLatch last = rest.get(0);
        Check.that(last.await(10, TimeUnit.SECONDS), "last latch never led after the leader's session ended");
        Check.eq(1, last.getParticipants().size(), "participants after the leader's session ended");
        Check.eq(last.getId(), last.getLeader().getId(), "leader named by the last latch");
        last.close();
    }

    /** Three auto-requeued selectors take turns, never two at once, in rotation. */
    static void leaderSelector(Ctx c) throws Exception {
        String path = c.path("sel");
        AtomicInteger active = new AtomicInteger();
        AtomicInteger overlap = new AtomicInteger();
        List<String> turns = Collections.synchronizedList(new ArrayList<>());
        List<LeaderSelector> sels = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String id = "s" + i;
            LeaderSelector sel = new LeaderSelector(c.curator(), path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework client) throws Exception {
                    if (active.incrementAndGet() != 1) {
                        overlap.incrementAndGet();
                    }
                    try {
                        turns.add(id);
                        Thread.sleep(50);
                    } finally {
                        active.decrementAndGet();
                    }
                }
            });
            sel.setId(id);
            sel.autoRequeue();
            sels.add(sel);
        }
        for (LeaderSelector s : sels) {
            s.start();
        }
        Check.waitFor(30_000, "12 leadership turns", () -> turns.size() >= 12);
        for (LeaderSelector s : sels) {
            s.close();
        }
        Check.eq(0, overlap.get(), "turns that overlapped another leader's");
        List<String> t;
        synchronized (turns) {
            t = new ArrayList<>(turns.subList(0, 12));
        }
        // Once all three queue, requeued selectors go to the back: from the
        // fourth turn on each window of three holds every id once.
        for (int i = 3; i + 3 <= t.size(); i++) {
            Check.eq(3, new HashSet<>(t.subList(i, i + 3)).size(), "distinct leaders in turns " + i + ".." + (i + 2) + " of " + t);
        }
    }

    /** Concurrent optimistic increments from four clients neither lose nor repeat a value; compareAndSet checks the old value. */
    static void atomicLong(Ctx c) throws Exception {
        String path = c.path("long");
        int clients = 4;
        int threads = 2;
        int rounds = 20;
        Set<Long> seen = ConcurrentHashMap.newKeySet();
        AtomicInteger dups = new AtomicInteger();
        List<Future<Void>> fs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework cf = c.curator();
            for (int t = 0; t < threads; t++) {
                DistributedAtomicLong al = new DistributedAtomicLong(cf, path, new RetryNTimes(10_000, 2));
                fs.add(c.go(() -> {
                    for (int r = 0; r < rounds; r++) {
                        AtomicValue<Long> v;
                        do {
                            v = al.increment();
                        } while (!v.succeeded());
                        Check.eq(v.preValue() + 1, (long) v.postValue(), "post value of an increment");
                        if (!seen.add(v.postValue())) {
                            dups.incrementAndGet();
                        }
                    }
                }));
            }
        }
        for (Future<Void> f : fs) {
            f.get(80, TimeUnit.SECONDS);
        }
        long want = (long) clients * threads * rounds;
        Check.eq(0, dups.get(), "increments that returned an already-returned value");
        CuratorFramework reader = c.curator();
        DistributedAtomicLong al = new DistributedAtomicLong(reader, path, new RetryNTimes(3, 10));
        Ctx.sync(reader, path); // the last increments went through other clients, perhaps other members
        Check.eq(want, al.get().postValue(), "value after all increments");
        Check.eq(want, (long) seen.size(), "distinct increment results");
        Check.that(al.compareAndSet(want, 500L).succeeded(), "compareAndSet with the current value failed");
        Check.that(!al.compareAndSet(want, 600L).succeeded(), "compareAndSet with a stale value succeeded");
        Check.eq(500L, al.get().postValue(), "value after compareAndSet");
    }

    /** A shared count is seeded once, propagates to other clients, and rejects a write based on a stale version. */
    static void sharedCount(Ctx c) throws Exception {
        String path = c.path("count");
        SharedCount a = new SharedCount(c.curator(), path, 10);
        CuratorFramework bc = c.curator();
        SharedCount b = new SharedCount(bc, path, 99);
        List<Integer> heard = Collections.synchronizedList(new ArrayList<>());
        a.start();
        // b's start reads the count a created, perhaps through another member.
        Ctx.sync(bc, path);
        b.start();
        b.addListener(new SharedCountListener() {
            @Override
            public void countHasChanged(SharedCountReader r, int n) {
                heard.add(n);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState st) { }
        });
        try {
            Check.eq(10, a.getCount(), "first client's count");
            Check.eq(10, b.getCount(), "second client's count (its seed must be ignored)");
            a.setCount(11);
            Check.waitFor(5_000, "second client to see 11", () -> b.getCount() == 11 && heard.contains(11));
            VersionedValue<Integer> stale = b.getVersionedValue();
            a.setCount(12);
            Check.that(!b.trySetCount(stale, 13), "trySetCount with a stale version succeeded");
            Check.waitFor(5_000, "second client to see 12", () -> b.getCount() == 12);
            Check.that(b.trySetCount(b.getVersionedValue(), 13), "trySetCount with the current version failed");
            Check.waitFor(5_000, "first client to see 13", () -> a.getCount() == 13);
        } finally {
            a.close();
            b.close();
        }
    }

    /** Waiters block while the barrier is set and all go on when it is removed. */
    static void barrier(Ctx c) throws Exception {
        String path = c.path("barrier");
        DistributedBarrier setter = new DistributedBarrier(c.curator(), path);
        setter.setBarrier();
        // Each waiter below checks the barrier the setter made, perhaps through another member.
        CuratorFramework early = c.curator();
        Ctx.sync(early, path);
        Check.that(!new DistributedBarrier(early, path).waitOnBarrier(300, TimeUnit.MILLISECONDS),
                "waitOnBarrier returned true while the barrier is set");
        CountDownLatch through = new CountDownLatch(3);
        for (int i = 0; i < 3; i++) {
            CuratorFramework wc = c.curator();
            Ctx.sync(wc, path);
            DistributedBarrier w = new DistributedBarrier(wc, path);
            c.go(() -> {
                w.waitOnBarrier();
                through.countDown();
            });
        }
        Thread.sleep(500);
        Check.eq(3L, through.getCount(), "waiters still blocked while the barrier is set");
        setter.removeBarrier();
        Check.that(through.await(10, TimeUnit.SECONDS), "waiters not released by removeBarrier");
        Check.that(new DistributedBarrier(c.curator(), path).waitOnBarrier(1, TimeUnit.SECONDS),
                "waitOnBarrier blocked on a removed barrier");
    }

    /** Nobody enters a double barrier of three until the third arrives, and nobody leaves until all leave. */
    static void doubleBarrier(Ctx c) throws Exception {
        String path = c.path("dbl");
        int n = 3;
        AtomicInteger entered = new AtomicInteger();
        List<Future<Void>> fs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int id = i;
            DistributedDoubleBarrier b = new DistributedDoubleBarrier(c.curator(), path, n);
            if (i == n - 1) {
                Thread.sleep(500);
                Check.eq(0, entered.get(), "members through enter() before the last arrived");
            }
            fs.add(c.go(() -> {
                Check.that(b.enter(15, TimeUnit.SECONDS), "enter timed out");
                entered.incrementAndGet();
                if (id == 0) {
                    Thread.sleep(300);
                }
                Check.that(b.leave(15, TimeUnit.SECONDS), "leave timed out");
            }));
        }
        for (Future<Void> f : fs) {
            f.get(25, TimeUnit.SECONDS);
        }
        Check.eq(n, entered.get(), "members through enter()");
        // Curator 5.4's leave() does not wait for the other members (ZooKeeper 3.8 shows the same), so
        // only check that every member's node is gone.
        CuratorFramework any = c.curator();
        Ctx.sync(any, path); // the members left through their own clients, perhaps other members
        List<String> left = new ArrayList<>();
        try {
            left.addAll(any.getChildren().forPath(path));
        } catch (KeeperException.NoNodeException e) {
            // Curator made the barrier a container; the server may have swept it already.
        }
        left.remove("ready");
        Check.eq(List.of(), left, "member nodes after every member left");
        DistributedDoubleBarrier lonely = new DistributedDoubleBarrier(c.curator(), c.path("dbl2"), 2);
        Check.that(!lonely.enter(300, TimeUnit.MILLISECONDS), "entered a barrier of two alone");
    }

    /** STRINGS serializes queue items as UTF-8 text. */
    static final QueueSerializer<String> STRINGS = new QueueSerializer<>() {
        @Override
        public byte[] serialize(String item) {
            return bytes(item);
        }

        @Override
        public String deserialize(byte[] b) {
            return str(b);
        }
    };

    /** collector is a queue consumer appending every message to out. */
    static QueueConsumer<String> collector(List<String> out) {
        return new QueueConsumer<>() {
            @Override
            public void consumeMessage(String m) {
                out.add(m);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState st) { }
        };
    }

    /** Items put by a producer are consumed once each by competing consumers, and in order by a single consumer. */
    static void queue(Ctx c) throws Exception {
        // Two competing consumers, lock-safe mode.
        String path = c.path("q");
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        List<DistributedQueue<String>> qs = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            DistributedQueue<String> q = QueueBuilder.builder(c.curator(), collector(got), STRINGS, path)
                    .lockPath(c.path("qlock")).buildQueue();
            q.start();
            qs.add(q);
        }
        DistributedQueue<String> producer = QueueBuilder.builder(c.curator(), null, STRINGS, path).buildQueue();
        producer.start();
        qs.add(producer);
        int n = 40;
        for (int i = 0; i < n; i++) {
            producer.put("item-" + i);
        }
        Check.waitFor(20_000, n + " items consumed", () -> got.size() >= n);
        Thread.sleep(300);
        Map<String, Integer> counts = new HashMap<>();
        synchronized (got) {
            for (String s : got) {
                counts.merge(s, 1, Integer::sum);
            }
        }
        for (int i = 0; i < n; i++) {
            Check.eq(1, counts.getOrDefault("item-" + i, 0), "times item-" + i + " was consumed");
        }
        Check.eq(n, got.size(), "items consumed");

        // One consumer sees the producer's order.
        String path2 = c.path("fifo");
        List<String> seq = Collections.synchronizedList(new ArrayList<>());
        DistributedQueue<String> prod2 = QueueBuilder.builder(c.curator(), null, STRINGS, path2).buildQueue();
        prod2.start();
        qs.add(prod2);
        List<String> want = new ArrayList<>();
        for (int i = 0; i < 15; i++) {
            prod2.put("m" + i);
            want.add("m" + i);
        }
        CuratorFramework cc2 = c.curator();
        Ctx.sync(cc2, path2); // the consumer's first listing reads the producer's items
        DistributedQueue<String> cons2 = QueueBuilder.builder(cc2, collector(seq), STRINGS, path2).buildQueue();
        cons2.start();
        qs.add(cons2);
        Check.waitFor(20_000, "15 items consumed in order", () -> seq.size() >= 15);
        Check.eq(want, new ArrayList<>(seq), "consumption order");
        for (DistributedQueue<String> q : qs) {
            q.close();
        }
    }

    /** CuratorCache loads a subtree, then follows creates, changes and deletes made by another client. */
    static void curatorCache(Ctx c) throws Exception {
        String base = c.path("tree");
        CuratorFramework w = c.curator();
        w.create().creatingParentsIfNeeded().forPath(base + "/a", bytes("1"));
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch init = new CountDownLatch(1);
        CuratorFramework cr = c.curator();
        Ctx.sync(cr, base); // the cache's initial load reads w's /a, perhaps through another member
        CuratorCache cache = CuratorCache.build(cr, base);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(n -> events.add("create " + n.getPath() + " " + str(n.getData())))
                .forChanges((o, n) -> events.add("change " + n.getPath() + " " + str(o.getData()) + "->" + str(n.getData())))
                .forDeletes(o -> events.add("delete " + o.getPath()))
                .forInitialized(init::countDown)
                .build());
        cache.start();
        try {
            Check.that(init.await(10, TimeUnit.SECONDS), "cache never initialized");
            Optional<ChildData> a = cache.get(base + "/a");
            Check.that(a.isPresent(), "cache lacks %s after initializing", base + "/a");
            Check.eq("1", str(a.get().getData()), "cached data of /a");
            synchronized (events) {
                events.clear();
            }
            w.create().forPath(base + "/b", bytes("x"));
            w.create().forPath(base + "/b/c", bytes("y"));
            // Curator re-reads a created node before it reports it; a node deleted before that
            // read is never reported at all, so wait for /b/c first.
            Check.waitFor(10_000, () -> "create of /b/c, have " + events,
                    () -> events.contains("create " + base + "/b/c y"));
            w.setData().forPath(base + "/a", bytes("2"));
            w.delete().forPath(base + "/b/c");
            // Curator reports a change only after re-reading the node, so only the
            // order of events on one path is fixed.
            Map<String, List<String>> want = new HashMap<>();
            want.put(base + "/a", List.of("change " + base + "/a 1->2"));
            want.put(base + "/b", List.of("create " + base + "/b x"));
            want.put(base + "/b/c", List.of("create " + base + "/b/c y", "delete " + base + "/b/c"));
            try {
                Check.waitFor(10_000, "4 cache events", () -> events.size() >= 4);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; have " + events + "; server's watches by path (wchp):\n"
                        + c.cluster.members.get(0).fourLetter("wchp"));
            }
            Thread.sleep(200);
            Map<String, List<String>> got = new HashMap<>();
            synchronized (events) {
                for (String e : events) {
                    got.computeIfAbsent(e.split(" ")[1], k -> new ArrayList<>()).add(e);
                }
            }
            Check.eq(want, got, "cache events by path");
            Check.eq("2", str(cache.get(base + "/a").get().getData()), "cached data of /a after the change");
            Check.that(cache.get(base + "/b/c").isEmpty(), "cache still has the deleted /b/c");
            Stat st = w.checkExists().forPath(base + "/b");
            // The cache keeps /b's stat from its create (child events do not refresh a parent).
            Stat cached = cache.get(base + "/b").get().getStat();
            Check.eq(st.getCzxid(), cached.getCzxid(), "cached czxid of /b");
            Check.eq(st.getMzxid(), cached.getMzxid(), "cached mzxid of /b");
            Check.eq(st.getCtime(), cached.getCtime(), "cached ctime of /b");
        } finally {
            cache.close();
        }
    }

    /** An ephemeral PersistentNode comes back after another client deletes it and after its session is killed. */
    static void persistentNode(Ctx c) throws Exception {
        String path = c.path("pn");
        CuratorFramework owner = c.curator();
        CuratorFramework other = c.curator();
        other.create().forPath(c.path(""));
        PersistentNode pn = new PersistentNode(owner, CreateMode.EPHEMERAL, false, path, bytes("v1"));
        pn.start();
        try {
            Check.that(pn.waitForInitialCreate(10, TimeUnit.SECONDS), "initial create");
            long sid = owner.getZookeeperClient().getZooKeeper().getSessionId();
            Ctx.sync(other, path); // the owner may have created it through another member
            Stat st = other.checkExists().forPath(path);
            Check.that(st != null, "node missing after the initial create");
            Check.eq(sid, st.getEphemeralOwner(), "ephemeralOwner");

            other.delete().forPath(path);
            Check.waitFor(10_000, "node to come back after a delete", () -> exists(other, path));
            pn.setData(bytes("v2"));
            Check.waitFor(5_000, "data v2", () -> "v2".equals(dataOf(other, path)));

            c.killSession(owner.getZookeeperClient().getZooKeeper(), c.cluster.connectString());
            Check.waitFor(20_000, "node to come back under a new session", () -> {
                try {
                    Stat s = other.checkExists().forPath(path);
                    return s != null && s.getEphemeralOwner() != sid && s.getEphemeralOwner() != 0;
                } catch (Exception e) {
                    return false;
                }
            });
            Check.eq(owner.getZookeeperClient().getZooKeeper().getSessionId(),
                    other.checkExists().forPath(path).getEphemeralOwner(), "ephemeralOwner after the session was killed");
            Check.eq("v2", dataOf(other, path), "data after re-creation");
        } finally {
            pn.close();
        }
        Ctx.sync(other, path);
        Check.that(!exists(other, path), "node still there after close");
    }

    /** A PersistentTtlNode lives while its owner touches it and is swept once the owner stops. */
    static void persistentTtlNode(Ctx c) throws Exception {
        String path = c.path("ttl");
        CuratorFramework owner = c.curator();
        CuratorFramework other = c.curator();
        long ttl = 1000;
        PersistentTtlNode n = new PersistentTtlNode(owner, path, ttl, bytes("hello"));
        n.start();
        boolean closed = false;
        try {
            Check.that(n.waitForInitialCreate(10, TimeUnit.SECONDS), "initial create");
            Ctx.sync(other, path);
            Check.eq("hello", dataOf(other, path), "data of the TTL node");
            String touchPath = path + "/" + PersistentTtlNode.DEFAULT_CHILD_NODE_NAME;
            Check.waitFor(5_000, "touch child " + touchPath, () -> exists(other, touchPath));
            Stat touch = other.checkExists().forPath(touchPath);
            Check.eq(0L, touch.getEphemeralOwner(), "ephemeralOwner of a TTL node as clients see it");
            Stat parent = other.checkExists().forPath(path);
            Check.eq(0L, parent.getEphemeralOwner(), "ephemeralOwner of a container as clients see it");
            Thread.sleep(3 * ttl);
            Check.that(exists(other, path), "TTL node swept while its owner kept touching it");
            n.close();
            closed = true;
            long t0 = System.nanoTime();
            Check.waitFor(15_000, "TTL node and its container to be swept", () -> !exists(other, path));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            Check.that(ms >= ttl / 2, "swept %d ms after the last touch, TTL %d ms", ms, ttl);
        } finally {
            if (!closed) {
                n.close();
            }
        }
    }

    /** Group members see each other's ids and payloads, data updates, and departures. */
    static void groupMember(Ctx c) throws Exception {
        String path = c.path("group");
        List<GroupMember> ms = new ArrayList<>();
        Map<String, String> want = new HashMap<>();
        try {
            for (int i = 0; i < 3; i++) {
                GroupMember m = new GroupMember(c.curator(), path, "m" + i, bytes("p" + i));
                m.start();
                ms.add(m);
                want.put("m" + i, "p" + i);
            }
            Check.waitFor(10_000, "every member to see all three", () -> {
                for (GroupMember m : ms) {
                    if (!want.equals(members(m))) {
                        return false;
                    }
                }
                return true;
            });
            ms.get(1).setThisData(bytes("q1"));
            want.put("m1", "q1");
            Check.waitFor(10_000, "member 0 to see m1's new data", () -> want.equals(members(ms.get(0))));
            ms.get(2).close();
            want.remove("m2");
            Check.waitFor(10_000, "member 0 to see m2 leave", () -> want.equals(members(ms.get(0))));
        } finally {
            for (GroupMember m : ms) {
                m.close();
            }
        }
    }

    /** members returns m's view of the group, payloads decoded. */
    static Map<String, String> members(GroupMember m) {
        Map<String, String> out = new HashMap<>();
        m.getCurrentMembers().forEach((k, v) -> out.put(k, str(v)));
        return out;
    }

    /** exists reports whether path exists, false on any error. */
    static boolean exists(CuratorFramework cf, String path) {
        try {
            return cf.checkExists().forPath(path) != null;
        } catch (Exception e) {
            return false;
        }
    }

    /** dataOf returns path's data as text, or null on any error. */
    static String dataOf(CuratorFramework cf, String path) {
        try {
            return str(cf.getData().forPath(path));
        } catch (Exception e) {
            return null;
        }
    }
}
