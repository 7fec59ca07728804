package dev.coop.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where CPU time went during a measurement: the whole machine (/proc/stat), this JVM (process CPU), the engine's
 * threads (ThreadMXBean, threads named {@code coop-...}), and the PostgreSQL server's processes when it runs on this
 * machine (children of the postmaster, from /proc). The machine total minus ours is what other tenants used: the
 * noise.
 */
final class Cpu {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS = (com.sun.management.OperatingSystemMXBean) ManagementFactory
            .getOperatingSystemMXBean();
    private static final long TICK_NANOS = 10_000_000L; // USER_HZ = 100 on Linux x86-64
    private static volatile long postmaster = -2;

    record Snapshot(long wallNanos, long machineBusyTicks, long machineTotalTicks, long stealTicks, long jvmNanos,
            long engineThreadsNanos, long pgTicks) {
    }

    private Cpu() {
    }

    /** Finds the postmaster from one backend's pid (only when the server runs on this machine). */
    static void locatePostgres(BenchDb db) {
        if (postmaster != -2) {
            return;
        }
        try {
            // works for the embedded server and for any server on this machine; a remote one is not found in /proc
            long backend = db.longValue("SELECT pg_backend_pid()");
            String comm = Files.readString(Path.of("/proc", Long.toString(backend), "comm")).strip();
            postmaster = comm.equals("postgres") ? ppid(backend) : -1;
        } catch (IOException | RuntimeException e) {
            postmaster = -1;
        }
    }

    static Snapshot take() {
        long[] machine = machine();
        return new Snapshot(System.nanoTime(), machine[0], machine[1], machine[2], OS.getProcessCpuTime(),
                engineThreads(),
                pgTicks());
    }

    /** CPU use between two snapshots, in cores (1.0 = one core busy all the time). */
    static Map<String, Object> between(Snapshot a, Snapshot b) {
        double wall = (b.wallNanos - a.wallNanos) / 1e9;
        Map<String, Object> m = new LinkedHashMap<>();
        double machineTotal = b.machineTotalTicks - a.machineTotalTicks;
        int cores = Runtime.getRuntime().availableProcessors();
        double machineBusy = machineTotal <= 0
                ? 0
                : (b.machineBusyTicks - a.machineBusyTicks) / machineTotal * cores;
        double jvm = (b.jvmNanos - a.jvmNanos) / 1e9 / wall;
        double engine = (b.engineThreadsNanos - a.engineThreadsNanos) / 1e9 / wall;
        m.put("machineBusyCores", Stats.round(machineBusy, 3));
        m.put("stealCores", Stats.round(machineTotal <= 0
                ? 0
                : (b.stealTicks - a.stealTicks) / machineTotal * cores, 3));
        m.put("jvmCores", Stats.round(jvm, 3));
        m.put("engineThreadCores", Stats.round(engine, 3));
        if (b.pgTicks >= 0 && a.pgTicks >= 0) {
            double pg = (b.pgTicks - a.pgTicks) * TICK_NANOS / 1e9 / wall;
            m.put("postgresCores", Stats.round(pg, 3));
            m.put("otherTenantsCores", Stats.round(Math.max(0, machineBusy - jvm - pg), 3));
        }
        m.put("cores", cores);
        return m;
    }

    /** CPU microseconds per unit of work between two snapshots: JVM, engine threads, PostgreSQL, total. */
    static void perUnit(Map<String, Object> m, Snapshot a, Snapshot b, double units, String unit) {
        m.put("jvmCpuUsPer" + unit, Stats.round((b.jvmNanos - a.jvmNanos) / 1e3 / units, 1));
        m.put("engineCpuUsPer" + unit, Stats.round((b.engineThreadsNanos - a.engineThreadsNanos) / 1e3 / units, 1));
        if (a.pgTicks >= 0 && b.pgTicks >= 0) {
            double pg = (b.pgTicks - a.pgTicks) * TICK_NANOS / 1e3 / units;
            m.put("pgCpuUsPer" + unit, Stats.round(pg, 1));
            m.put("cpuUsPer" + unit, Stats.round(pg + (b.jvmNanos - a.jvmNanos) / 1e3 / units, 1));
        }
    }

    /** Engine thread CPU in nanoseconds (threads named coop-...; those that ended are not counted). */
    static long engineThreads() {
        long sum = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("coop-")) {
                long n = THREADS.getThreadCpuTime(t.threadId());
                if (n > 0) {
                    sum += n;
                }
            }
        }
        return sum;
    }

    static long currentThreadNanos() {
        return THREADS.getCurrentThreadCpuTime();
    }

    private static long[] machine() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/stat"));
            String[] f = lines.getFirst().trim().split("\\s+");
            long user = Long.parseLong(f[1]);
            long nice = Long.parseLong(f[2]);
            long system = Long.parseLong(f[3]);
            long idle = Long.parseLong(f[4]);
            long iowait = Long.parseLong(f[5]);
            long irq = Long.parseLong(f[6]);
            long softirq = Long.parseLong(f[7]);
            long steal = f.length > 8 ? Long.parseLong(f[8]) : 0;
            long busy = user + nice + system + irq + softirq + steal;
            return new long[]{busy, busy + idle + iowait, steal};
        } catch (IOException | RuntimeException e) {
            return new long[]{0, 0, 0};
        }
    }

    private static long pgTicks() {
        long pm = postmaster;
        if (pm <= 0) {
            return -1;
        }
        long sum = 0;
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path d : dirs) {
                long[] stat = stat(d.resolve("stat"));
                if (stat != null && (stat[0] == pm || Long.parseLong(d.getFileName().toString()) == pm)) {
                    sum += stat[1];
                }
            }
        } catch (IOException e) {
            return -1;
        }
        return sum;
    }

    /** The postmaster's pid and its children's, when the server runs on this machine; else empty. */
    static java.util.Set<Long> postgresPids() {
        java.util.Set<Long> pids = new java.util.HashSet<>();
        long pm = postmaster;
        if (pm <= 0) {
            return pids;
        }
        pids.add(pm);
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path d : dirs) {
                long[] stat = stat(d.resolve("stat"));
                if (stat != null && stat[0] == pm) {
                    pids.add(Long.parseLong(d.getFileName().toString()));
                }
            }
        } catch (IOException e) {
            return pids;
        }
        return pids;
    }

    /** CPU of the given server processes in nanoseconds (they must run on this machine), or -1. */
    static long processNanos(List<Long> pids) {
        if (postmaster <= 0) {
            return -1;
        }
        long sum = 0;
        for (long pid : pids) {
            long[] s = stat(Path.of("/proc", Long.toString(pid), "stat"));
            if (s != null) {
                sum += s[1] * TICK_NANOS;
            }
        }
        return sum;
    }

    private static long ppid(long pid) {
        long[] s = stat(Path.of("/proc", Long.toString(pid), "stat"));
        return s == null ? -1 : s[0];
    }

    /** {ppid, utime+stime} of a /proc/PID/stat file, or null. */
    private static long[] stat(Path file) {
        try {
            String s = Files.readString(file);
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            // fields after the command: state(0) ppid(1) ... utime(11) stime(12)
            return new long[]{Long.parseLong(f[1]), Long.parseLong(f[11]) + Long.parseLong(f[12])};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
