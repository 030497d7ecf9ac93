package zkdcompat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * ServerProc is one server process (zkd or ZooKeeper 3.8) on a loopback port, started from a zoo.cfg
 * in its own directory. Every process it starts is appended to the run's pid file, so that the run
 * script can stop it by PID even if this JVM dies.
 */
final class ServerProc {
    /** Target names the server implementation under test. */
    enum Target { ZKD, ZOOKEEPER }

    /** Options of one server; fields are public for brevity, set before start. */
    static final class Options {
        /** tickTime in ms. */
        int tickTime = 500;
        /** extendedTypesEnabled (TTL nodes). */
        boolean extendedTypes = true;
        /** Container and TTL sweep interval in ms (znode.container.checkIntervalMs). */
        int containerCheckMs = 100;
        /** Extra zoo.cfg lines, key to value (written last). */
        Map<String, String> extra = new LinkedHashMap<>();
    }

    final Target target;
    final Path dir;
    final int port;
    final Path cfg;
    final Path log;
    private final Options opts;
    private final List<String> serverLines;
    private final int myid;
    private Process proc;

    private ServerProc(Target target, Path dir, int port, Options opts, List<String> serverLines, int myid) {
        this.target = target;
        this.dir = dir;
        this.port = port;
        this.opts = opts;
        this.serverLines = serverLines;
        this.myid = myid;
        this.cfg = dir.resolve("zoo.cfg");
        this.log = dir.resolve("server.log");
    }

    /** standalone returns a standalone server (not started) in a fresh directory under base. */
    static ServerProc standalone(Target target, Path base, String name, Options opts) throws IOException {
        Path dir = Files.createDirectories(base.resolve(name));
        return new ServerProc(target, dir, freePort(), opts, List.of(), 0);
    }

