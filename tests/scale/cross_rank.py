"""The slowest rank of every collective instance, across per-node Parquet files of `ncclscope
analyze --parquet`, on DuckDB (one machine) or Dask's distributed scheduler (a local cluster of two
workers standing in for a real one).

Why durations, not start times: each per-node job synchronises only its own node's clocks, but the
members of one collective finish together, so the member whose kernel ran shortest arrived last.
`end_ns - start_ns` compares across nodes whatever their clocks. Ties go to the lowest rank.

    python cross_rank.py duckdb|dask 'out/*.parquet'   ->  JSON on stdout
"""

import json
import sys

# Rank packed under the duration, so that one min() gives the shortest kernel, lowest rank first.
RANKS = 100_000

DUCKDB_SQL = f"""
SELECT comm_id, op_count,
       min((end_ns - start_ns) * {RANKS} + global_rank) % {RANKS} AS slowest_rank,
       count(*) AS members,
       max(end_ns - start_ns) - min(end_ns - start_ns) AS skew_ns
FROM read_parquet($files)
WHERE matched AND comm_id IS NOT NULL AND name NOT IN ('Send', 'Recv', 'SendRecv')
GROUP BY comm_id, op_count
HAVING count(*) >= 2
ORDER BY comm_id, op_count
"""


def with_duckdb(files):
    import duckdb

    rows = duckdb.execute(DUCKDB_SQL, {"files": files}).fetchall()
    return [dict(zip(["comm_id", "op_count", "slowest_rank", "members", "skew_ns"], r)) for r in rows]


def with_dask(files):
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster):
        df = dd.read_parquet(files, columns=["global_rank", "start_ns", "end_ns", "matched", "comm_id", "op_count", "name"])
        df = df[df.matched & df.comm_id.notnull() & ~df.name.isin(["Send", "Recv", "SendRecv"])]
        df = df.assign(dur=df.end_ns - df.start_ns)
        df = df.assign(key=df.dur * RANKS + df.global_rank)
        g = df.groupby(["comm_id", "op_count"]).agg({"key": "min", "dur": ["min", "max", "count"]}).compute()
    out = []
    for (comm_id, op_count), r in g.sort_index().iterrows():
        members = int(r[("dur", "count")])
        if members < 2:
            continue
        out.append({
            "comm_id": comm_id,
            "op_count": int(op_count),
            "slowest_rank": int(r[("key", "min")]) % RANKS,
            "members": members,
            "skew_ns": int(r[("dur", "max")] - r[("dur", "min")]),
        })
    return out


if __name__ == "__main__":
    engine, pattern = sys.argv[1], sys.argv[2]
    import glob

    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit(f"cross_rank.py: no file matches {pattern}")
    result = with_duckdb(files) if engine == "duckdb" else with_dask(files)
    json.dump(result, sys.stdout)
