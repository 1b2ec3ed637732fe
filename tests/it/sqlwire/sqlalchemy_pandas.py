"""SQLAlchemy 2 + psycopg 3 and pandas against wxlake's PostgreSQL wire, as an analyst uses
them. Prints one line per step: `ok <name> <value>` or `fail <name> <first line of the
error>`; the Rust test asserts on them.

Usage: python sqlalchemy_pandas.py MODE PORT KEY
  MODE inspect: connect (version probe, hstore probe), the inspector, table autoload,
                pd.read_sql_table, a nested transaction, prepared statements + rollback;
  MODE stream:  a million rows through stream_results=True, then through pandas'
                chunksize on a streaming connection, then whole, each with the growth of
                the client's peak memory (MiB);
  MODE cursors: psycopg named cursors (a %s parameter, binary rows), both
                implementations (PSYCOPG_IMPL decides), savepoints, DEALLOCATE.
"""
import resource
import sys

import pandas as pd
import psycopg
import sqlalchemy as sa

MODE, PORT, KEY = sys.argv[1], sys.argv[2], sys.argv[3]
URL = f"postgresql+psycopg://analyst:{KEY}@127.0.0.1:{PORT}/wxlake?sslmode=disable"
MILLION = "SELECT value AS n, 'a row of padding text, the same in every row' AS pad FROM generate_series(1, 1000000)"


def step(name, f):
    try:
        value = f()
        print("ok", name, value, flush=True)
    except Exception as e:  # the test reads the line, whatever the error
        print("fail", name, str(e).splitlines()[0] if str(e) else type(e).__name__, flush=True)


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def inspect():
    engine = sa.create_engine(URL)
    with engine.connect() as conn:
        step("server_version", lambda: ".".join(map(str, conn.dialect.server_version_info)))
    i = sa.inspect(engine)
    step("schemas", lambda: ",".join(i.get_schema_names()))
    step("tables", lambda: ",".join(i.get_table_names()))
    step("views", lambda: len(i.get_view_names()))
    step("columns", lambda: ",".join(f"{c['name']}:{c['type']}:{c['nullable']}" for c in i.get_columns("stations")))
    step("pk", lambda: i.get_pk_constraint("stations")["constrained_columns"])
    step("foreign_keys", lambda: len(i.get_foreign_keys("stations")))
    step("indexes", lambda: len(i.get_indexes("stations")))
    step("unique", lambda: len(i.get_unique_constraints("stations")))
    step("checks", lambda: len(i.get_check_constraints("stations")))
    step("comment", lambda: i.get_table_comment("stations")["text"])
    step("has_table", lambda: (i.has_table("stations"), i.has_table("no_such_table")))
    step("autoload", lambda: len(sa.Table("observations", sa.MetaData(), autoload_with=engine).columns))
    step("reflect", lambda: (lambda m: (m.reflect(engine), len(m.tables))[1])(sa.MetaData()))
    step("read_sql_table", lambda: "x".join(map(str, pd.read_sql_table("stations", engine).shape)))
    step("column_names", lambda: ",".join(pd.read_sql(sa.text("SELECT count(*), avg(latitude), 1, station_code FROM stations GROUP BY station_code LIMIT 1"), engine).columns))
    step("read_sql_params", lambda: len(pd.read_sql(sa.text("SELECT * FROM stations WHERE station_code = :s"), engine, params={"s": "KNYC"})))

    def escaped_like():
        # autoescape renders `LIKE %(param)s || '%%' ESCAPE '/'`.
        code = sa.table("stations", sa.column("station_code")).c.station_code
        with engine.connect() as conn:
            found = [conn.scalars(sa.select(code).where(code.startswith(p, autoescape=True))).all() for p in ("KNY", "KN_")]
            return f"{found[0]} {found[1]}"

    step("like_escape", escaped_like)

    def nested():
        with engine.connect() as conn, conn.begin():
            savepoint = conn.begin_nested()
            try:
                conn.execute(sa.text("SELECT 1 / 0"))
            except sa.exc.DBAPIError:
                savepoint.rollback()
            return conn.execute(sa.text("SELECT 41 + 1")).scalar()

    step("nested_transaction", nested)

    def prepared_then_rollback():
        # psycopg prepares a statement run 5 times; a rollback then sends DEALLOCATE ALL.
        with engine.connect() as conn:
            for _ in range(7):
                conn.execute(sa.text("SELECT name FROM stations WHERE station_code = :s"), {"s": "KNYC"}).all()
            conn.rollback()
            return conn.execute(sa.text("SELECT name FROM stations WHERE station_code = :s"), {"s": "KNYC"}).scalar()

    step("prepared_rollback", prepared_then_rollback)


def stream():
    engine = sa.create_engine(URL)
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT 1")).all()
    base = peak_mib()

    def streamed():
        with engine.connect() as conn:
            result = conn.execution_options(stream_results=True, max_row_buffer=10000).execute(sa.text(MILLION))
            rows = total = 0
            for part in result.partitions(10000):
                rows += len(part)
                total += sum(r.n for r in part)
            return f"{rows} {total} {peak_mib() - base:.0f}"

    step("stream_results", streamed)
    base = peak_mib()

    def chunked():
        with engine.connect().execution_options(stream_results=True) as conn:
            rows = chunks = 0
            for chunk in pd.read_sql(sa.text(MILLION), conn, chunksize=20000):
                rows += len(chunk)
                chunks += 1
            return f"{rows} {chunks} {peak_mib() - base:.0f}"

    step("read_sql_chunksize", chunked)
    base = peak_mib()
    # What the million rows cost the client at once: the yardstick of the two above.
    step("read_sql_whole", lambda: f"{len(pd.read_sql(sa.text(MILLION), engine))} {peak_mib() - base:.0f}")


def cursors():
    conn = psycopg.connect(host="127.0.0.1", port=PORT, user="analyst", password=KEY, dbname="wxlake", sslmode="disable")
    step("impl", lambda: psycopg.pq.__impl__)
    with conn.cursor(name="by_code") as cur:
        cur.execute("SELECT station_code, name FROM stations WHERE station_code = %s", ("KNYC",))
        step("named_description", lambda: ",".join(d.name for d in cur.description))
        step("named_rows", lambda: cur.fetchall())
    with conn.cursor(name="counted", binary=True) as cur:
        cur.execute("SELECT value AS n FROM generate_series(1, 2500) WHERE value > %s", (0,))
        step("binary_fetchmany", lambda: (len(cur.fetchmany(1000)), len(cur.fetchmany(1000)), len(cur.fetchall())))
    conn.execute("DECLARE plain CURSOR FOR SELECT 1 AS one")
    conn.execute("DECLARE kept CURSOR WITH HOLD FOR SELECT 2 AS two")
    conn.commit()
    step("plain_after_commit", lambda: conn.execute("FETCH 1 FROM plain").fetchall())
    conn.rollback()
    step("held_after_commit", lambda: conn.execute("FETCH 1 FROM kept").fetchall())
    conn.execute("CLOSE kept")
    conn.commit()
    with conn.transaction():
        try:
            with conn.transaction():
                conn.execute("SELECT 1 / 0")
        except psycopg.Error:
            pass
        step("after_savepoint_rollback", lambda: conn.execute("SELECT 7").fetchone()[0])
    step("deallocate_all", lambda: conn.execute("DEALLOCATE ALL").statusmessage)


{"inspect": inspect, "stream": stream, "cursors": cursors}[MODE]()