    /**
     * ensemble returns n members (not started) that know each other through server.N lines with
     * quorum, election and client ports on loopback, and a myid file each.
     */
    static List<ServerProc> ensemble(Target target, Path base, String name, int n, Options opts) throws IOException {
        int[] free = freePorts(3 * n);
        int[][] ports = new int[n][3];
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 3; j++) {
                ports[i][j] = free[3 * i + j];
            }
            lines.add("server." + (i + 1) + "=127.0.0.1:" + ports[i][1] + ":" + ports[i][2] + ";127.0.0.1:" + ports[i][0]);
        }
        List<ServerProc> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Path dir = Files.createDirectories(base.resolve(name + "-" + (i + 1)));
            out.add(new ServerProc(target, dir, ports[i][0], opts, lines, i + 1));
        }
        return out;
    }

    /** addr is the client address, 127.0.0.1:port. */
    String addr() {
        return "127.0.0.1:" + port;
    }

    /** pid is the running process's id, or -1. */
    long pid() {
        Process p = proc;
        return p == null ? -1 : p.pid();
    }

    /** alive reports whether the process runs. */
    boolean alive() {
        Process p = proc;
        return p != null && p.isAlive();
    }

    /** startAsync writes zoo.cfg (first start only) and launches the process without waiting. */
    void startAsync() throws IOException {
        if (alive()) {
            throw new IllegalStateException("server " + addr() + " already runs");
        }
        Path data = dir.resolve("data");
        Files.createDirectories(data);
        if (!Files.exists(cfg)) {
            Map<String, String> c = new LinkedHashMap<>();
            c.put("tickTime", Integer.toString(opts.tickTime));
            c.put("dataDir", data.toString());
            c.put("clientPort", Integer.toString(port));
            c.put("clientPortAddress", "127.0.0.1");
            c.put("4lw.commands.whitelist", "*");
            c.put("admin.enableServer", "false");
            c.put("extendedTypesEnabled", Boolean.toString(opts.extendedTypes));
            // zkd reads this key from zoo.cfg; ZooKeeper only as a -D JVM flag (below).
            c.put("znode.container.checkIntervalMs", Integer.toString(opts.containerCheckMs));
            c.putAll(opts.extra);
            if (!serverLines.isEmpty()) {
                c.put("initLimit", "10");
                c.put("syncLimit", "5");
                c.put("standaloneEnabled", "false");
                Files.writeString(data.resolve("myid"), myid + "\n");
            }
            StringBuilder sb = new StringBuilder();
            c.forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
            serverLines.forEach(l -> sb.append(l).append('\n'));
            Files.writeString(cfg, sb.toString());
        }
        List<String> argv = new ArrayList<>();
        if (target == Target.ZKD) {
            argv.add(Main.zkdBin());
            argv.add(cfg.toString());
        } else {
            argv.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            argv.add("-Xmx256m");
            argv.add("-XX:+UseSerialGC");
            argv.add("-XX:TieredStopAtLevel=1");
            argv.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
            argv.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
            argv.add("-Dzookeeper.jmx.log4j.disable=true");
            argv.add("-Dznode.container.checkIntervalMs=" + opts.containerCheckMs);
            argv.add("-cp");
            argv.add("/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/servlet-api.jar");
            argv.add(serverLines.isEmpty()
                    ? "org.apache.zookeeper.server.ZooKeeperServerMain"
                    : "org.apache.zookeeper.server.quorum.QuorumPeerMain");
            argv.add(cfg.toString());
        }
        Files.writeString(log, "=== start " + String.join(" ", argv) + "\n",
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        ProcessBuilder pb = new ProcessBuilder(argv).directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        proc = pb.start();
        Main.recordPid(proc.pid());
    }

    /** start launches the process and waits until it answers ruok with imok. */
    void start() throws IOException, InterruptedException {
        startAsync();
        awaitReady(60_000);
    }

    /** awaitReady polls ruok until imok, failing if the process exits or timeoutMs passes. */
    void awaitReady(long timeoutMs) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (System.nanoTime() < deadline) {
            if (!alive()) {
                throw new IOException(target + " on " + addr() + " exited during start; log " + log + ":\n" + logTail());
            }
            try {
                if ("imok".equals(fourLetter("ruok"))) {
                    return;
                }
            } catch (IOException ignored) {
                // not listening yet
            }
            Thread.sleep(50);
        }
        throw new IOException(target + " on " + addr() + " not ready after " + timeoutMs + " ms:\n" + logTail());
    }

    /** fourLetter sends a 4-letter word and returns the whole reply. */
    String fourLetter(String word) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write(word.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            in.transferTo(b);
            return b.toString(StandardCharsets.UTF_8);
        }
    }

    /** kill9 sends SIGKILL, as a crash would, and waits for the exit. */
    void kill9() throws InterruptedException {
        Process p = proc;
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** stop sends SIGTERM, then SIGKILL after 10 s, and waits for the exit. */
    void stop() throws InterruptedException {
        Process p = proc;
        if (p != null && p.isAlive()) {
            p.destroy();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /** wipeData deletes the data directory of a stopped server, as a disk replacement would. */
    void wipeData() throws IOException {
        if (alive()) {
            throw new IllegalStateException("wipe the data of a running server");
        }
        Path data = dir.resolve("data");
        try (var walk = Files.walk(data)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                if (!p.equals(data) && !p.getFileName().toString().equals("myid")) {
                    Files.delete(p);
                }
            }
        }
    }

    /** logTail returns the last 4 KiB of the server's log. */
    String logTail() {
        try {
            byte[] b = Files.readAllBytes(log);
            int from = Math.max(0, b.length - 4096);
            return new String(b, from, b.length - from, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /**
     * freePorts returns k distinct loopback ports that were free a moment ago: every socket stays
     * open until all are taken, so no port is handed out twice (asking one at a time, a member's
     * client port once came back as another's quorum port).
     */
    static int[] freePorts(int k) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] out = new int[k];
            for (int i = 0; i < k; i++) {
                ServerSocket s = bindFree();
                held.add(s);
                out[i] = s.getLocalPort();
            }
            return out;
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
    }

    /** freePort returns a loopback port that was free a moment ago. */
    static int freePort() throws IOException {
        try (ServerSocket s = bindFree()) {
            return s.getLocalPort();
        }
    }

    /**
     * bindFree binds a loopback port below the kernel's ephemeral range when it can (as zkproc's
     * Go harness does): a member killed and restarted on its ports must not find one taken by an
     * outgoing connection meanwhile, which can happen to a port the kernel picked for port 0.
     */
    private static ServerSocket bindFree() throws IOException {
        int first = ephemeralStart();
        if (first > 11000) {
            java.util.concurrent.ThreadLocalRandom rnd = java.util.concurrent.ThreadLocalRandom.current();
            for (int i = 0; i < 200; i++) {
                int p = 10000 + rnd.nextInt(first - 10000);
                ServerSocket s = new ServerSocket();
                try {
                    s.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), p), 1);
                    return s;
                } catch (IOException e) {
                    s.close();
                }
            }
        }
        return new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    }

    /** ephemeralStart is the first port of Linux's ip_local_port_range, or 0 when unknown. */
    private static int ephemeralStart() {
        try {
            String r = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim();
            return Integer.parseInt(r.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
