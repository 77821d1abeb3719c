"""Results of runs: recording a World to SQLite, Parquet or CSV, reading recordings back, their plots,
and parameter sweeps with their engines (local processes, Dask, Ray)."""
