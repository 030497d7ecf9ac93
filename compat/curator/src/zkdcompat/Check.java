package zkdcompat;

import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Check holds the assertions scenarios use; a failed check throws AssertionError with its message. */
final class Check {
    private Check() {}

    /** that fails unless cond holds. */
    static void that(boolean cond, String fmt, Object... args) {
        if (!cond) {
            throw new AssertionError(String.format(fmt, args));
        }
    }

    /** eq fails unless expected equals actual. */
    static void eq(Object expected, Object actual, String what) {
        if (!Objects.equals(expected, actual)) {
            throw new AssertionError(what + ": want " + expected + ", got " + actual);
        }
    }

    /** waitFor polls cond every 20 ms until it holds, failing after timeoutMs. */
    static void waitFor(long timeoutMs, String what, BooleanSupplier cond) throws InterruptedException {
        waitFor(timeoutMs, () -> what, cond);
    }

    /** waitFor is waitFor with a message computed at failure time (so it can show the state then). */
    static void waitFor(long timeoutMs, Supplier<String> what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what.get());
            }
            Thread.sleep(20);
        }
    }

    /** Thrower is a supplier that may throw. */
    interface Thrower {
        void run() throws Exception;
    }

    /** throwsType fails unless body throws an exception of type want (or one caused by it) and returns it. */
    static <T extends Throwable> T throwsType(Class<T> want, String what, Thrower body) {
        try {
            body.run();
        } catch (Throwable e) {
            for (Throwable c = e; c != null; c = c.getCause()) {
                if (want.isInstance(c)) {
                    return want.cast(c);
                }
            }
            throw new AssertionError(what + ": want " + want.getSimpleName() + ", got " + e, e);
        }
        throw new AssertionError(what + ": want " + want.getSimpleName() + ", got no exception");
    }
}
