package zkdcompat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.zookeeper.ZooKeeper;

/**
 * Cluster is the set of server processes one scenario talks to: a standalone server (members == 1) or
 * an ensemble whose members list each other in server.N lines. Ensemble mode is the hook for zkd's
 * issue 3; with target zookeeper it runs QuorumPeerMain.
 */
final class Cluster {
    final List<ServerProc> members;

    private Cluster(List<ServerProc> members) {
        this.members = members;
    }

    /** start creates and starts a cluster of n members under base/name and waits until all are ready. */
    static Cluster start(ServerProc.Target target, Path base, String name, int n, ServerProc.Options opts)
            throws IOException, InterruptedException {
        List<ServerProc> ms = n == 1
                ? List.of(ServerProc.standalone(target, base, name, opts))
                : ServerProc.ensemble(target, base, name, n, opts);
        Cluster c = new Cluster(ms);
        try {
            for (ServerProc m : ms) {
                m.startAsync();
            }
            for (ServerProc m : ms) {
                m.awaitReady(90_000);
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            c.stop();
            throw e;
        }
        return c;
    }

    /** connectString lists every member's client address. */
    String connectString() {
        List<String> a = new ArrayList<>();
        for (ServerProc m : members) {
            a.add(m.addr());
        }
        return String.join(",", a);
    }

    private static final Pattern REMOTE = Pattern.compile("remoteserver:[^ ]*?:(\\d+)");

    /**
     * memberOf returns the member a connected ZooKeeper handle talks to, read from the handle's
     * toString (which names the remote address), or null when it is not connected.
     */
    ServerProc memberOf(ZooKeeper zk) {
        Matcher m = REMOTE.matcher(zk.toString());
        if (!m.find()) {
            return null;
        }
        int port = Integer.parseInt(m.group(1));
        for (ServerProc s : members) {
            if (s.port == port) {
                return s;
            }
        }
        return null;
    }

    /** stop stops every member that still runs. */
    void stop() throws InterruptedException {
        for (ServerProc m : members) {
            m.stop();
        }
    }

    /** logTails concatenates the tail of every member's log. */
    String logTails() {
        StringBuilder sb = new StringBuilder();
        for (ServerProc m : members) {
            sb.append("--- ").append(m.target).append(' ').append(m.addr()).append(" log ").append(m.log).append('\n');
            sb.append(m.logTail()).append('\n');
        }
        return sb.toString();
    }
}
