package zkdcompat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * FencingScenarios reads zkd's fencing tokens with Curator's stock getData and checks them as
 * docs/fencing.md shows a Java resource doing it: the JDK's Ed25519 (Java 15+) and a ByteBuffer, no zkd
 * code. Against ZooKeeper they check only that the feature is absent (/zookeeper/fencing is NoNode).
 */
final class FencingScenarios {
    private FencingScenarios() {}

    static final String KEY_PATH = "/zookeeper/fencing";

    /** register appends this class's scenarios to s, in run order. */
    static void register(List<Main.Scenario> s) {
        s.add(new Main.Scenario("fencing_stale_holder", 60_000, FencingScenarios::staleHolder));
    }

    /** Token is a verified token's content. */
    record Token(String lock, String node, long czxid, long session, long readZxid) { }

    /** publicKey reads the key zkd publishes at /zookeeper/fencing (JSON; public_key_spki is X.509 DER). */
    static PublicKey publicKey(CuratorFramework cf) throws Exception {
        String json = new String(cf.getData().forPath(KEY_PATH), StandardCharsets.UTF_8);
        Matcher m = Pattern.compile("\"public_key_spki\"\\s*:\\s*\"([^\"]+)\"").matcher(json);
        Check.that(m.find(), "no public_key_spki in %s", json);
        return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(Base64.getDecoder().decode(m.group(1))));
    }

    /** verify checks a token's Ed25519 signature and returns its fields; it throws on any flaw. */
    static Token verify(byte[] token, PublicKey key) throws Exception {
        String[] parts = new String(token, StandardCharsets.US_ASCII).trim().split("\\.");
        Check.that(parts.length == 3 && parts[0].equals("zkdf1"), "not a zkd fencing token");
        byte[] payload = Base64.getUrlDecoder().decode(parts[1]);
        Signature sig = Signature.getInstance("Ed25519");
        sig.initVerify(key);
        sig.update(payload);
        if (!sig.verify(Base64.getUrlDecoder().decode(parts[2]))) {
            throw new SecurityException("fencing token signature does not verify");
        }
        ByteBuffer b = ByteBuffer.wrap(payload); // big-endian
        byte[] magic = new byte[4];
        b.get(magic);
        Check.that(new String(magic, StandardCharsets.US_ASCII).equals("ZKDF") && b.get() == 1, "bad token header");
        b.position(b.position() + 8); // key id
        long czxid = b.getLong();
        long session = b.getLong();
        long readZxid = b.getLong();
        String lock = string(b);
        String node = string(b);
        Check.that(!b.hasRemaining(), "trailing bytes in token");
        return new Token(lock, node, czxid, session, readZxid);
    }

    private static String string(ByteBuffer b) {
        byte[] s = new byte[b.getInt()];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    /** FencedStore is a resource that keeps the highest czxid it accepted and refuses lower ones. */
    static final class FencedStore {
        private final PublicKey key;
        private long highest = Long.MIN_VALUE;
        final List<String> log = new ArrayList<>();

        FencedStore(PublicKey key) {
            this.key = key;
        }

        synchronized boolean write(byte[] token, String data) throws Exception {
            Token t = verify(token, key);
            if (t.czxid() < highest) {
                log.add("refused " + data);
                return false;
            }
            highest = t.czxid();
            log.add("ok " + data);
            return true;
        }
    }

    /** ownNode returns the child of lock that cf's session owns. */
    static String ownNode(CuratorFramework cf, String lock) throws Exception {
        long sid = cf.getZookeeperClient().getZooKeeper().getSessionId();
        for (String name : cf.getChildren().forPath(lock)) {
            Stat st = cf.checkExists().forPath(lock + "/" + name);
            if (st != null && st.getEphemeralOwner() == sid) {
                return lock + "/" + name;
            }
        }
        throw new AssertionError("no child of " + lock + " owned by 0x" + Long.toHexString(sid));
    }

    /**
     * Holder A takes an InterProcessMutex and reads its token; its connection goes silent (as a paused
     * process) until its session expires; B takes the lock and writes with its token; A's late write with
     * its old token is refused by the fenced store; B's next write is accepted.
     */
    static void staleHolder(Ctx c) throws Exception {
        CuratorFramework admin = c.curator();
        if (Main.target() == ServerProc.Target.ZOOKEEPER) {
            Check.throwsType(KeeperException.NoNodeException.class, "getData " + KEY_PATH,
                    () -> admin.getData().forPath(KEY_PATH));
            return;
        }
        Check.waitFor(20_000, "the fencing key", () -> {
            try {
                return admin.checkExists().forPath(KEY_PATH) != null;
            } catch (Exception e) {
                return false;
            }
        });
        FencedStore store = new FencedStore(publicKey(admin));
        String lock = c.path("lock");
        Proxy proxy = c.proxy(c.cluster.members.get(0));
        CuratorFramework a = c.curator(proxy.addr(), 2000, false);
        InterProcessMutex ma = new InterProcessMutex(a, lock);
        ma.acquire();
        String nodeA = ownNode(a, lock);
        byte[] tokA = a.getData().forPath(KEY_PATH + nodeA);
        Token ta = verify(tokA, publicKey(a));
        Check.eq(lock + "/" + ta.node(), nodeA, "token's lock node");
        Check.eq(a.getZookeeperClient().getZooKeeper().getSessionId(), ta.session(), "token's session");
        Check.that(store.write(tokA, "a1"), "A's first write refused");

        proxy.setBlackhole(true);
        CuratorFramework b = c.curator();
        InterProcessMutex mb = new InterProcessMutex(b, lock);
        Check.that(mb.acquire(30, TimeUnit.SECONDS), "B never got the lock after A's session expired");
        byte[] tokB = b.getData().forPath(KEY_PATH + ownNode(b, lock));
        Token tb = verify(tokB, store.key);
        Check.that(tb.czxid() > ta.czxid(), "B's czxid 0x%x not above A's 0x%x", tb.czxid(), ta.czxid());
        Check.that(store.write(tokB, "b1"), "B's write refused");
        Check.that(!store.write(tokA, "a2"), "A's late write with its old token accepted");
        Check.that(store.write(tokB, "b2"), "B's second write refused");
        mb.release();
        proxy.setBlackhole(false);
        Check.eq(List.of("ok a1", "ok b1", "refused a2", "ok b2"), store.log, "store log");
        byte[] forged = tokB.clone();
        forged[forged.length - 3] = (byte) (forged[forged.length - 3] == 'A' ? 'B' : 'A');
        Check.throwsType(SecurityException.class, "a forged token", () -> verify(forged, store.key));
    }
}
