package zkdcompat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/**
 * Ctx is one scenario's world: the shared cluster, a private base path, and every client, thread,
 * proxy and extra cluster the scenario makes, all closed by close() whether the scenario passed or not.
 */
final class Ctx implements AutoCloseable {
    /** Default session timeout in ms asked by clients (tickTime 500 clamps to [1000, 10000]). */
    static final int SESSION_MS = 8000;

    final String name;
    final Cluster cluster;
    private final List<AutoCloseable> closers = new ArrayList<>();
    private final List<Cluster> extraClusters = new ArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r);
        t.setDaemon(true);
        return t;
    });

    Ctx(String name, Cluster cluster) {
        this.name = name;
        this.cluster = cluster;
    }

    /** path returns /<scenario>/<rel>, or the base path for an empty rel. */
    String path(String rel) {
        return rel.isEmpty() ? "/" + name : "/" + name + "/" + rel;
    }

    /**
     * sync makes cf's next read of path see every write acknowledged to any client before the call:
     * in an ensemble another client may have written through another member, which ZooKeeper lets a
     * follower show late until a sync.
     */
    static void sync(CuratorFramework cf, String path) throws Exception {
        sync(cf.getZookeeperClient().getZooKeeper(), path);
    }

    /** sync is sync(CuratorFramework, String) for a plain ZooKeeper client. */
    static void sync(ZooKeeper z, String path) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        int[] rc = {0};
        z.sync(path, (code, p, c) -> {
            rc[0] = code;
            done.countDown();
        }, null);
        Check.that(done.await(20, TimeUnit.SECONDS), "sync %s timed out", path);
        Check.eq(0, rc[0], "sync " + path + " result");
    }

    /** curator returns a started Curator client of the shared cluster, connected. */
    CuratorFramework curator() throws InterruptedException {
        return curator(cluster.connectString(), SESSION_MS);
    }

    /** curator returns a started Curator client of connect with the given session timeout, connected. */
    CuratorFramework curator(String connect, int sessionMs) throws InterruptedException {
        return curator(connect, sessionMs, true);
    }

    /**
     * curator returns a started Curator client of connect, connected. With ensembleTracker false the
     * client never swaps its connect string for the members listed in /zookeeper/config, which a
     * client behind a Proxy must not do (in an ensemble it would bypass the proxy).
     */
    CuratorFramework curator(String connect, int sessionMs, boolean ensembleTracker) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .ensembleTracker(ensembleTracker)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(50, 29, 500))
                .build();
        synchronized (closers) {
            closers.add(c);
        }
        c.start();
        Check.that(c.blockUntilConnected(20, TimeUnit.SECONDS), "curator did not connect to %s", connect);
        return c;
    }

    /** zk returns a plain ZooKeeper client of the shared cluster, connected. */
    ZooKeeper zk() throws IOException, InterruptedException {
        return zk(cluster.connectString(), SESSION_MS, e -> { });
    }

    /** zk returns a plain ZooKeeper client of connect whose default watcher is w, connected. */
    ZooKeeper zk(String connect, int sessionMs, Watcher w) throws IOException, InterruptedException {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper z = new ZooKeeper(connect, sessionMs, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
            w.process(e);
        });
        synchronized (closers) {
            closers.add(z::close);
        }
        Check.that(connected.await(20, TimeUnit.SECONDS), "zookeeper client did not connect to %s", connect);
        return z;
    }

    /** proxy returns a proxy in front of member s, closed with the scenario. */
    Proxy proxy(ServerProc s) throws IOException {
        Proxy p = new Proxy(s.port);
        synchronized (closers) {
            closers.add(p);
        }
        return p;
    }

    /** newCluster starts a private cluster (for crash tests or other config), stopped with the scenario. */
    Cluster newCluster(String suffix, int members, ServerProc.Options opts) throws IOException, InterruptedException {
        Cluster c = Cluster.start(Main.target(), Main.workDir(), name + "-" + suffix, members, opts);
        synchronized (extraClusters) {
            extraClusters.add(c);
        }
        return c;
    }

    /** extraLogs returns the log tails of the private clusters. */
    String extraLogs() {
        StringBuilder sb = new StringBuilder();
        synchronized (extraClusters) {
            for (Cluster c : extraClusters) {
                sb.append(c.logTails());
            }
        }
        return sb.toString();
    }

    /** track closes cf with the scenario. */
    void track(CuratorFramework cf) {
        synchronized (closers) {
            closers.add(cf);
        }
    }

    /** Supplier is a value-returning body that may throw. */
    interface Supplier<T> {
        T get() throws Exception;
    }

    /** go1 runs body on a pool thread and returns its result through the Future. */
    <T> Future<T> go1(Supplier<T> body) {
        return pool.submit(body::get);
    }

    /** go runs body on a pool thread; its Future rethrows what the body threw. */
    Future<Void> go(Check.Thrower body) {
        return pool.submit(() -> {
            body.run();
            return null;
        });
    }

    /**
     * killSession ends victim's session from the server side: a second connection attaches to the
     * same session id and password (the server drops the victim's connection) and closes it, so the
     * victim later learns that its session expired.
     */
    void killSession(ZooKeeper victim, String connect) throws IOException, InterruptedException {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper z = new ZooKeeper(connect, SESSION_MS, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        }, victim.getSessionId(), victim.getSessionPasswd());
        try {
            Check.that(connected.await(20, TimeUnit.SECONDS), "session takeover did not connect");
            Check.eq(victim.getSessionId(), z.getSessionId(), "taken-over session id");
        } finally {
            z.close();
        }
    }

    @Override
    public void close() {
        pool.shutdownNow();
        List<AutoCloseable> cs;
        synchronized (closers) {
            cs = new ArrayList<>(closers);
            closers.clear();
        }
        for (int i = cs.size() - 1; i >= 0; i--) {
            try {
                cs.get(i).close();
            } catch (Exception ignored) {
                // best effort
            }
        }
        synchronized (extraClusters) {
            for (Cluster c : extraClusters) {
                try {
                    c.stop();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
