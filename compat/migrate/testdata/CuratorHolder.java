import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

/**
 * A Curator InterProcessMutex contender for the live migration test.
 * Arguments: connection string, lock path, guard path (an existing node).
 * Prints "session ID" (decimal), then takes the mutex and prints
 * "acquired NODE CZXID". Then obeys stdin, a command a line:
 * "check" prints "checked SESSION OWNER HELD MZXID": its session id now,
 * the ephemeralOwner of its lock node (0 when gone), whether the mutex is
 * acquired in this process, and the mzxid of a write to the guard path made
 * in one transaction with a check that its lock node exists;
 * "release" releases and prints "released"; "acquire" takes the mutex
 * again and prints "acquired NODE CZXID". A failure prints "error ...".
 * Stdin's end closes the client.
 */
public class CuratorHolder {
    static CuratorFramework client;
    static InterProcessMutex mutex;
    static String lockPath;
    static String node;

    /** ownNode finds the participant node this session owns. */
    static String ownNode(long session) throws Exception {
        for (String p : mutex.getParticipantNodes()) {
            Stat st = client.checkExists().forPath(p);
            if (st != null && st.getEphemeralOwner() == session) {
                return p;
            }
        }
        throw new IllegalStateException("no node of " + lockPath + " is owned by session 0x" + Long.toHexString(session));
    }

    static void acquire() throws Exception {
        mutex.acquire();
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        node = ownNode(session);
        Stat st = client.checkExists().forPath(node);
        say("acquired " + node.substring(lockPath.length() + 1) + " " + st.getCzxid());
    }

    static void check(String guard) throws Exception {
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected within 60 s");
        }
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        Stat st = client.checkExists().forPath(node);
        long owner = st == null ? 0 : st.getEphemeralOwner();
        boolean held = mutex.isAcquiredInThisProcess();
        List<CuratorTransactionResult> res = client.transaction().forOperations(
                client.transactionOp().check().forPath(node),
                client.transactionOp().setData().forPath(guard, ("written by 0x" + Long.toHexString(session)).getBytes(StandardCharsets.UTF_8)));
        say("checked " + session + " " + owner + " " + held + " " + res.get(1).getResultStat().getMzxid());
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        lockPath = args[1];
        // The session outlives the cutover gap; operations retry for a
        // minute while the client looks for a server.
        client = CuratorFrameworkFactory.newClient(args[0], 30000, 15000, new RetryNTimes(600, 100));
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            say("error not connected within 60 s");
            return;
        }
        say("session " + client.getZookeeperClient().getZooKeeper().getSessionId());
        mutex = new InterProcessMutex(client, lockPath);
        acquire();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String cmd; (cmd = in.readLine()) != null; ) {
            try {
                switch (cmd) {
                    case "check" -> check(args[2]);
                    case "release" -> {
                        mutex.release();
                        say("released");
                    }
                    case "acquire" -> acquire();
                    default -> say("error unknown command " + cmd);
                }
            } catch (Exception e) {
                say("error " + cmd + ": " + e);
            }
        }
        client.close();
    }
}
