package dev.coop.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * The PostgreSQL server's CPU by function family during a window ({@code --perf}): {@code perf record -e cpu-clock
 * -a --call-graph dwarf} (software clock events, which work in containers and VMs without hardware counters), then
 * {@code perf script}; only samples of the postmaster's children count. Each sample goes to one family: triggers
 * when any frame of its stack is in a trigger (everything a trigger runs is its cost), else the family of the
 * innermost frame that belongs to one (a hash lookup inside LockAcquire is locks, inside the planner planning); a
 * sample in no family is "other". Each sample weighs its period (CPU nanoseconds).
 */
final class PerfProfile {
    /** Families in the order the table lists them; a frame matches a family when its symbol matches the pattern. */
    static final List<Map.Entry<String, Pattern>> FAMILIES = List.of(
            family("triggers", "^(ExecCallTriggerFunc|AfterTrigger\\w*|ExecB[RS]\\w*Triggers|ExecA[RS]\\w*Triggers"
                    + "|plpgsql_\\w+|exec_stmt\\w*|RI_FKey_\\w+)$"),
            family("executor start-up", "^(standard_ExecutorStart|ExecutorStart|InitPlan|ExecInit\\w*|ExecBuild\\w*"
                    + "|ExecReadyExpr|ExecOpenIndices|ExecGetRangeTableRelation|ExecOpenScanRelation"
                    + "|CreateExecutorState|ExecAssign\\w*|ExecConditionalAssignProjectionInfo|ExecTypeFromTL)$"),
            family("planning and plan revalidation", "^(planner|standard_planner|pg_plan_quer(y|ies)"
                    + "|BuildCachedPlan|RevalidateCachedQuery|GetCachedPlan|CheckCachedPlan|CompleteCachedPlan"
                    + "|pg_analyze_and_rewrite\\w*|parse_analyze\\w*|raw_parser|pg_parse_query|QueryRewrite"
                    + "|AcquireExecutorLocks|AcquirePlannerLocks|PlanCacheRelCallback|PlanCacheObjectCallback)$"),
            family("locks", "^(LockAcquire\\w*|LockRelease\\w*|LockRelationOid|LockRelation|UnlockRelation\\w*"
                    + "|LockRelationIdForSession|FastPath\\w*|SetupLockInTable|GrantLock\\w*|UnGrantLock"
                    + "|LockCheckConflicts|LockTagHashCode|RemoveLocalLock|CleanUpLock|LockReassign\\w*|VirtualXactLock\\w*"
                    + "|XactLockTableWait|LockTuple|heap_acquire_tuplock|ConditionalLockRelationOid)$"),
            family("WAL", "^(XLog\\w+|XLogInsert\\w*|issue_xlog_fsync|log_heap_\\w+|WALInsertLock\\w*"
                    + "|CopyXLogRecordToWAL|ReserveXLogInsertLocation|AdvanceXLInsertBuffer|WalSndWakeup\\w*)$"),
            family("transaction start and commit", "^(CommitTransaction|CommitTransactionCommand|StartTransaction"
                    + "|StartTransactionCommand|RecordTransactionCommit|AtEOXact_\\w+|AtCommit_\\w+|AtStart_\\w+"
                    + "|ProcArrayEndTransaction|PreCommit_\\w+|TransactionIdCommitTree|AbortTransaction"
                    + "|CleanupTransaction)$"),
            family("protocol", "^(pq_\\w+|secure_read|secure_write|socket_\\w+|SocketBackend|ReadCommand"
                    + "|exec_bind_message|exec_parse_message|exec_describe_\\w+|exec_simple_query|printtup\\w*"
                    + "|SendRowDescriptionMessage|ReadyForQuery|EndCommand|BeginCommand)$"),
            family("executor run", "^(standard_ExecutorRun|ExecutorRun|ExecutePlan|ExecModifyTable|ExecProcNode\\w*"
                    + "|ExecScan\\w*|ExecInsert|ExecUpdate|ExecDelete|ExecInsertIndexTuples)$"),
            family("executor end", "^(standard_ExecutorEnd|ExecutorEnd|ExecEnd\\w*|ExecCloseIndices"
                    + "|ExecCloseResultRelations|ExecCloseRangeTableRelations|FreeExecutorState|PortalDrop"
                    + "|PortalCleanup)$"),
            family("vacuum and pruning", "^(heap_page_prune\\w*|lazy_\\w+|heap_vacuum_rel|do_autovacuum"
                    + "|vacuum\\w*|autovac\\w*)$"));

