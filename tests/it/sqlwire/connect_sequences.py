"""The catalog queries analysts' tools send on connect, replayed through psycopg (extended
protocol, autocommit as JDBC and pgx run them). Prints one line per query:
`ok <name> <rows> in <seconds> s` or `fail <name> after <seconds> s: <first line of the error>`, then the
same sequence on three connections at once (`parallel <i> failed <names>`, and each
failure's line on stderr).

Usage: python connect_sequences.py PORT KEY
"""
import sys
import threading
import time

import psycopg

PORT, KEY = sys.argv[1], sys.argv[2]

QUERIES = [
    # psql / generic
    ("version", "SELECT version()"),
    ("show_search_path", "SHOW search_path"),
    ("current_schema", "select current_schema()"),
    ("current_database", "SELECT current_database(), current_user"),
    ("show_server_version", "SHOW server_version"),
    ("show_tx_isolation", "SHOW TRANSACTION ISOLATION LEVEL"),
    ("pg_namespace", "SELECT oid, nspname FROM pg_catalog.pg_namespace ORDER BY nspname"),
    ("pg_class", "SELECT c.relname, c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"),
    ("pg_attribute", "SELECT a.attname, a.atttypid, a.attnum FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid WHERE c.relname = 'stations' AND a.attnum > 0 ORDER BY a.attnum"),
    ("pg_type", "SELECT oid, typname, typtype FROM pg_catalog.pg_type WHERE oid IN (16, 20, 25, 701, 1043, 1114, 1184)"),
    ("pg_settings", "SELECT name, setting FROM pg_catalog.pg_settings WHERE name = 'standard_conforming_strings'"),
    ("pg_database", "SELECT datname FROM pg_catalog.pg_database"),
    ("information_schema.tables", "SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name"),
    ("information_schema.columns", "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 'stations' ORDER BY ordinal_position"),
    # DBeaver (PostgreSQL driver over JDBC)
    ("dbeaver.extra_float_digits", "SET extra_float_digits = 3"),
    ("dbeaver.application_name", "SET application_name = 'DBeaver 25.1.5 - Main <wxlake>'"),
    ("dbeaver.current_schema", "SELECT current_schema(),session_user"),
    ("dbeaver.namespaces", "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname"),
    ("dbeaver.database", "SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='wxlake'"),
    ("dbeaver.keywords", "SELECT string_agg(word, ',' ) from pg_catalog.pg_get_keywords() where word <> ALL ('{a,abs,absolute,action}'::text[])"),
    ("dbeaver.enum_probe", "SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1"),
    ("dbeaver.types", "SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid WHERE t.typname IS NOT NULL AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')"),
    ("dbeaver.tables", "SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr, pg_catalog.pg_get_partkeydef(c.oid) as partition_key FROM pg_catalog.pg_class c LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass WHERE c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname='public') AND c.relkind not in ('i','I','c')"),
    ("dbeaver.columns", "SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description FROM pg_catalog.pg_attribute a INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid) LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum) LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid) WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.relname='stations' ORDER BY a.attnum"),
    # Grafana's PostgreSQL data source (pgx): the table and column pickers
    ("grafana.tables", """SELECT
        CASE WHEN quote_ident(table_schema) IN (
              SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
              FROM generate_series(
                  array_lower(string_to_array(current_setting('search_path'),','),1),
                  array_upper(string_to_array(current_setting('search_path'),','),1)) as i,
                string_to_array(current_setting('search_path'),',') s)
          THEN quote_ident(table_name)
          ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
        END AS "table"
        FROM information_schema.tables
        WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog')
        ORDER BY 1"""),
    ("grafana.columns", """SELECT quote_ident(column_name) AS "column", data_type AS "type"
        FROM information_schema.columns
        WHERE quote_ident(table_name) = 'observations'"""),
    ("grafana.time_series", "SELECT observation_time AS time, temperature FROM observations WHERE station_code = 'KNYC' AND observation_time BETWEEN '2026-03-01T00:00:00Z' AND '2026-03-09T00:00:00Z' ORDER BY 1"),
    # Metabase (PostgreSQL driver over JDBC)
    ("metabase.extra_float_digits", "SET extra_float_digits = 2"),
    ("metabase.isolation", "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"),
    ("metabase.schemas", """SELECT nspname AS "TABLE_SCHEM", current_database() AS "TABLE_CATALOG" FROM pg_catalog.pg_namespace WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_' OR nspname = (pg_catalog.current_schemas(true))[1]) ORDER BY "TABLE_SCHEM\""""),
    ("metabase.tables", """SELECT "n"."nspname" AS "schema", "c"."relname" AS "name", CASE "c"."relkind" WHEN 'r' THEN 'TABLE' WHEN 'v' THEN 'VIEW' ELSE NULL END AS "type", "d"."description" AS "description" FROM "pg_catalog"."pg_class" AS "c" INNER JOIN "pg_catalog"."pg_namespace" AS "n" ON "c"."relnamespace" = "n"."oid" LEFT JOIN "pg_catalog"."pg_description" AS "d" ON ("c"."oid" = "d"."objoid") AND ("d"."objsubid" = 0) WHERE ("n"."nspname" !~ '^pg_') AND ("n"."nspname" <> 'information_schema') AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND ("n"."nspname" IN ('public')) ORDER BY "type" ASC, "schema" ASC, "name" ASC"""),
    ("metabase.privileges", """select t.schemaname, t.tablename, pg_catalog.has_table_privilege(current_user, '"' || t.schemaname || '"."' || t.tablename || '"', 'select') as "select" from pg_catalog.pg_tables t where t.schemaname !~ '^pg_' and t.schemaname <> 'information_schema'"""),
    # DuckDB's postgres extension on ATTACH: one query over the catalog for every column
    ("duckdb.columns", """SELECT pg_namespace.oid AS namespace_id, relname, relpages, attname, pg_type.typname type_name, atttypmod type_modifier, pg_attribute.attndims ndim, attnum, pg_attribute.attnotnull AS notnull
        FROM pg_class JOIN pg_namespace ON relnamespace = pg_namespace.oid JOIN pg_attribute ON pg_class.oid=pg_attribute.attrelid JOIN pg_type ON atttypid=pg_type.oid
        WHERE attnum > 0 AND relkind IN ('r', 'v', 'm', 'f', 'p') ORDER BY namespace_id, relname, attnum"""),
]


def run(conn, prefix=""):
    failures = []
    for name, sql in QUERIES:
        started = time.monotonic()
        try:
            cur = conn.execute(sql)
            rows = cur.fetchall() if cur.description else []
            if not prefix:
                print(f"ok {name} {len(rows)} in {time.monotonic() - started:.2f} s", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            failures.append(name)
            secs = time.monotonic() - started
            # Parallel failures are reported too (on stderr), so a failed run says why.
            line = f"fail {name} after {secs:.2f} s: {first}"
            print(f"{prefix} {line}" if prefix else line, file=sys.stderr if prefix else sys.stdout, flush=True)
    return failures


def connect():
    return psycopg.connect(host="127.0.0.1", port=PORT, user="analyst", password=KEY, dbname="wxlake", autocommit=True)


with connect() as conn:
    run(conn)

# Tools open several connections and send their metadata queries at once.
results = {}


def worker(i):
    with connect() as conn:
        results[i] = run(conn, prefix="parallel")


threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for i in range(3):
    print(f"parallel {i} failed {','.join(results.get(i, ['no result'])) or '-'}")
