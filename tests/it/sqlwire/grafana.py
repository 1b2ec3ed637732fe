"""Grafana's SQL texts (grafana.sql) against wxlake's PostgreSQL wire, each over the simple
protocol (as lib/pq and pgx's Exec send them), the extended one with an unnamed statement,
and a named prepared statement described before it runs (pgx's statement cache). Prints
one line per text and protocol: `ok <id> <protocol> <rows> <first row as JSON> <the
first column of the first 50 rows as JSON>` or
`fail <id> <protocol> <error>`.

Usage: python grafana.py PORT KEY
"""
import json
import os
import sys

import psycopg
from psycopg import pq

PORT, KEY = sys.argv[1], sys.argv[2]


def blocks(path):
    out, current = [], None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("-- @id "):
            current = {"id": line[7:].strip(), "sql": []}
            out.append(current)
        elif current is None:
            continue
        elif line.startswith("-- @"):
            key, _, value = line[4:].partition(" ")
            if key == "params":
                current["params"] = json.loads(value)
        else:
            current["sql"].append(line)
    for b in out:
        b["sql"] = "\n".join(b["sql"]).strip()
    return out


def inline(sql, params):
    for i in range(len(params or []), 0, -1):
        sql = sql.replace(f"${i}", "'" + str(params[i - 1]).replace("'", "''") + "'")
    return sql


def result(r):
    status = pq.ExecStatus(r.status)
    if status == pq.ExecStatus.FATAL_ERROR:
        return None, r.error_field(pq.DiagnosticField.MESSAGE_PRIMARY).decode()
    if status == pq.ExecStatus.EMPTY_QUERY:
        return (0, [], []), None
    value = lambda t, i: None if r.get_value(t, i) is None else r.get_value(t, i).decode()
    first = [value(0, i) for i in range(r.nfields)] if r.ntuples else []
    # With the first column of the first 50 rows (a table list, say).
    firsts = [value(t, 0) for t in range(min(r.ntuples, 50))] if r.nfields else []
    return (r.ntuples, first, firsts), None


def simple(conn, sql, params):
    conn.pgconn.send_query(inline(sql, params).encode())
    answer = None
    while (r := conn.pgconn.get_result()) is not None:
        answer = result(r)
    return answer


def unnamed(conn, sql, params):
    return result(conn.pgconn.exec_params(sql.encode(), [str(v).encode() for v in params or []]))


def named(conn, sql, params):
    parsed = result(conn.pgconn.prepare(b"grafana_stmt", sql.encode(), None))
    if parsed[0] is None:
        return parsed
    described = result(conn.pgconn.describe_prepared(b"grafana_stmt"))
    if described[0] is None:
        return described
    try:
        return result(conn.pgconn.exec_prepared(b"grafana_stmt", [str(v).encode() for v in params or []]))
    finally:
        conn.pgconn.exec_(b"DEALLOCATE grafana_stmt")


conn = psycopg.connect(host="127.0.0.1", port=PORT, user="grafana", password=KEY, dbname="wxlake",
                       sslmode="disable", autocommit=True)
for b in blocks(os.path.join(os.path.dirname(os.path.abspath(__file__)), "grafana.sql")):
    for protocol, run in (("simple", simple), ("unnamed", unnamed), ("named", named)):
        answer, error = run(conn, b["sql"], b.get("params"))
        if error is not None:
            print("fail", b["id"], protocol, error.splitlines()[0], flush=True)
        else:
            rows, first, firsts = answer
            print("ok", b["id"], protocol, rows, json.dumps(first), json.dumps(firsts), flush=True)