    private static Map.Entry<String, Pattern> family(String name, String regex) {
        return Map.entry(name, Pattern.compile(regex));
    }

    private final Path data;
    private final Process process;
    private final Set<Long> pids;
    private final String error;

    private PerfProfile(Path data, Process process, Set<Long> pids, String error) {
        this.data = data;
        this.process = process;
        this.pids = pids;
        this.error = error;
    }

    /**
     * Starts sampling the whole machine and returns once perf records: it starts with its events disabled and is
     * told to enable them through its control fifo, then acknowledges (it first reads every process's memory map,
     * which takes seconds on a busy machine). A profile that could not start says why when folded.
     */
    static PerfProfile start() {
        Set<Long> pids = Cpu.postgresPids();
        if (pids.isEmpty()) {
            return new PerfProfile(null, null, pids, "the PostgreSQL server does not run on this machine");
        }
        Process p = null;
        try {
            Path dir = Files.createTempDirectory("coop-bench-perf");
            Path data = dir.resolve("perf.data");
            Path ctl = dir.resolve("ctl");
            Path ack = dir.resolve("ack");
            if (new ProcessBuilder("mkfifo", ctl.toString(), ack.toString()).start().waitFor() != 0) {
                return new PerfProfile(null, null, pids, "mkfifo failed in " + dir);
            }
            p = new ProcessBuilder("perf", "record", "-e", "cpu-clock", "-F", "499", "-a",
                    "--call-graph", "dwarf,8192", "-D", "-1", "--control", "fifo:" + ctl + "," + ack,
                    "-o", data.toString(), "-q")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("perf.log").toFile()).start();
            Process perf = p;
            CompletableFuture<String> enabled = CompletableFuture.supplyAsync(() -> enable(ctl, ack));
            String answer = enabled.get(60, TimeUnit.SECONDS);
            if (!answer.startsWith("ack") || !perf.isAlive()) {
                perf.destroy();
                return new PerfProfile(null, null, pids, "perf did not start recording: " + answer + " "
                        + log(dir));
            }
            return new PerfProfile(data, perf, pids, null);
        } catch (IOException e) {
            return new PerfProfile(null, null, pids, "perf could not start (apt-get install linux-perf): "
                    + e.getMessage());
        } catch (ExecutionException | TimeoutException e) {
            p.destroyForcibly();
            return new PerfProfile(null, null, pids, "perf did not start recording within 60 s: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new PerfProfile(null, null, pids, "interrupted");
        }
    }

