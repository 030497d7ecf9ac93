package zkdcompat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Proxy is a loopback TCP proxy in front of one server. In blackhole mode it keeps every connection
 * open but forwards nothing, in either direction: to the server the client has gone silent (its session
 * must expire), to the client the server hangs.
 */
final class Proxy implements AutoCloseable {
    private final ServerSocket listener;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean blackhole;
    private volatile boolean closed;

    /** Proxy starts listening on a free loopback port and forwards to targetPort. */
    Proxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::acceptLoop, "proxy-accept-" + listener.getLocalPort());
        t.setDaemon(true);
        t.start();
    }

    /** addr is the proxy's client address. */
    String addr() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    /** setBlackhole turns silent dropping of all traffic on or off; new connections are refused while on. */
    void setBlackhole(boolean on) {
        blackhole = on;
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket c = listener.accept();
                if (blackhole) {
                    c.close();
                    continue;
                }
                Socket s = new Socket();
                try {
                    s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 2000);
                } catch (IOException e) {
                    c.close();
                    continue;
                }
                sockets.add(c);
                sockets.add(s);
                pump(c, s);
                pump(s, c);
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                for (int n; (n = in.read(buf)) >= 0; ) {
                    if (!blackhole) {
                        out.write(buf, 0, n);
                        out.flush();
                    }
                }
            } catch (IOException ignored) {
                // either side went away
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    /** dropAll closes every proxied connection (both ends). */
    void dropAll() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
        sockets.clear();
    }

    @Override
    public void close() {
        closed = true;
        closeQuietly(listener);
        dropAll();
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // closing
        }
    }
}
