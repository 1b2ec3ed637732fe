"""The files of a wxlake table's current Delta version, for engines that read Parquet.

A lake table's directory also holds files a compaction or a job's publish replaced (kept
for `--keep-replaced-secs`) and files being written: only the Delta log says which make
up the table now. DuckDB reads the list (its `delta` extension needs a download), Polars
reads the table itself (`scan_delta`). With this the benchmarks read a lake that a
server is changing, instead of refusing to run or counting rows twice.
"""

from deltalake import DeltaTable


def snapshot_files(table_dir):
    """Absolute paths of the files of the table's latest version (sorted)."""
    t = DeltaTable(table_dir)
    return sorted(u.removeprefix("file://") for u in t.file_uris())


def duck_list(table_dir):
    """The table's files as a DuckDB list literal, for read_parquet(...)."""
    files = snapshot_files(table_dir)
    if not files:
        raise SystemExit(f"{table_dir}: the table has no file")
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
