package zkdcompat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;

/**
 * Main runs every scenario in one JVM against real server processes and prints one line per scenario
 * and a final "curator: N passed, N failed". Flags: --target zkd|zookeeper, --members N (1: standalone;
 * 3: an ensemble), --only REGEX, --workdir DIR, --pidfile FILE, --list.
 */
public final class Main {
    /** Body is a scenario's code. */
    interface Body {
        void run(Ctx c) throws Exception;
    }

    /** Scenario is one named check with its own time limit. */
    record Scenario(String name, long timeoutMs, Body body) { }

    private static ServerProc.Target target = ServerProc.Target.ZKD;
    private static Path workDir;
    private static Path pidFile;
    private static int members = 1;

    private Main() {}

    /** target is the implementation under test. */
    static ServerProc.Target target() {
        return target;
    }

    /** workDir is the run's scratch directory (server dirs and logs). */
    static Path workDir() {
        return workDir;
    }

    /** members is the cluster size every scenario's shared cluster has. */
    static int members() {
        return members;
    }

    /** zkdBin is $ZKD_BIN, the zkd binary the run script built or was given. */
    static String zkdBin() {
        String b = System.getenv("ZKD_BIN");
        if (b == null || b.isEmpty()) {
            throw new IllegalStateException("ZKD_BIN is not set");
        }
        return b;
    }

    /** recordPid appends a started process's id to the pid file the run script cleans up from. */
    static synchronized void recordPid(long pid) {
        if (pidFile == null) {
            return;
        }
        try {
            Files.writeString(pidFile, pid + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            System.err.println("curator: cannot record pid " + pid + ": " + e);
        }
    }

    /** all lists every scenario in run order. */
    static List<Scenario> all() {
        List<Scenario> s = new ArrayList<>();
        LockScenarios.register(s);
        RecipeScenarios.register(s);
        MoreRecipeScenarios.register(s);
        ZkClientScenarios.register(s);
        ZkMoreScenarios.register(s);
        WatchScenarios.register(s);
        FailoverScenarios.register(s);
        FencingScenarios.register(s);
        LockDelayScenarios.register(s);
        return s;
    }

    /** main parses the flags, starts the shared cluster, runs the scenarios and exits 0 only if all passed. */
    public static void main(String[] args) throws Exception {
        String only = null;
        boolean list = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--target" -> target = ServerProc.Target.valueOf(args[++i].toUpperCase(Locale.ROOT));
                case "--members" -> members = Integer.parseInt(args[++i]);
                case "--only" -> only = args[++i];
                case "--workdir" -> workDir = Path.of(args[++i]);
                case "--pidfile" -> pidFile = Path.of(args[++i]);
                case "--list" -> list = true;
                default -> {
                    System.err.println("curator: unknown flag " + args[i]);
                    System.exit(2);
                }
            }
        }
        List<Scenario> scenarios = all();
        if (only != null) {
            Pattern p = Pattern.compile(only);
            scenarios.removeIf(s -> !p.matcher(s.name()).find());
        }
        if (list) {
            scenarios.forEach(s -> System.out.println(s.name()));
            return;
        }
        if (workDir == null) {
            workDir = Files.createTempDirectory("zkd-curator-");
        }
        Files.createDirectories(workDir);
        System.out.printf("curator: target %s, %d member(s), work dir %s%n", target.name().toLowerCase(Locale.ROOT),
                members, workDir);

        int passed = 0;
        int failed = 0;
        Cluster shared = null;
        try {
            ServerProc.Options opts = new ServerProc.Options();
            try {
                shared = Cluster.start(target, workDir, "shared", members, opts);
            } catch (Exception e) {
                System.out.println("FAIL setup: cannot start " + target + ": " + e.getMessage());
                failed = scenarios.size();
                scenarios = List.of();
            }
            for (Scenario s : scenarios) {
                String err = runOne(s, shared);
                if (err == null) {
                    passed++;
                } else {
                    failed++;
                }
                // A crashed shared server fails every later scenario for one reason; restart it.
                if (shared != null) {
                    for (ServerProc m : shared.members) {
                        if (!m.alive()) {
                            System.out.println("  shared " + m.target + " on " + m.addr() + " died; log:\n" + m.logTail());
                            m.start();
                        }
                    }
                }
            }
        } finally {
            if (shared != null) {
                shared.stop();
            }
        }
        String summary = String.format("curator: %d passed, %d failed", passed, failed);
        System.out.println(summary);
        System.out.flush();
        Files.writeString(workDir.resolve("summary"), summary + "\n");
        System.exit(failed == 0 ? 0 : 1);
    }

    /** runOne runs s with its time limit and prints its result line; it returns the failure or null. */
    private static String runOne(Scenario s, Cluster shared) {
        long t0 = System.nanoTime();
        AtomicReference<Throwable> err = new AtomicReference<>();
        Ctx ctx = new Ctx(s.name(), shared);
        Thread t = new Thread(() -> {
            try {
                s.body().run(ctx);
            } catch (Throwable e) {
                err.set(e);
            }
        }, "scenario-" + s.name());
        t.setDaemon(true);
        t.start();
        try {
            t.join(s.timeoutMs());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        String extra = "";
        if (t.isAlive()) {
            StringBuilder sb = new StringBuilder();
            for (StackTraceElement el : t.getStackTrace()) {
                sb.append("\n      at ").append(el);
            }
            err.compareAndSet(null, new AssertionError("timed out after " + s.timeoutMs() + " ms; stuck" + sb));
            t.interrupt();
        }
        String logs = ctx.extraLogs();
        ctx.close();
        try {
            t.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        Throwable e = err.get();
        if (e == null) {
            System.out.printf("PASS %s (%.1fs)%n", s.name(), secs);
            System.out.flush();
            return null;
        }
        StringWriter sw = new StringWriter();
        if (e instanceof AssertionError && e.getCause() == null) {
            sw.append(e.getMessage());
            StackTraceElement[] st = e.getStackTrace();
            for (StackTraceElement el : st) {
                if (el.getClassName().startsWith("zkdcompat.") && !el.getClassName().equals("zkdcompat.Check")) {
                    sw.append("\n      at ").append(el.toString());
                    break;
                }
            }
        } else {
            e.printStackTrace(new PrintWriter(sw));
        }
        System.out.printf("FAIL %s (%.1fs): %s%n", s.name(), secs, sw.toString().strip());
        if (!logs.isEmpty()) {
            System.out.println(extra + logs);
        }
        System.out.flush();
        return sw.toString();
    }
}
