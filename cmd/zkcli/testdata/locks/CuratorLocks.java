import java.util.function.Function;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.KeeperException;

/**
 * Queues Curator lock contenders for zkcli's lock-view test: a mutex with
 * three contenders and a read/write lock with reader, reader, writer,
 * reader. Each contender has its own session and acquires on a daemon
 * thread; the next starts once the previous one's node exists. Prints
 * "contender PATH 0xSESSION" per contender in order, then "ready", and
 * holds everything until stdin closes.
 */
public class CuratorLocks {
    static final java.util.List<CuratorFramework> clients = new java.util.ArrayList<>();

    static void queue(String hosts, String path, Function<CuratorFramework, InterProcessLock> make, int expected) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(hosts, 10000, 5000, new RetryOneTime(100));
        c.start();
        c.blockUntilConnected();
        clients.add(c);
        InterProcessLock lock = make.apply(c);
        System.out.printf("contender %s 0x%x%n", path, c.getZookeeperClient().getZooKeeper().getSessionId());
        System.out.flush();
        Thread t = new Thread(() -> {
            try {
                lock.acquire();
            } catch (Exception e) {
                // the session ends when the test is done
            }
        });
        t.setDaemon(true);
        t.start();
        while (true) {
            try {
                if (c.getChildren().forPath(path).size() >= expected) {
                    return;
                }
            } catch (KeeperException.NoNodeException e) {
                // the recipe has not created the lock path yet
            }
            Thread.sleep(20);
        }
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        for (int i = 0; i < 3; i++) {
            queue(hosts, "/curator/lock", c -> new InterProcessMutex(c, "/curator/lock"), i + 1);
        }
        String[] kinds = {"read", "read", "write", "read"};
        for (int i = 0; i < kinds.length; i++) {
            boolean read = kinds[i].equals("read");
            queue(hosts, "/curator/rw", c -> {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, "/curator/rw");
                return read ? rw.readLock() : rw.writeLock();
            }, i + 1);
        }
        System.out.println("ready");
        System.out.flush();
        while (System.in.read() != -1) {
        }
        for (CuratorFramework c : clients) {
            c.close();
        }
    }
}
