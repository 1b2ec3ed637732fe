-- The SQL texts Grafana's PostgreSQL data source (grafana-postgresql-datasource) sends,
-- taken from grafana/grafana's sources (the file of each in @source), replayed by
-- tests/it/analyst_tools.rs over the simple and the extended protocol (sqlwire/grafana.py).
-- Block format: header lines start with "-- @"; every other line up to the next "-- @id" is
-- the SQL text, sent verbatim (pgx's ping text "-- ping" is itself SQL). @protocol: what
-- Grafana uses (simple: lib/pq without arguments, pgx PgConn.Exec; extended: pgx's cached
-- named statements). @params: JSON list of the $n values. Macros expanded as Grafana's Go
-- macro engine does, over 2026-11-20T00:00:00Z .. 2026-11-27T00:00:00Z, $__interval 5m.
-- Not here: $__timeGroup with TimescaleDB switched on (time_bucket), which Grafana uses only
-- when a user enables TimescaleDB (its probe below finds none).

-- @id health_ping_libpq
-- @source pkg/tsdb/grafana-postgresql-datasource/sqleng/handler_checkhealth.go CheckHealth -> e.Ping() -> database/sql DB.Ping -> lib/pq (*conn).Ping = cn.simpleQuery(";")
-- @protocol simple
-- @note Grafana <= 12.3 default backend (lib/pq). "Save & test" sends only this (an empty query).
;

-- @id health_ping_pgx
-- @source pkg/tsdb/grafana-postgresql-datasource/pgx/handler_checkhealth.go CheckHealth -> pgxpool.Pool.Ping -> pgconn.(*PgConn).Ping = Exec(ctx, "-- ping")
-- @protocol simple
-- @note pgx backend: behind feature toggle postgresDSUsePGX until 12.3, the only backend since 12.4 (toggle removed, grafana PR #113675). pgxpool also sends it before reusing a connection idle > 1s.
-- ping

-- @id version_probe
-- @source public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts getVersion() (datasource.ts getVersion, configuration/useAutoDetectFeatures.ts)
-- @protocol simple
SELECT current_setting('server_version_num')::int/100 as version

-- @id timescaledb_probe
-- @source public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts getTimescaleDBVersion() (only run when version >= 906)
-- @protocol simple
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'

-- @id show_tables
-- @source public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts showTables() — table dropdown / code-editor completion (Grafana 10.x-12.x; still used when no schema is chosen)
-- @protocol simple
SELECT
    CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          ) THEN 0 ELSE 1 END, 1

-- @id show_schemas
-- @source public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts showSchemas() — dataset (schema) dropdown, newest Grafana (datasource.ts fetchDatasets)
-- @protocol simple
SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name

-- @id show_tables_schema
-- @source public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts showTables('public') — newest Grafana, after a schema is picked
-- @protocol simple
SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1

-- @id columns_unqualified
-- @source public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts getSchema('observations') — column dropdown after picking table 'observations'
-- @protocol simple
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('observations'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('observations'))[1]
          AND quote_ident(table_name) = (parse_ident('observations'))[2]
        ELSE quote_ident(table_name) = 'observations'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END

-- @id columns_qualified
-- @source public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts getSchema('public.observations') — column dropdown when the table list offered 'public.observations'
-- @protocol simple
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('public.observations'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('public.observations'))[1]
          AND quote_ident(table_name) = (parse_ident('public.observations'))[2]
        ELSE quote_ident(table_name) = 'public.observations'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END

-- @id schemads_schemas
-- @source pkg/tsdb/grafana-postgresql-datasource/schema.go querySchemas
-- @protocol extended
SELECT schema_name FROM information_schema.schemata
		 WHERE schema_name NOT LIKE 'pg_%' AND schema_name != 'information_schema'
		 ORDER BY schema_name

-- @id schemads_tables
-- @source pkg/tsdb/grafana-postgresql-datasource/schema.go queryTables
-- @protocol extended
-- @params ["public"]
SELECT table_name FROM information_schema.tables
		 WHERE table_schema = $1 AND table_type IN ('BASE TABLE', 'VIEW')
		 ORDER BY table_name

-- @id schemads_columns
-- @source pkg/tsdb/grafana-postgresql-datasource/schema.go queryColumns
-- @protocol extended
-- @params ["public", "observations"]
SELECT column_name, data_type, udt_name, numeric_precision, numeric_scale
		 FROM information_schema.columns
		 WHERE table_schema = $1 AND table_name = $2
		 ORDER BY ordinal_position

-- @id schemads_column_values
-- @source pkg/tsdb/grafana-postgresql-datasource/schema.go ColumnValues (columns station_code, report_type)
-- @protocol extended
SELECT 'station_code' AS col_name, "station_code"::text AS val FROM (SELECT DISTINCT "station_code" FROM "public"."observations" WHERE "station_code" IS NOT NULL ORDER BY "station_code" LIMIT 100) sub_0 UNION ALL SELECT 'report_type' AS col_name, "report_type"::text AS val FROM (SELECT DISTINCT "report_type" FROM "public"."observations" WHERE "report_type" IS NOT NULL ORDER BY "report_type" LIMIT 100) sub_1

-- @id macro_time_timefilter
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__time(observation_time), temperature FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' ORDER BY 1"
SELECT observation_time AS "time", temperature FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' ORDER BY 1

-- @id macro_timefilter_ms_range
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__time(observation_time), temperature FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' ORDER BY 1"
-- @note relative range (now-6h): fractional seconds in the literals
SELECT observation_time AS "time", temperature FROM observations WHERE observation_time BETWEEN '2026-11-26T18:13:07.123Z' AND '2026-11-27T00:13:07.123Z' AND station_code = 'KNYC' ORDER BY 1

-- @id macro_timefrom_timeto
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT observation_time AS \"time\", temperature FROM observations WHERE observation_time >= $__timeFrom() AND observation_time < $__timeTo() AND station_code = 'KNYC' ORDER BY 1"
SELECT observation_time AS "time", temperature FROM observations WHERE observation_time >= '2026-11-20T00:00:00Z' AND observation_time < '2026-11-27T00:00:00Z' AND station_code = 'KNYC' ORDER BY 1

-- @id macro_timefrom_timeto_bare
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeFrom() AS \"from\", $__timeTo() AS \"to\""
SELECT '2026-11-20T00:00:00Z' AS "from", '2026-11-27T00:00:00Z' AS "to"

-- @id macro_timefrom_cast
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT count(*) AS n FROM observations WHERE observation_time BETWEEN $__timeFrom()::timestamptz AND $__timeTo()::timestamptz"
SELECT count(*) AS n FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z'::timestamptz AND '2026-11-27T00:00:00Z'::timestamptz

-- @id macro_timegroupalias_5m
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(observation_time,5m), avg(temperature) AS temperature FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1"
SELECT floor(extract(epoch from observation_time)/300)*300 AS "time", avg(temperature) AS temperature FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1

-- @id macro_timegroup_compat_metric
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroup(observation_time,'1h'), station_code AS metric, avg(temperature) AS temperature FROM observations WHERE $__timeFilter(observation_time) GROUP BY 1, 2 ORDER BY 1"
-- @note pre-5.3 form: a "," right after $__timeGroup(...) turns it into $__timeGroupAlias
SELECT floor(extract(epoch from observation_time)/3600)*3600 AS "time", station_code AS metric, avg(temperature) AS temperature FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' GROUP BY 1, 2 ORDER BY 1

-- @id macro_timegroup_groupby
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroup(observation_time,'5m') AS time, avg(temperature) AS temperature FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY $__timeGroup(observation_time,'5m') ORDER BY $__timeGroup(observation_time,'5m')"
SELECT floor(extract(epoch from observation_time)/300)*300 AS time, avg(temperature) AS temperature FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY floor(extract(epoch from observation_time)/300)*300 ORDER BY floor(extract(epoch from observation_time)/300)*300

-- @id macro_timegroup_fill_previous
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(observation_time,'1h',previous), avg(temperature) AS temperature FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1"
-- @note fill mode only sets FillMissing in Go (sqleng.SetupFillmode); the SQL is the same as without fill
SELECT floor(extract(epoch from observation_time)/3600)*3600 AS "time", avg(temperature) AS temperature FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1

-- @id macro_timegroup_fill_zero_null
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(observation_time,5m,0), avg(temperature) AS t0, max(temperature) AS tmax FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1"
SELECT floor(extract(epoch from observation_time)/300)*300 AS "time", avg(temperature) AS t0, max(temperature) AS tmax FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1

-- @id macro_timegroup_1d
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(observation_time,1d), max(temperature) AS high FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1"
SELECT floor(extract(epoch from observation_time)/86400)*86400 AS "time", max(temperature) AS high FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1

-- @id macro_timegroup_12d_exponent
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(observation_time,12d), count(*) AS n FROM observations WHERE $__timeFilter(observation_time) GROUP BY 1 ORDER BY 1"
-- @note Go %v prints 1036800 as 1.0368e+06
SELECT floor(extract(epoch from observation_time)/1.0368e+06)*1.0368e+06 AS "time", count(*) AS n FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' GROUP BY 1 ORDER BY 1

-- @id macro_timegroup_window
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT observation_time AS \"time\", temperature - lag(temperature) OVER (ORDER BY $__timeGroup(observation_time,'5m')) AS delta FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' ORDER BY 1"
SELECT observation_time AS "time", temperature - lag(temperature) OVER (ORDER BY floor(extract(epoch from observation_time)/300)*300) AS delta FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' ORDER BY 1

-- @id macro_timeepoch
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeEpoch(observation_time), temperature FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' ORDER BY 1"
SELECT extract(epoch from observation_time) as "time", temperature FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' ORDER BY 1

-- @id macro_unixepoch_filter_group
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__unixEpochGroupAlias(ts,5m), avg(temperature) AS temperature FROM (SELECT CAST(extract(epoch from observation_time) AS bigint) AS ts, temperature FROM observations WHERE station_code = 'KNYC') o WHERE $__unixEpochFilter(ts) GROUP BY 1 ORDER BY 1"
SELECT floor((ts)/300)*300 AS "time", avg(temperature) AS temperature FROM (SELECT CAST(extract(epoch from observation_time) AS bigint) AS ts, temperature FROM observations WHERE station_code = 'KNYC') o WHERE ts >= 1795132800 AND ts <= 1795737600 GROUP BY 1 ORDER BY 1

-- @id macro_unixepoch_from_to_nano
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__unixEpochFrom() AS f, $__unixEpochTo() AS t, $__unixEpochNanoFrom() AS nf, $__unixEpochNanoTo() AS nt"
SELECT 1795132800 AS f, 1795737600 AS t, 1795132800000000000 AS nf, 1795737600000000000 AS nt

-- @id macro_unixepoch_nano_filter
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT count(*) AS n FROM (SELECT CAST(extract(epoch from observation_time) AS bigint) * 1000000000 AS tsn FROM observations) o WHERE $__unixEpochNanoFilter(tsn)"
SELECT count(*) AS n FROM (SELECT CAST(extract(epoch from observation_time) AS bigint) * 1000000000 AS tsn FROM observations) o WHERE tsn >= 1795132800000000000 AND tsn <= 1795737600000000000

-- @id macro_interval_ms
-- @source pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(observation_time,$__interval), avg(temperature) AS temperature, $__interval_ms AS interval_ms FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1"
-- @note $__interval/$__interval_ms replaced by sqleng Interpolate from query.Interval (here 5m)
SELECT floor(extract(epoch from observation_time)/300)*300 AS "time", avg(temperature) AS temperature, 300000 AS interval_ms FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1

-- @id date_trunc_hour
-- @source user-written (Grafana docs pattern) + pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT date_trunc('hour', observation_time) AS \"time\", avg(temperature) AS temperature FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1"
SELECT date_trunc('hour', observation_time) AS "time", avg(temperature) AS temperature FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1

-- @id date_trunc_day_local
-- @source user-written (Grafana docs pattern) + pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT date_trunc('day', observation_time AT TIME ZONE 'America/New_York') AS \"time\", max(temperature) AS high FROM observations WHERE $__timeFilter(observation_time) AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1"
SELECT date_trunc('day', observation_time AT TIME ZONE 'America/New_York') AS "time", max(temperature) AS high FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND station_code = 'KNYC' GROUP BY 1 ORDER BY 1

-- @id metric_column_series
-- @source user-written time-series with metric column + pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(valid_time,1h), model AS metric, avg(temperature_f) AS temperature_f FROM forecasts WHERE $__timeFilter(valid_time) AND location_name = (SELECT min(location_name) FROM forecasts) GROUP BY 1, 2 ORDER BY 1"
SELECT floor(extract(epoch from valid_time)/3600)*3600 AS "time", model AS metric, avg(temperature_f) AS temperature_f FROM forecasts WHERE valid_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' AND location_name = (SELECT min(location_name) FROM forecasts) GROUP BY 1, 2 ORDER BY 1

-- @id builder_generated
-- @source packages/grafana-sql/src/utils/sql.utils.ts createSelectClause + grafana-postgresql-datasource/sqlUtil.ts toRawSql, then pkg/tsdb/grafana-postgresql-datasource/macros.go (+ sqleng/sql_engine.go Interpolate)
-- @protocol simple
-- @template "SELECT $__timeGroupAlias(observation_time,5m), AVG(temperature) FROM observations WHERE $__timeFilter(observation_time) GROUP BY observation_time LIMIT 50 "
-- @note visual builder: columns [$__timeGroupAlias(observation_time,$__interval), AVG(temperature)], group by observation_time, default limit 50; the frontend replaces $__interval (here 5m)
SELECT floor(extract(epoch from observation_time)/300)*300 AS "time", AVG(temperature) FROM observations WHERE observation_time BETWEEN '2026-11-20T00:00:00Z' AND '2026-11-27T00:00:00Z' GROUP BY observation_time LIMIT 50 

-- @id variable_query
-- @source user-written template-variable query (SqlDatasource.metricFindQuery, format=table)
-- @protocol simple
-- @template "SELECT DISTINCT station_code FROM observations ORDER BY 1"
SELECT DISTINCT station_code FROM observations ORDER BY 1
