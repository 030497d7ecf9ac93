package zkdcompat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

/**
 * SecurityCheck runs Curator against one server secured the way a Java shop configures its clients:
 * the owner's client takes everything from system properties (a JAAS {@code Client} section through
 * {@code java.security.auth.login.config}, or {@code zookeeper.client.secure=true} with
 * {@code zookeeper.ssl.*} key and trust stores over ClientCnxnSocketNetty), so it authenticates as
 * {@code scheme:id}; the other client overrides some of those properties in its own ZKClientConfig
 * and so authenticates as someone else. The owner takes and releases an InterProcessMutex and does
 * ACL'd creates, reads, writes and a transaction under ACLs naming only itself; the other is refused
 * (NoAuth) on each. It prints "securitycheck: ok" and exits 0, or prints the failure and exits 1.
 *
 * <pre>
 * java … zkdcompat.SecurityCheck --connect HOST:PORT --scheme sasl|x509 --id OWNER --other-id OTHER
 *     [--other KEY=VALUE]…   (ZKClientConfig properties of the other client)
 * java … zkdcompat.SecurityCheck --connect HOST:PORT --probe
 * </pre>
 *
 * <p>With {@code --probe} it only starts one Curator client configured by the system properties and
 * reads "/": it prints "securitycheck: outcome ok [identities]" or "securitycheck: outcome" and the
 * class of what Curator threw, so that a test pins how an authentication failure ends for an
 * application, the same on zkd as on ZooKeeper.
 *
 * compat/zktls and compat/sasl start the servers (zkd and ZooKeeper 3.8, configured alike) and run
 * this with the JVM flags of each case; they compile it from this source tree.
 */
public final class SecurityCheck {
    private static final int SESSION_MS = 30_000;
    private static final String BASE = "/curator-security";

    private SecurityCheck() {}

