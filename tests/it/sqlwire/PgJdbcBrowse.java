// What DBeaver (and Metabase, IntelliJ) do through pgjdbc when they open a connection to
// wxlake and browse a table: the DatabaseMetaData calls, a page of the table with its
// ResultSetMetaData, a server-side prepared statement run again and again, a streamed
// result (setFetchSize), values of types pgjdbc looks up on the server (interval, NULL).
// Prints one line per step, "ok <name> <value>" or "fail <name> <error>"; the Rust test
// (tests/it/analyst_tools.rs) asserts on them.
//
// Usage: java -cp postgresql.jar:. PgJdbcBrowse PORT KEY

import java.sql.*;
import java.util.*;

public class PgJdbcBrowse {
    interface Step { Object run() throws Exception; }

    static void step(String name, Step s) {
        try {
            System.out.println("ok " + name + " " + s.run());
        } catch (Exception e) {
            String m = String.valueOf(e.getMessage()).split("\n")[0];
            System.out.println("fail " + name + " " + m);
        }
    }

    /** The rows of a metadata result: their count and the named column's values. */
    static String rows(ResultSet rs, String column) throws SQLException {
        List<String> values = new ArrayList<>();
        while (rs.next()) values.add(column == null ? "" : rs.getString(column));
        rs.close();
        return values.size() + (column == null ? "" : " " + String.join(",", values));
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/wxlake?sslmode=disable&prepareThreshold=1";
        try (Connection c = DriverManager.getConnection(url, "dbeaver", args[1])) {
            DatabaseMetaData md = c.getMetaData();
            step("product", () -> md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
            step("catalogs", () -> rows(md.getCatalogs(), "TABLE_CAT"));
            step("schemas", () -> rows(md.getSchemas(), "TABLE_SCHEM"));
            step("table_types", () -> rows(md.getTableTypes(), null));
            step("tables", () -> rows(md.getTables(null, "public", "%", new String[] {"TABLE"}), "TABLE_NAME"));
            step("columns", () -> rows(md.getColumns(null, "public", "stations", "%"), "TYPE_NAME"));
            step("primary_keys", () -> rows(md.getPrimaryKeys(null, "public", "stations"), "COLUMN_NAME"));
            step("imported_keys", () -> rows(md.getImportedKeys(null, "public", "stations"), null));
            step("exported_keys", () -> rows(md.getExportedKeys(null, "public", "stations"), null));
            step("index_info", () -> rows(md.getIndexInfo(null, "public", "stations", false, true), null));
            step("unique_index_info", () -> rows(md.getIndexInfo(null, "public", "stations", true, true), null));
            step("best_row_identifier", () -> rows(md.getBestRowIdentifier(null, "public", "stations", DatabaseMetaData.bestRowSession, true), null));
            step("version_columns", () -> rows(md.getVersionColumns(null, "public", "stations"), null));
            step("type_info", () -> {
                List<String> names = new ArrayList<>();
                try (ResultSet rs = md.getTypeInfo()) { while (rs.next()) names.add(rs.getString("TYPE_NAME")); }
                return names.size() + " " + names.contains("int4") + " " + names.contains("timestamptz");
            });
            step("functions", () -> rows(md.getFunctions(null, "public", "%"), null));
            step("procedures", () -> rows(md.getProcedures(null, "public", "%"), null));
            step("udts", () -> rows(md.getUDTs(null, "public", "%", null), null));
            step("table_privileges", () -> rows(md.getTablePrivileges(null, "public", "stations"), null));
            step("column_privileges", () -> rows(md.getColumnPrivileges(null, "public", "stations", "%"), null));
            step("max_columns_in_index", md::getMaxColumnsInIndex);
            step("client_info", () -> rows(md.getClientInfoProperties(), null));

            // Browsing a table: its first page and what each column is.
            step("browse", () -> {
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM stations LIMIT 200")) {
                    ResultSetMetaData m = rs.getMetaData();
                    int n = 0;
                    while (rs.next()) { for (int i = 1; i <= m.getColumnCount(); i++) rs.getObject(i); n++; }
                    return n + " " + m.getColumnCount() + " " + m.getTableName(1) + " " + m.getSchemaName(1)
                        + " " + m.getColumnName(1) + " " + m.isNullable(1);
                }
            });
            step("key_column", () -> {
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT row_key, station_code FROM observations LIMIT 1")) {
                    ResultSetMetaData m = rs.getMetaData();
                    rs.next();
                    return m.getColumnTypeName(1) + " " + m.getPrecision(1) + " " + m.getScale(1) + " "
                        + rs.getObject(1).getClass().getSimpleName() + " " + m.getTableName(2);
                }
            });
            step("computed_column_table", () -> {
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) AS n FROM stations")) {
                    return "'" + rs.getMetaData().getTableName(1) + "'";
                }
            });
            // Values whose types pgjdbc resolves on the server.
            step("interval", () -> {
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT interval '1 day' AS v")) {
                    rs.next();
                    return rs.getObject(1);
                }
            });
            step("null", () -> {
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT NULL AS v")) {
                    rs.next();
                    return rs.getObject(1);
                }
            });
            // A server-side prepared statement (prepareThreshold=1), executed again with
            // other values.
            step("prepared", () -> {
                StringBuilder out = new StringBuilder();
                try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM stations WHERE station_code = ? OR station_code = ?")) {
                    for (String[] codes : new String[][] {{"KNYC", "KLAX"}, {"KNYC", "NONE"}, {"NONE", "NONE"}}) {
                        p.setString(1, codes[0]);
                        p.setString(2, codes[1]);
                        try (ResultSet rs = p.executeQuery()) { rs.next(); out.append(rs.getLong(1)); }
                    }
                }
                return out;
            });
            step("timestamp_parameter", () -> {
                try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM observations WHERE observation_time >= ?")) {
                    p.setTimestamp(1, Timestamp.valueOf("2000-01-01 00:00:00"));
                    try (ResultSet rs = p.executeQuery()) { rs.next(); return rs.getLong(1) > 0; }
                }
            });
            // Streaming: autocommit off and a fetch size make pgjdbc fetch in pages.
            step("fetch_size", () -> {
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.setFetchSize(1000);
                    long n = 0, sum = 0;
                    try (ResultSet rs = s.executeQuery("SELECT value FROM generate_series(1, 25000)")) {
                        while (rs.next()) { n++; sum += rs.getLong(1); }
                    }
                    c.commit();
                    return n + " " + sum;
                } finally {
                    c.setAutoCommit(true);
                }
            });
        }
    }
}
