//! SQL jobs: `jobs/*.toml` declarations running `sql/*.sql` into derived lake tables.
