package dev.coop.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * The reference: the fastest a "step" can be with the same connections, the database doing the minimum a durable
 * step needs. One JDBC transaction inserts one ~400-byte row (uuid, text, ~200-byte jsonb, timestamptz, uuid[3])
 * into an append-only table with 2 btree indexes and updates one row of a 1,000-row table by primary key: 3 round
 * trips (insert, update, commit), like a Coop step's claim, advance and commit.
 */
final class PhysicalLimit {
    private PhysicalLimit() {
    }

    static void setup(BenchDb db) {
        db.exec("CREATE SCHEMA IF NOT EXISTS bench_phys");
        db.exec("""
                CREATE TABLE IF NOT EXISTS bench_phys.log (
                  id         uuid        PRIMARY KEY,
                  kind       text        NOT NULL,
                  body       jsonb       NOT NULL,
                  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                  lineage    uuid[]      NOT NULL
                )""");
        db.exec("CREATE INDEX IF NOT EXISTS log_created ON bench_phys.log (created_at)");
        db.exec("""
                CREATE TABLE IF NOT EXISTS bench_phys.state (
                  id         int         PRIMARY KEY,
                  counter    bigint      NOT NULL DEFAULT 0,
                  updated_at timestamptz
                ) WITH (fillfactor = 80)""");
        db.exec("INSERT INTO bench_phys.state (id) SELECT g FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING");
        db.exec("ANALYZE bench_phys.state");
    }

    /** Row size as stored, for the record. */
    static long averageRowBytes(BenchDb db) {
        return db.longValue("SELECT coalesce(avg(pg_column_size(l.*)), 0)::bigint FROM bench_phys.log l");
    }

    /** Runs {@code transactions} transactions on {@code connections} threads, one connection each; tx/s. */
    static double run(DataSource pool, int connections, int transactions) {
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch ready = new CountDownLatch(connections);
        CountDownLatch gate = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < connections; t++) {
            Thread th = Thread.ofPlatform().name("bench-phys-" + t).daemon(true).unstarted(() -> {
                try (Connection c = pool.getConnection()) {
                    c.setAutoCommit(false);
                    try (PreparedStatement insert = c.prepareStatement(
                            "INSERT INTO bench_phys.log (id, kind, body, lineage) VALUES (?, ?, ?::jsonb, ?)");
                            PreparedStatement update = c.prepareStatement(
                                    "UPDATE bench_phys.state SET counter = counter + 1,"
                                            + " updated_at = clock_timestamp() WHERE id = ?")) {
                        ready.countDown();
                        gate.await();
                        ThreadLocalRandom random = ThreadLocalRandom.current();
                        int i;
                        while ((i = next.getAndIncrement()) < transactions) {
                            UUID id = Ids.v7();
                            insert.setObject(1, id);
                            insert.setString(2, "SUSPENDED bench-saga step-" + (i % 3) + " engine-0001");
                            insert.setString(3, body(i));
                            insert.setArray(4, c.createArrayOf("uuid",
                                    new UUID[]{Ids.v7(), Ids.v7(), id}));
                            insert.executeUpdate();
                            update.setInt(1, 1 + random.nextInt(1000));
                            update.executeUpdate();
                            c.commit();
                        }
                    } finally {
                        c.setAutoCommit(true);
                    }
                } catch (SQLException | InterruptedException | RuntimeException e) {
                    failure.compareAndSet(null, e);
                    ready.countDown();
                }
            });
            threads.add(th);
            th.start();
        }
        try {
            ready.await();
            long start = System.nanoTime();
            gate.countDown();
            for (Thread th : threads) {
                th.join();
            }
            long elapsed = System.nanoTime() - start;
            if (failure.get() != null) {
                throw new IllegalStateException("Physical-limit run failed: " + failure.get(), failure.get());
            }
            return transactions / (elapsed / 1e9);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A ~200-byte JSON document that differs per transaction. */
    static String body(int i) {
        String s = "{\"order\":\"ord-" + i + "\",\"customer\":\"cust-" + (i % 1000)
                + "\",\"amount\":" + (i * 7 % 100_000) + ",\"currency\":\"EUR\",\"items\":[" + (i % 5) + ","
                + (i % 7) + "],\"note\":\"";
        StringBuilder sb = new StringBuilder(s);
        while (sb.length() < 196) {
            sb.append((char) ('a' + (sb.length() + i) % 26));
        }
        return sb.append("\"}").toString();
    }
}