    /** main parses the flags and runs the check. */
    public static void main(String[] args) {
        String connect = null;
        String scheme = null;
        String owner = null;
        String other = null;
        List<String[]> otherProps = new ArrayList<>();
        boolean probe = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--connect" -> connect = args[++i];
                case "--scheme" -> scheme = args[++i];
                case "--id" -> owner = args[++i];
                case "--other-id" -> other = args[++i];
                case "--other" -> otherProps.add(args[++i].split("=", 2));
                case "--probe" -> probe = true;
                default -> {
                    System.out.println("securitycheck: unknown flag " + args[i]);
                    System.exit(2);
                }
            }
        }
        if (connect != null && probe) {
            try {
                System.out.println("securitycheck: outcome " + probe(connect));
            } catch (Throwable e) {
                System.out.println("securitycheck: FAIL " + e);
                e.printStackTrace(System.out);
                System.out.flush();
                System.exit(1);
            }
            System.out.flush();
            System.exit(0);
        }
        if (connect == null || scheme == null || owner == null || other == null) {
            System.out.println("securitycheck: need --connect, --scheme, --id and --other-id");
            System.exit(2);
        }
        try {
            run(connect, scheme, owner, other, otherProps);
        } catch (Throwable e) {
            System.out.println("securitycheck: FAIL " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(1);
        }
        System.out.println("securitycheck: ok");
        System.out.flush();
        System.exit(0);
    }

    private static void run(String connect, String scheme, String owner, String other, List<String[]> otherProps)
            throws Exception {
        // A mutable list: ZooKeeper.validateACL asks it contains(null), which List.of refuses.
        List<ACL> mine = new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, new Id(scheme, owner))));
        ACLProvider onlyMine = new ACLProvider() {
            @Override
            public List<ACL> getDefaultAcl() {
                return mine;
            }

            @Override
            public List<ACL> getAclForPath(String path) {
                return mine;
            }
        };
        // The owner: everything from the system properties, as an application configures it.
        try (CuratorFramework a = start(connect, onlyMine, new ZKClientConfig())) {
            expectIdentity(a, scheme, owner);

            // InterProcessMutex: its lock nodes (and their container parents) carry the owner's ACL.
            String lockPath = BASE + "/lock";
            InterProcessMutex mutex = new InterProcessMutex(a, lockPath);
            Check.that(mutex.acquire(30, TimeUnit.SECONDS), "owner did not get the mutex %s", lockPath);
            Check.that(mutex.isAcquiredInThisProcess(), "mutex not held after acquire");
            List<String> nodes = a.getChildren().forPath(lockPath);
            Check.eq(1, nodes.size(), "lock nodes under " + lockPath + " while held");
            Check.eq(mine, a.getACL().forPath(lockPath + "/" + nodes.get(0)), "ACL of the lock node");
            mutex.release();
            Check.that(!mutex.isAcquiredInThisProcess(), "mutex still held after release");
            Check.eq(List.of(), a.getChildren().forPath(lockPath), "lock nodes after release");

            // ACL'd data: create, read, write, and a transaction, all under the owner's ACL.
            String data = BASE + "/data";
            a.create().withACL(mine).forPath(data, bytes("v1"));
            Check.eq("v1", str(a.getData().forPath(data)), "owner reads " + data);
            Check.eq(mine, a.getACL().forPath(data), "ACL of " + data);
            Stat st = a.setData().forPath(data, bytes("v2"));
            Check.eq(1, st.getVersion(), "version after the owner's setData");
            CuratorOp set = a.transactionOp().setData().forPath(data, bytes("v3"));
            CuratorOp child = a.transactionOp().create().withACL(mine).forPath(data + "/child", bytes("c"));
            a.transaction().forOperations(set, child);
            Check.eq("v3", str(a.getData().forPath(data)), "owner reads " + data + " after the transaction");

            // The other identity: the same system properties, some overridden in its own config.
            ZKClientConfig cfg = new ZKClientConfig();
            for (String[] kv : otherProps) {
                cfg.setProperty(kv[0], kv[1]);
            }
            try (CuratorFramework b = start(connect, null, cfg)) {
                expectIdentity(b, scheme, other);
                Check.throwsType(KeeperException.NoAuthException.class, "other reads " + data,
                        () -> b.getData().forPath(data));
                Check.throwsType(KeeperException.NoAuthException.class, "other writes " + data,
                        () -> b.setData().forPath(data, bytes("x")));
                Check.throwsType(KeeperException.NoAuthException.class, "other's transaction on " + data,
                        () -> b.transaction().forOperations(b.transactionOp().setData().forPath(data, bytes("x"))));
                Check.throwsType(KeeperException.NoAuthException.class, "other deletes " + data + "/child",
                        () -> b.delete().forPath(data + "/child"));
                InterProcessMutex theirs = new InterProcessMutex(b, lockPath);
                Check.throwsType(KeeperException.NoAuthException.class, "other takes the mutex " + lockPath,
                        () -> theirs.acquire(10, TimeUnit.SECONDS));
                Check.that(!theirs.isAcquiredInThisProcess(), "other holds the mutex");
            }
            Check.eq("v3", str(a.getData().forPath(data)), "owner reads " + data + " at the end");
            a.delete().deletingChildrenIfNeeded().forPath(BASE);
        }
    }

    /**
     * probe starts a Curator client from the system properties and reads "/": "ok" and the
     * connection's identities, or the simple name of what Curator threw.
     */
    private static String probe(String connect) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(SESSION_MS)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new RetryOneTime(500))
                .build();
        c.start();
        try {
            c.checkExists().forPath("/");
            List<String> got = new ArrayList<>();
            c.getZookeeperClient().getZooKeeper().whoAmI().forEach(ci -> got.add(ci.getAuthScheme() + ":" + ci.getUser()));
            return "ok " + got;
        } catch (Exception e) {
            return e.getClass().getSimpleName();
        } finally {
            c.close();
        }
    }

    /** start returns a started Curator client, connected, or fails after 60 s. */
    private static CuratorFramework start(String connect, ACLProvider acls, ZKClientConfig cfg)
            throws InterruptedException {
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(SESSION_MS)
                .connectionTimeoutMs(60_000)
                .retryPolicy(new RetryOneTime(500))
                .zkClientConfig(cfg);
        if (acls != null) {
            b.aclProvider(acls);
        }
        CuratorFramework c = b.build();
        c.start();
        if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) {
            c.close();
            throw new AssertionError("no connection to " + connect + " within 60 s");
        }
        return c;
    }

    /** expectIdentity fails unless the server knows c's connection as scheme:id (whoAmI). */
    private static void expectIdentity(CuratorFramework c, String scheme, String id) throws Exception {
        ZooKeeper z = c.getZookeeperClient().getZooKeeper();
        List<String> got = new ArrayList<>();
        z.whoAmI().forEach(ci -> got.add(ci.getAuthScheme() + ":" + ci.getUser()));
        Check.that(got.contains(scheme + ":" + id), "whoAmI: want %s:%s among %s", scheme, id, got);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String str(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
