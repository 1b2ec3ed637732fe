// The station day view: observations against each model's latest run and the NWS hourly
// forecast, the running high/low under both settlement logics with their day windows, the
// official DSM/CLI values, 6-hour groups, data-quality gaps and flags; live from the relay.
'use strict';

WX.day = (() => {
  const { el, temp, conv, epoch, clock, age, sym, shown } = WX.fmt;
  const US_MODELS = ['HRRR', 'NBM', 'GFS', 'ECMWF-IFS'];
  const INTL_MODELS = ['ECMWF-IFS', 'ICON', 'GFS', 'UKMO'];
  const MODEL_COLORS = ['#1f77b4', '#9467bd', '#8c564b', '#17becf', '#bcbd22', '#7f7f7f'];
  const HOUR = 3600;

  const isoZ = (sec) => new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

  /** Everything the view shows, fetched from the REST API. */
  const load = async (code, date) => {
    const [st] = (await WX.api.get('/api/v2/stations.php', { station_code: code, date })).body;
    const start = Math.min(epoch(st.days.nws.start_utc), epoch(st.days.wu.start_utc));
    const end = Math.max(epoch(st.days.nws.end_utc), epoch(st.days.wu.end_utc));
    const histEnd = Math.min(end, Math.floor(Date.now() / 1000) + 60);
    const chunks = [];
    for (let a = start; a < histEnd; a += 24 * HOUR) chunks.push([a, Math.min(a + 24 * HOUR, histEnd)]);
    const us = st.units === 'fahrenheit';
    const models = us ? US_MODELS : INTL_MODELS;
    // Pacing is slower to compute and not needed for the first paint: it fills in after.
    const pacing = WX.api.get('/api/v2/pacing.php', { station_code: code, logic: 'nws' }).then((r) => r.body, (e) => ({ error: e }));
    const [hist, runs, nws] = await Promise.all([
      Promise.all(chunks.map(([a, b]) => WX.api.get('/api/v2/observations.php', {
        station_code: code, start_time: isoZ(a), end_time: isoZ(b),
      }).then((r) => r.body))),
      Promise.all(models.map((m) => WX.api.get('/api/v2/forecasts.php', {
        location_name: code, model: m, run: 'latest', start_valid_time: isoZ(start), end_valid_time: isoZ(end),
      }).then((r) => ({ model: m, run: r.headers.get('X-Run-Time'), rows: r.body }), (e) => ({ model: m, error: e })))),
      us ? WX.api.get('/api/v2/nws_forecasts.php', { station_code: code, date: st.days.nws.date })
        .then((r) => r.body, (e) => ({ error: e })) : Promise.resolve(null),
    ]);
    const seen = new Set();
    const obs = hist.flat().filter((o) => !seen.has(o.id) && seen.add(o.id));
    return { st, start, end, obs, runs, nws, pacing: null, pacingLater: pacing, alerts: [], today: !date };
  };

  // ---- the chart (uPlot) ----

  /** Aligned series for uPlot: one x array (epoch s), one y array per series, nulls between. */
  const chartData = (d) => {
    const u = d.st.units;
    const xs = new Set([d.start, d.end]);
    const obsPts = d.obs.filter((o) => o.temperature_display !== null).map((o) => [epoch(o.observation_time), o.temperature_display]);
    obsPts.forEach(([t]) => xs.add(t));
    const modelPts = d.runs.filter((r) => !r.error && r.rows.length).map((r) => ({
      name: r.model,
      pts: r.rows.map((row) => [epoch(row.valid_time), u === 'fahrenheit' ? row.temperature_f : row.temperature_c]),
    }));
    modelPts.forEach((m) => m.pts.forEach(([t]) => xs.add(t)));
    let nwsPts = [];
    if (d.nws && !d.nws.error && d.nws.hourly_temps) {
      const s0 = epoch(d.st.days.nws.start_utc);
      nwsPts = d.nws.hourly_temps.map((v, i) => [s0 + i * HOUR, v]).filter(([, v]) => v !== null);
      nwsPts.forEach(([t]) => xs.add(t));
    }
    const lines = [];
    for (const logic of ['nws', 'wu']) {
      const s = d.st.svc[logic];
      const a = epoch(d.st.days[logic].start_utc);
      const b = epoch(d.st.days[logic].end_utc);
      xs.add(a); xs.add(b);
      lines.push({ name: `${logic} high`, logic, v: s.svc_high, a, b, color: '#d62728', dash: logic === 'nws' ? [] : [6, 4] });
      lines.push({ name: `${logic} low`, logic, v: s.svc_low, a, b, color: '#2c7fb8', dash: logic === 'nws' ? [] : [6, 4] });
    }
    const x = [...xs].sort((p, q) => p - q);
    const idx = new Map(x.map((t, i) => [t, i]));
    const col = (pts, from) => {
      const y = new Array(x.length).fill(null);
      for (const [t, v] of pts) y[idx.get(t)] = conv(v, from);
      return y;
    };
    const series = [{}];
    const data = [x];
    series.push({ label: 'observed', stroke: '#222', width: 1.5, points: { show: true, size: 5, fill: '#222' }, spanGaps: true });
    data.push(col(obsPts, u));
    lines.forEach((l) => {
      series.push({ label: l.name, stroke: l.color, width: 1.5, dash: l.dash, spanGaps: true, points: { show: false } });
      data.push(col(l.v === null ? [] : [[l.a, l.v], [l.b, l.v]], u));
    });
    modelPts.forEach((m, i) => {
      series.push({ label: m.name, stroke: MODEL_COLORS[i % MODEL_COLORS.length], width: 1, spanGaps: true, points: { show: false } });
      data.push(col(m.pts, u));
    });
    if (nwsPts.length) {
      series.push({ label: 'NWS hourly', stroke: '#ff7f0e', width: 2, spanGaps: true, points: { show: false } });
      data.push(col(nwsPts, 'fahrenheit'));
    }
    return { series, data };
  };

  /** Shaded spans: each logic's day window edges, and the data-quality gaps. */
  const bandsHook = (d) => (u) => {
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    ctx.save();
    for (const logic of ['nws', 'wu']) {
      const s = d.st.svc[logic];
      for (const w of (s.data_quality[logic] || {}).warnings || []) {
        const a = epoch(w.first_missing_utc);
        const b = epoch(w.last_missing_utc) || Date.now() / 1000;
        if (a === null) continue;
        const x0 = u.valToPos(a, 'x', true);
        const x1 = Math.max(u.valToPos(b, 'x', true), x0 + 2);
        ctx.fillStyle = 'rgba(214, 39, 40, 0.08)';
        ctx.fillRect(x0, top, x1 - x0, height);
      }
      ctx.strokeStyle = logic === 'nws' ? 'rgba(0,0,0,0.35)' : 'rgba(0,0,0,0.2)';
      ctx.setLineDash(logic === 'nws' ? [] : [4, 4]);
      for (const t of [epoch(d.st.days[logic].start_utc), epoch(d.st.days[logic].end_utc)]) {
        const x = Math.round(u.valToPos(t, 'x', true));
        ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + height); ctx.stroke();
      }
    }
    ctx.restore();
  };

  const chart = (d, box) => {
    const { series, data } = chartData(d);
    const tz = d.st.timezone;
    const opts = {
      width: Math.max(480, (box.clientWidth || 900) - 16),
      height: 360,
      series,
      scales: { x: { time: true } },
      axes: [
        { values: (u, ticks) => ticks.map((t) => clock(t, tz)) },
        { label: sym(shown(d.st.units)), values: (u, ticks) => ticks.map((t) => t.toFixed(0)) },
      ],
      legend: { live: true },
      hooks: { drawAxes: [bandsHook(d)] },
    };
    box.replaceChildren();
    return new uPlot(opts, data, box);
  };

  // ---- the panels ----

  const svcCell = (d, logic, which) => {
    const s = d.st.svc[logic];
    const v = s[`svc_${which}`];
    const t = epoch(s[`time_of_${which}_utc`]);
    const fresh = d.alerts.find((a) => a.logic === logic && a.which === which);
    return el('td', { id: `svc-${logic}-${which}`, class: `num ${which === 'high' ? 'hi' : 'lo'}${fresh ? ' fresh' : ''}`, dataset: { value: v === null ? '' : v } },
      el('b', {}, temp(v, d.st.units)),
      el('div', { class: 'sub' }, t === null ? '' : `at ${clock(t, d.st.timezone)}`, s[`${which}_source`] ? ` · ${s[`${which}_source`].replace(/_/g, ' ')}` : ''),
      fresh ? el('div', { class: 'newflag' }, `NEW ${which.toUpperCase()}`) : null);
  };

  /** The official report values of the nws day, from the observation records (spec 2.1). */
  const official = (d) => {
    const day = d.st.days.nws;
    const a = epoch(day.start_utc);
    const b = epoch(day.end_utc);
    const inDay = d.obs.filter((o) => { const t = epoch(o.observation_time); return t >= a && t < b; });
    const pick = (f) => { for (let i = inDay.length - 1; i >= 0; i -= 1) if (inDay[i][f] != null) return inDay[i][f]; return null; };
    return { cli: [pick('cli_high_display'), pick('cli_low_display')], dsm: [pick('dsm_high_display'), pick('dsm_low_display')] };
  };

  const settlement = (d) => {
    const u = d.st.units;
    const off = official(d);
    const dqText = (logic) => {
      const dq = d.st.svc[logic].data_quality[logic] || {};
      if (dq.ok) return el('span', { class: 'ok' }, 'complete');
      return (dq.warnings || []).map((w) => el('div', { class: w.severity === 'critical' ? 'bad' : 'warn' }, w.message));
    };
    const row = (logic, label) => {
      const s = d.st.svc[logic];
      return el('tr', {},
        el('th', {}, label, el('div', { class: 'sub' }, `${d.st.days[logic].date} · ${clock(epoch(d.st.days[logic].start_utc), d.st.timezone)}–${clock(epoch(d.st.days[logic].end_utc), d.st.timezone)}`)),
        svcCell(d, logic, 'high'), svcCell(d, logic, 'low'),
        el('td', {}, s.is_final ? el('span', { class: 'ok' }, 'final (CLI)') : 'preliminary',
          s.high_valid_through_utc ? el('div', { class: 'sub' }, `high locked through ${clock(epoch(s.high_valid_through_utc), d.st.timezone)}`) : null,
          s.anomaly ? el('div', { class: 'bad' }, 'anomaly: official report ≥5°F beyond nearby readings') : null),
        el('td', {}, dqText(logic)));
    };
    return el('table', { class: 'settle', id: 'settlement' },
      el('thead', {}, el('tr', {}, ['logic · day window', 'high', 'low', 'status', 'data quality'].map((h) => el('th', {}, h)))),
      el('tbody', {}, row('nws', 'NWS (Local Standard Time)'), row('wu', 'WU (civil time)'),
        el('tr', {}, el('th', {}, 'DSM'), el('td', { class: 'num', id: 'dsm-high' }, temp(off.dsm[0], u)), el('td', { class: 'num' }, temp(off.dsm[1], u)), el('td', { class: 'sub', colspan: 2 }, off.dsm[0] === null ? 'not released yet' : 'daily summary message')),
        el('tr', {}, el('th', {}, 'CLI'), el('td', { class: 'num', id: 'cli-high' }, temp(off.cli[0], u)), el('td', { class: 'num' }, temp(off.cli[1], u)), el('td', { class: 'sub', colspan: 2 }, off.cli[0] === null ? 'not released yet' : 'climate report'))));
  };

  const forecastsPanel = (d) => {
    const u = d.st.units;
    const items = d.runs.map((r) => {
      if (r.error) return el('li', { class: 'sub' }, `${r.model}: ${r.error.message}`);
      const vals = r.rows.map((row) => (u === 'fahrenheit' ? row.temperature_f : row.temperature_c)).filter((v) => v !== null);
      const hi = vals.length ? Math.max(...vals) : null;
      return el('li', { dataset: { model: r.model } }, el('b', {}, r.model), ` run ${r.run ? `${r.run.slice(5, 13).replace('T', ' ')}z` : '–'}: high ${temp(hi, u)} (${r.rows.length} h)`);
    });
    if (d.nws) {
      items.push(d.nws.error
        ? el('li', { class: 'sub' }, `NWS hourly: ${d.nws.error.message}`)
        : el('li', { id: 'nws-series' }, el('b', {}, 'NWS hourly'), ` v${d.nws.version}: high ${temp(d.nws.high, 'fahrenheit')} low ${temp(d.nws.low, 'fahrenheit')}`));
    }
    let pace = el('p', { class: 'sub', id: 'pacing' }, 'pacing: loading…');
    if (d.pacing && d.pacing.error) {
      pace = el('p', { class: 'sub', id: 'pacing' }, `pacing: ${d.pacing.error.message}${d.pacing.error.status === 403 ? ' (Developer/Enterprise)' : ''}`);
    } else if (d.pacing) {
      pace = el('table', { class: 'pace', id: 'pacing' },
        el('thead', {}, el('tr', {}, ['model', 'pace', 'high pace', 'low pace'].map((h) => el('th', {}, h)))),
        el('tbody', {}, (d.pacing.models || []).concat(d.pacing.nws ? [d.pacing.nws] : []).map((p) => el('tr', {},
          el('td', {}, p.model), el('td', { class: 'num' }, p.pace === null ? '–' : (conv(p.pace + 100, d.pacing.units) - conv(100, d.pacing.units)).toFixed(1)),
          el('td', { class: 'num' }, temp(p.high_pace, d.pacing.units)), el('td', { class: 'num' }, temp(p.low_pace, d.pacing.units))))));
    }
    return el('section', { class: 'panel' }, el('h2', {}, 'Forecasts for the day'), el('ul', { class: 'runs' }, items), pace);
  };

  const observationsTable = (d) => {
    const u = d.st.units;
    const rows = [...d.obs].reverse().slice(0, 40).map((o) => {
      const t = epoch(o.observation_time);
      const suspect = o.temperature === null;
      return el('tr', { class: suspect ? 'suspect' : '' },
        el('td', {}, clock(t, d.st.timezone)), el('td', {}, o.report_type),
        el('td', { class: 'num' }, suspect ? el('span', { class: 'bad' }, 'missing / suspect') : temp(o.temperature_display, u)),
        el('td', { class: 'num' }, o.six_hour_high_display !== null && o.six_hour_high_display !== undefined ? `${temp(o.six_hour_high_display, u)} / ${temp(o.six_hour_low_display, u)}` : ''),
        el('td', { class: 'num' }, o.twentyfour_hour_high_display !== null && o.twentyfour_hour_high_display !== undefined ? `${temp(o.twentyfour_hour_high_display, u)} / ${temp(o.twentyfour_hour_low_display, u)}` : ''));
    });
    return el('section', { class: 'panel' }, el('h2', {}, `Observations (${d.obs.length})`),
      el('table', { class: 'obs', id: 'observations', dataset: { count: d.obs.length } },
        el('thead', {}, el('tr', {}, ['local', 'type', 'temp', '6 h high / low', '24 h high / low'].map((h) => el('th', {}, h)))),
        el('tbody', {}, rows)),
      el('p', { class: 'sub' }, 'One-minute data feeds the nws high/low above; it is not listed.'));
  };

  const alertsPanel = (d) => el('section', { class: 'panel', id: 'alerts' }, el('h2', {}, 'Alerts'),
    d.alerts.length ? el('ul', {}, d.alerts.map((a) => el('li', { class: `new-${a.which}`, dataset: { logic: a.logic, value: a.value } },
      el('b', {}, `New ${a.which}`), ` (${a.logic}) ${temp(a.value, d.st.units)} at ${clock(a.t, d.st.timezone)}`)))
      : el('p', { class: 'sub' }, 'New highs and lows appear here as they happen.'));

  // ---- live updates ----

  const applyEvent = (d, name, p) => {
    if (!d.today || !p) return false;
    const u = d.st.units;
    const native = (f, c) => (u === 'fahrenheit' ? f : c);
    if (name === 'observation') {
      const t = epoch(p.observation_time_utc);
      const when = new Date(t * 1000).toISOString().slice(0, 19).replace('T', ' ');
      if (!d.obs.some((o) => o.observation_time === when && o.report_type === p.product)) {
        d.obs.push({
          id: `live-${p.id}`, observation_time: when, report_type: p.product,
          temperature: p.temperature_celsius, temperature_display: native(p.temperature_fahrenheit, p.temperature_celsius),
        });
        d.obs.sort((a, b) => epoch(a.observation_time) - epoch(b.observation_time));
      }
      for (const logic of ['nws', 'wu']) {
        const s = d.st.svc[logic];
        const hi = p.svc_high && p.svc_high[logic];
        const lo = p.svc_low && p.svc_low[logic];
        if (hi && hi.value_f !== undefined) { s.svc_high = native(hi.value_f, hi.value_c); s.time_of_high_utc = hi.time_utc; }
        if (lo && lo.value_f !== undefined) { s.svc_low = native(lo.value_f, lo.value_c); s.time_of_low_utc = lo.time_utc; }
      }
      return true;
    }
    if (name === 'new_high' || name === 'new_low') {
      const which = name === 'new_high' ? 'high' : 'low';
      const value = native(p.value_f, p.value_c);
      const s = d.st.svc[p.logic];
      if (s) { s[`svc_${which}`] = value; s[`time_of_${which}_utc`] = p.observation_time_utc; }
      d.alerts.unshift({ which, logic: p.logic, value, t: epoch(p.observation_time_utc) });
      return true;
    }
    return false;
  };

  // ---- the view ----

  const render = (main, code, date) => {
    let d = null;
    let plot = null;
    let live = null;
    let ticker = null;
    const head = el('div', { class: 'bar' });
    const chartBox = el('div', { class: 'chart', id: 'day-chart' });
    const panels = el('div', { class: 'panels' });
    const note = el('p', { class: 'sub', id: 'freshness' });
    main.replaceChildren(head, chartBox, note, panels);
    head.append(el('span', { class: 'sub' }, `loading ${code}…`));

    const draw = () => {
      const st = d.st;
      const dateInput = el('input', { type: 'date', value: st.days.nws.date, id: 'day-date' });
      dateInput.addEventListener('change', () => WX.app.go(`/station/${st.station_code}${dateInput.value ? `?date=${dateInput.value}` : ''}`));
      head.replaceChildren(...[
        el('h1', {}, `${st.station_code} `, el('span', { class: 'sub' }, `${st.name} · ${st.timezone}`)),
        el('label', {}, 'day ', dateInput),
        d.today ? null : el('a', { href: `/station/${st.station_code}` }, 'today'),
        el('a', { href: `/accuracy/${st.station_code}` }, 'model accuracy')].filter(Boolean));
      if (plot) plot.destroy();
      plot = chart(d, chartBox);
      panels.replaceChildren(el('section', { class: 'panel wide' }, el('h2', {}, 'Settlement'), settlement(d)), alertsPanel(d), forecastsPanel(d), observationsTable(d));
      freshness();
    };

    const freshness = () => {
      const last = d.obs.length ? epoch(d.obs[d.obs.length - 1].observation_time) : null;
      note.textContent = last === null ? 'no observation in this day yet' : `newest observation ${age(last)} ago (${clock(last, d.st.timezone)} local)`;
      note.className = last !== null && Date.now() / 1000 - last > 75 * 60 ? 'bad' : 'sub';
    };

    load(code, date).then((data) => {
      d = data;
      draw();
      document.body.dataset.rendered = 'day';
      // Since navigation start: what the browser test reports as the render time.
      window.WX_RENDERED_AT = performance.now();
      d.pacingLater.then((p) => { d.pacing = p; draw(); });
      ticker = setInterval(freshness, 30000);
      if (d.today) {
        live = WX.live.open([code], (name, p) => {
          if (name === 'resync') { WX.app.route(); return; }
          if (applyEvent(d, name, p)) draw();
        }, WX.app.connState);
      } else {
        WX.app.connState(`showing ${d.st.days.nws.date}: no live updates for a past day`, 'off');
      }
    }, (e) => {
      head.replaceChildren(el('p', { class: 'bad', id: 'error' }, `${e.message}${e.details ? `: ${e.details}` : ''}`));
    });
    const onUnits = () => { if (d) draw(); };
    window.addEventListener('wx-units', onUnits);
    return () => {
      if (live) live.close();
      clearInterval(ticker);
      window.removeEventListener('wx-units', onUnits);
      if (plot) plot.destroy();
    };
  };

  return { render };
})();