    /** Writes "enable" into perf's control fifo and returns its answer ("ack"). */
    private static String enable(Path ctl, Path ack) {
        try (OutputStream out = Files.newOutputStream(ctl); InputStream in = Files.newInputStream(ack)) {
            out.write("enable\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            StringBuilder sb = new StringBuilder();
            int c;
            while ((c = in.read()) >= 0 && c != '\n') {
                sb.append((char) c);
            }
            return sb.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String log(Path dir) {
        try {
            return Files.readString(dir.resolve("perf.log")).strip();
        } catch (IOException e) {
            return "";
        }
    }

    /** Stops sampling (perf writes its file on SIGTERM). */
    void stop() {
        pids.addAll(Cpu.postgresPids());
        if (process == null) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** CPU µs per step by family, and the share of each; the raw file is deleted. */
    Map<String, Object> fold(long steps) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (error != null) {
            m.put("error", error);
            return m;
        }
        Map<String, Long> nanos = new LinkedHashMap<>();
        FAMILIES.forEach(f -> nanos.put(f.getKey(), 0L));
        nanos.put("other", 0L);
        Map<String, Long> leaves = new HashMap<>();
        Map<String, Long> otherFrames = new HashMap<>();
        long samples = 0;
        try {
            Process script = new ProcessBuilder("perf", "script", "-i", data.toString(), "-F", "pid,period,ip,sym",
                    "--no-inline").redirectError(ProcessBuilder.Redirect.DISCARD).start();
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(script.getInputStream(), StandardCharsets.UTF_8))) {
                samples = read(in, nanos, leaves, otherFrames);
            }
            script.waitFor(300, TimeUnit.SECONDS);
        } catch (IOException e) {
            m.put("error", "perf script failed: " + e.getMessage());
            return m;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            try (var files = Files.list(data.getParent())) {
                for (Path f : files.toList()) {
                    Files.deleteIfExists(f);
                }
                Files.deleteIfExists(data.getParent());
            } catch (IOException ignored) {
                // temporary files
            }
        }
        long total = nanos.values().stream().mapToLong(Long::longValue).sum();
        m.put("samples", samples);
        m.put("postgresUsPerStep", Stats.round(total / 1e3 / steps, 1));
        Map<String, Object> fam = new LinkedHashMap<>();
        nanos.forEach((k, v) -> fam.put(k, Stats.round(v / 1e3 / steps, 1)));
        m.put("usPerStep", fam);
        m.put("flatTop", top(leaves, steps, 25));
        m.put("otherTop", top(otherFrames, steps, 15));
        if (samples == 0) {
            m.put("error", "perf recorded no sample of the server's processes (perf_event_paranoid, or no"
                    + " permission to sample other processes?)");
        }
        return m;
    }

    /** The {@code n} symbols of most CPU, in µs per step. */
    private static Map<String, Object> top(Map<String, Long> bySymbol, long steps, int n) {
        Map<String, Object> m = new LinkedHashMap<>();
        bySymbol.entrySet().stream().sorted((a, b) -> Long.compare(b.getValue(), a.getValue())).limit(n)
                .forEach(e -> m.put(e.getKey(), Stats.round(e.getValue() / 1e3 / steps, 1)));
        return m;
    }

    /**
     * Reads perf script's samples (a header line "pid period", then one frame per line, then a blank line) into
     * the families, the flat profile (innermost frames) and the innermost frames of the samples no family claims.
     */
    private long read(BufferedReader in, Map<String, Long> nanos, Map<String, Long> leaves,
            Map<String, Long> otherFrames) throws IOException {
        long samples = 0;
        long pid = -1;
        long period = 0;
        List<String> frames = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                if (pid >= 0 && pids.contains(pid) && !frames.isEmpty()) {
                    String family = familyOf(frames);
                    nanos.merge(family, period, Long::sum);
                    leaves.merge(frames.getFirst(), period, Long::sum);
                    if (family.equals("other")) {
                        otherFrames.merge(frames.getFirst(), period, Long::sum);
                    }
                    samples++;
                }
                pid = -1;
                frames.clear();
            } else if (line.startsWith("\t") || line.startsWith("        ")) {
                String f = line.strip();
                int space = f.indexOf(' ');
                String sym = space < 0 ? f : f.substring(space + 1);
                int plus = sym.indexOf('+');
                frames.add(plus > 0 ? sym.substring(0, plus) : sym);
            } else {
                String[] f = line.strip().split("\\s+");
                try {
                    pid = Long.parseLong(f[0]);
                    period = f.length > 1 ? Long.parseLong(f[1]) : 0;
                } catch (NumberFormatException e) {
                    pid = -1;
                }
            }
        }
        return samples;
    }

    /** The family of a sample's stack (innermost frame first). */
    static String familyOf(List<String> frames) {
        Pattern triggers = FAMILIES.getFirst().getValue();
        for (String f : frames) {
            if (triggers.matcher(f).matches()) {
                return FAMILIES.getFirst().getKey();
            }
        }
        for (String f : frames) {
            for (Map.Entry<String, Pattern> fam : FAMILIES) {
                if (fam.getValue().matcher(f).matches()) {
                    return fam.getKey();
                }
            }
        }
        return "other";
    }
}
