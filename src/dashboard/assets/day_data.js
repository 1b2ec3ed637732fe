// The day view's data, fetched from the REST API: what the first paint needs (the station's
// days and latest runs, the day's observations, a few models, the NWS hourly forecast), what
// fills in after it (the other models, pacing under both logics), and the polls that keep a
// today view current (a new model run, a new NWS version, the end of the trading day).
'use strict';

WX.dayData = (() => {
  const { epoch } = WX.fmt;
  const HOUR = 3600;
  /** Models drawn by default, in order of preference, until the user picks others. */
  const DEFAULT_US = ['HRRR', 'NBM', 'GFS', 'ECMWF-IFS'];
  const DEFAULT_INTL = ['ECMWF-IFS', 'ICON', 'GFS', 'UKMO'];
  const SHOWN_KEY = 'wxlake.models';

  const isoZ = (sec) => new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const now = () => WX.api.now();

  /** The models the user keeps on the chart (a display preference, not a secret). */
  const shownModels = (us) => {
    try {
      const saved = JSON.parse(localStorage.getItem(SHOWN_KEY) || 'null');
      if (Array.isArray(saved)) return saved;
    } catch (_) { /* ignore a damaged preference */ }
    return us ? DEFAULT_US : DEFAULT_INTL;
  };
  const saveShown = (models) => localStorage.setItem(SHOWN_KEY, JSON.stringify(models));

  /**
   * One model's run over the view's window. A day not over yet: its latest run (the one the
   * station answer named). A past day: the last run issued before the day began, the forecast the
   * day was traded on (today's latest run starts after that day and would draw nothing),
   * or the first run issued during the day when the lake holds none from before.
   */
  const fetchRun = (d, model) => {
    const q = { location_name: d.st.station_code, model, start_valid_time: isoZ(d.start), end_valid_time: isoZ(d.end) };
    const failed = (e) => ({ model, error: e, checked: now() });
    if (d.today || now() < d.end) {
      return WX.api.get('/api/v2/forecasts.php', { ...q, run: 'latest' })
        .then((r) => ({ model, run: r.headers.get('X-Run-Time'), rows: r.body, checked: now() }), failed);
    }
    return WX.api.get('/api/v2/forecasts.php', q).then((r) => {
      const runs = [...new Set(r.body.map((row) => row.run_time))].sort((a, b) => epoch(a) - epoch(b));
      const before = runs.filter((t) => epoch(t) <= d.start);
      const run = before.length ? before[before.length - 1] : runs[0];
      return { model, run: run || null, rows: r.body.filter((row) => row.run_time === run), checked: now() };
    }, failed);
  };

  const fetchNws = (d) => (d.us
    ? WX.api.get('/api/v2/nws_forecasts.php', { station_code: d.st.station_code, date: d.st.days.nws.date })
      .then((r) => ({ ...r.body, checked: now() }), (e) => ({ error: e, checked: now() }))
    : Promise.resolve(null));

  const fetchPacing = (d, logic) => WX.api.get('/api/v2/pacing.php', { station_code: d.st.station_code, logic })
    .then((r) => ({ ...r.body, checked: now() }), (e) => ({ error: e, checked: now() }));

  /**
   * The odds of the day's high and low (brackets.php, Developer and Enterprise), on the
   * ladder already shown (the first answer's, or a stream event's): a re-read never moves
   * the brackets under the reader.
   */
  const fetchBrackets = (d) => Promise.all(['high', 'low'].map((target) => {
    const shown = d.brackets && d.brackets[target] && !d.brackets[target].error ? d.brackets[target] : null;
    const ladder = shown && shown.date === (d.today ? shown.date : d.st.days.nws.date)
      ? shown.brackets.map((b) => b.label).join(',') : null;
    return WX.api.get('/api/v2/brackets.php', {
      station_code: d.st.station_code, target, date: d.today ? null : d.st.days.nws.date, brackets: ladder,
    }).then((r) => ({ ...r.body, checked: now() }), (e) => ({ error: e, checked: now() }));
  })).then(([high, low]) => ({ high, low }));

  /**
   * Per target, the newer of the odds shown and a re-read's (by `computed_at`): a re-read
   * sent before a stream event and answered after it must not put the older odds back.
   */
  const newerBrackets = (shown, read) => Object.fromEntries(['high', 'low'].map((t) => {
    const [have, got] = [shown && shown[t], read[t]];
    const keep = have && !have.error && got && !got.error && have.date === got.date
      && epoch(have.computed_at) > epoch(got.computed_at);
    return [t, keep ? have : got];
  }));

  /** The station's days, svc values and latest runs (`date` omitted: each logic's today). */
  const station = async (code, date) => (await WX.api.get('/api/v2/stations.php', { station_code: code, date, include: 'latest_runs' })).body[0];

  /** The view's time span: both logics' day windows. */
  const span = (st) => ({
    start: Math.min(epoch(st.days.nws.start_utc), epoch(st.days.wu.start_utc)),
    end: Math.max(epoch(st.days.nws.end_utc), epoch(st.days.wu.end_utc)),
  });

  /** What the first paint needs: two round trips (the station, then the rest together). */
  const load = async (code, date) => {
    const st = await station(code, date);
    // Where a load's time goes (the browser test prints these): the station answer here,
    // the rest of the data below, the drawing in the view.
    performance.mark('wx-station');
    const { start, end } = span(st);
    const us = st.units === 'fahrenheit';
    const d = { st, start, end, us, today: !date, obs: [], runs: new Map(), nws: null, pacing: {}, brackets: null, alerts: [], reports: {}, loadedAt: now() };
    const available = (st.latest_runs || []).map((r) => r.model);
    const wanted = shownModels(us).filter((m) => available.includes(m));
    // Nothing the user asked for exists here: the first available defaults, then any.
    const fallback = (us ? DEFAULT_US : DEFAULT_INTL).filter((m) => available.includes(m));
    d.shown = new Set(wanted.length ? wanted : (fallback.length ? fallback : available.slice(0, 4)));
    const histEnd = Math.min(end, Math.floor(now()) + 60);
    const chunks = [];
    for (let a = start; a < histEnd; a += 24 * HOUR) chunks.push([a, Math.min(a + 24 * HOUR, histEnd)]);
    const [hist, runs, nws] = await Promise.all([
      Promise.all(chunks.map(([a, b]) => WX.api.get('/api/v2/observations.php', {
        station_code: code, start_time: isoZ(a), end_time: isoZ(b),
      }).then((r) => r.body))),
      Promise.all([...d.shown].map((m) => fetchRun(d, m))),
      fetchNws(d),
    ]);
    performance.mark('wx-data');
    const seen = new Set();
    d.obs = hist.flat().filter((o) => !seen.has(o.id) && seen.add(o.id));
    runs.forEach((r) => d.runs.set(r.model, r));
    d.nws = nws;
    return d;
  };

  /** After the first paint: every other model with a run, and pacing under both logics. */
  const loadRest = async (d) => {
    const others = (d.st.latest_runs || []).map((r) => r.model).filter((m) => !d.runs.has(m));
    const [runs, nws, wu, brackets] = await Promise.all([
      Promise.all(others.map((m) => fetchRun(d, m))),
      d.today ? fetchPacing(d, 'nws') : null,
      d.today ? fetchPacing(d, 'wu') : null,
      fetchBrackets(d),
    ]);
    runs.forEach((r) => d.runs.set(r.model, r));
    if (nws) d.pacing = { nws, wu };
    d.brackets = brackets;
  };

  /**
   * The poll of a today view: the station answer again (a resync of the svc values, and the
   * latest runs: a model whose run changed is fetched again), the NWS version, pacing.
   * Resolves to 'rollover' when a logic's day changed (the caller reloads the view).
   */
  const poll = async (d) => {
    const st = await station(d.st.station_code);
    if (st.days.nws.date !== d.st.days.nws.date || st.days.wu.date !== d.st.days.wu.date) return 'rollover';
    const changed = (st.latest_runs || []).filter((r) => {
      const have = d.runs.get(r.model);
      return !have || have.error || have.run !== r.run_time;
    }).map((r) => r.model);
    const premium = !(d.pacing.nws && d.pacing.nws.error && d.pacing.nws.error.status === 403);
    const [runs, nws, pn, pw, brackets] = await Promise.all([
      Promise.all(changed.map((m) => fetchRun(d, m))),
      fetchNws(d),
      premium ? fetchPacing(d, 'nws') : null,
      premium ? fetchPacing(d, 'wu') : null,
      premium ? fetchBrackets(d) : null,
    ]);
    if (brackets) d.brackets = newerBrackets(d.brackets, brackets);
    // The stream's values may be newer than this answer's by a few seconds: keep the
    // higher high and lower low of the two for the same day (unless a CLI made it final).
    for (const logic of ['nws', 'wu']) {
      const mine = d.st.svc[logic];
      const theirs = st.svc[logic];
      const keep = (which, better) => {
        const k = `svc_${which}`;
        if (!theirs.is_final && mine[k] !== null && theirs[k] !== null && better(mine[k], theirs[k])) {
          theirs[k] = mine[k];
          theirs[`time_of_${which}_utc`] = mine[`time_of_${which}_utc`];
        }
      };
      keep('high', (a, b) => a > b);
      keep('low', (a, b) => a < b);
    }
    d.st = st;
    runs.forEach((r) => d.runs.set(r.model, r));
    const now_ = now();
    (st.latest_runs || []).forEach((r) => { const have = d.runs.get(r.model); if (have) have.checked = now_; });
    if (nws && !nws.error) d.nws = nws;
    else if (d.nws) d.nws.checkFailed = nws && nws.error;
    if (pn) d.pacing = { nws: pn, wu: pw };
    d.polledAt = now_;
    return 'ok';
  };

  /** The logics whose day has ended by `t` (epoch s). */
  const ended = (d, t) => ['nws', 'wu'].filter((l) => t >= epoch(d.st.days[l].end_utc));

  return { load, loadRest, poll, ended, shownModels, saveShown, isoZ, HOUR, newerBrackets };
})();
