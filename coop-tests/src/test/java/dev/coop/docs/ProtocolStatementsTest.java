package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.internal.store.Migrations;
import dev.coop.internal.store.SchemaName;
import dev.coop.test.CoopDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * docs/protocol.md is what a participant in another language is written from, so its statements must be the schema's:
 * every {@code ```sql} block is parsed, resolved and planned by PostgreSQL ({@code PREPARE}) against the schema that
 * Coop's migrations create, and the schema version the document and the Node.js participant name is the latest.
 */
class ProtocolStatementsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(2);

    /** A statement's end: a semicolon closing a line, perhaps followed by a comment. */
    private static final Pattern STATEMENT_END = Pattern.compile(";\\s*(--[^\\n]*)?$");

    @BeforeAll
    static void migrate() {
        Migrations.apply(db.dataSource(), new SchemaName("coop")); // the schema the document's statements name
    }

    @Test
    void every_sql_statement_of_the_protocol_prepares_against_the_migrated_schema() throws Exception {
        List<Block> blocks = sqlBlocks(Files.readString(protocol(), StandardCharsets.UTF_8));
        assertThat(blocks).as("the SQL blocks of docs/protocol.md").hasSizeGreaterThan(10);
        List<String> problems = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            int n = 0;
            for (Block block : blocks) {
                for (String sql : statements(block.sql())) {
                    String name = "protocol_doc_" + ++n;
                    try {
                        st.execute("PREPARE " + name + " AS " + sql);
                        st.execute("DEALLOCATE " + name);
                    } catch (SQLException e) {
                        problems.add("docs/protocol.md:" + block.line() + ": " + e.getMessage() + "\n" + sql);
                    }
                }
            }
        }
        assertThat(problems).as("statements of docs/protocol.md that PostgreSQL refuses on a migrated schema")
                .isEmpty();
    }

    @Test
    void the_schema_version_the_protocol_and_the_node_participant_name_is_the_latest() throws Exception {
        int latest;
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT max(version) FROM coop.schema_version")) {
            rs.next();
            latest = rs.getInt(1);
        }
        String doc = Files.readString(protocol(), StandardCharsets.UTF_8);
        assertThat(numbers(doc, "This document describes \\*\\*schema version (\\d+)\\*\\*"))
                .as("the version protocol.md describes").containsExactly(latest);
        assertThat(numbers(doc, "\\((\\d+) for this document"))
                .as("the version a participant checks (Writing a participant)").containsExactly(latest);
        Path node = DocSnippetsTest.projectRoot().resolve("participants/node/schema.js");
        assertThat(numbers(Files.readString(node, StandardCharsets.UTF_8), "const SCHEMA_VERSION = (\\d+);"))
                .as("the version the Node.js participant requires").containsExactly(latest);
    }

    private record Block(int line, String sql) {
    }

    private static Path protocol() {
        return DocSnippetsTest.projectRoot().resolve("docs/protocol.md");
    }

    /** Each {@code ```sql} block with the line it starts on. */
    static List<Block> sqlBlocks(String text) {
        String[] lines = text.split("\n", -1);
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < lines.length; i++) {
            if (!lines[i].strip().equals("```sql")) {
                continue;
            }
            int end = i + 1;
            while (end < lines.length && !lines[end].strip().equals("```")) {
                end++;
            }
            blocks.add(new Block(i + 1, String.join("\n", List.of(lines).subList(i + 1, end))));
            i = end;
        }
        return blocks;
    }

    /** A block's statements: split where a line ends with a semicolon (and perhaps a comment). */
    static List<String> statements(String block) {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : block.split("\n")) {
            Matcher end = STATEMENT_END.matcher(line);
            if (end.find()) {
                current.append(line, 0, end.start());
                statements.add(current.toString().strip());
                current.setLength(0);
            } else {
                current.append(line).append('\n');
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString().strip());
        }
        return statements;
    }

    private static List<Integer> numbers(String text, String regex) {
        List<Integer> found = new ArrayList<>();
        Matcher m = Pattern.compile(regex).matcher(text);
        while (m.find()) {
            found.add(Integer.parseInt(m.group(1)));
        }
        return found;
    }
}
