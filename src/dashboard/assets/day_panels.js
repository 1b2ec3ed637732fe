// The day view's panels: settlement (both logics' high/low over their day windows, DSM and
// CLI, data quality, the day's end), the forecast layers (each model's run, the NWS version,
// how old each is, their value at the newest observation's hour and pacing under both
// logics), the alerts of the session, and the observations with their 6/24-hour groups.
'use strict';

WX.dayPanels = (() => {
  const { el, temp, epoch, clock, age } = WX.fmt;
  const HOUR = 3600;

  const svcCell = (d, logic, which) => {
    const s = d.st.svc[logic];
    const v = s[`svc_${which}`];
    const t = epoch(s[`time_of_${which}_utc`]);
    const fresh = d.alerts.find((a) => a.logic === logic && a.which === which && a.date === s.date);
    const src = s[`${which}_source`];
    return el('td', { id: `svc-${logic}-${which}`, class: `num ${which === 'high' ? 'hi' : 'lo'}${fresh ? ' fresh' : ''}`, dataset: { value: v === null ? '' : v, date: s.date } },
      el('b', {}, temp(v, d.st.units)),
      el('div', { class: 'sub' }, t === null ? '' : `at ${clock(t, d.st.timezone)}`, src ? ` · ${src.replace(/_/g, ' ')}` : ''),
      fresh ? el('div', { class: 'newflag' }, `NEW ${which.toUpperCase()}`) : null);
  };

  /**
   * The official report values of the nws day: a `dsm`/`cli` event received for that day,
   * else the newest observation record of the day that carries them (spec 2.1).
   */
  const official = (d) => {
    const day = d.st.days.nws;
    const a = epoch(day.start_utc);
    const b = epoch(day.end_utc);
    const inDay = d.obs.filter((o) => { const t = epoch(o.observation_time); return t >= a && t < b; });
    const pick = (f) => { for (let i = inDay.length - 1; i >= 0; i -= 1) if (inDay[i][f] != null) return inDay[i][f]; return null; };
    const out = {};
    for (const kind of ['dsm', 'cli']) {
      const r = d.reports[kind];
      out[kind] = r && r.for_date === day.date
        ? { high: r.high, low: r.low, anomaly: r.anomaly, live: true }
        : { high: pick(`${kind}_high_display`), low: pick(`${kind}_low_display`) };
    }
    return out;
  };

  /**
   * A logic's status, following the data shown beside it (`off`: the DSM/CLI rows): the CLI
   * settles the nws day only, so a wu day that ended is final on its observations, and an
   * nws day whose CLI is shown below never says "CLI pending".
   */
  const status = (d, logic, off) => {
    const s = d.st.svc[logic];
    const end = epoch(d.st.days[logic].end_utc);
    const over = WX.api.now() >= end;
    const ended = `day ended ${clock(end, d.st.timezone)}`;
    const cli = off.cli.high !== null || off.cli.low !== null;
    const [state, cls, text] = s.is_final ? ['final', 'ok', 'final (CLI)']
      : !over ? ['preliminary', '', 'preliminary']
        : logic === 'wu' ? ['observed-final', 'ok', `${ended}: its final observed values (the CLI settles the nws day, not this one)`]
          : cli ? ['cli-out', 'warn', `${ended}: the CLI below is out; these observed values stand until it is applied`]
            : ['cli-pending', 'warn', `${ended}: its final observed values, CLI pending`];
    return el('td', { id: `status-${logic}`, dataset: { ended: over ? 'yes' : '', status: state } },
      el('span', { class: cls }, text),
      s.high_valid_through_utc ? el('div', { class: 'sub' }, `high locked through ${clock(epoch(s.high_valid_through_utc), d.st.timezone)}`) : null,
      s.anomaly ? el('div', { class: 'bad' }, 'anomaly: official report ≥5°F beyond nearby readings') : null);
  };

  const settlement = (d) => {
    const u = d.st.units;
    const off = official(d);
    const dqText = (logic) => {
      const dq = d.st.svc[logic].data_quality[logic] || {};
      if (dq.ok) return el('span', { class: 'ok' }, 'complete');
      return (dq.warnings || []).map((w) => el('div', { class: w.severity === 'critical' ? 'bad' : 'warn' }, w.message));
    };
    const row = (logic, label) => el('tr', {},
      el('th', {}, label, el('div', { class: 'sub' }, `${d.st.days[logic].date} · ${clock(epoch(d.st.days[logic].start_utc), d.st.timezone)}–${clock(epoch(d.st.days[logic].end_utc), d.st.timezone)}`)),
      svcCell(d, logic, 'high'), svcCell(d, logic, 'low'), status(d, logic, off), el('td', {}, dqText(logic)));
    const report = (kind, label, what) => {
      const r = off[kind];
      return el('tr', { class: r.live ? 'fresh' : '' }, el('th', {}, label),
        el('td', { class: 'num', id: `${kind}-high`, dataset: { value: r.high ?? '' } }, temp(r.high, u)),
        el('td', { class: 'num', id: `${kind}-low`, dataset: { value: r.low ?? '' } }, temp(r.low, u)),
        el('td', { class: 'sub', colspan: 2 }, r.high === null && r.low === null ? 'not released yet' : what,
          r.live ? ' · just released' : '', r.anomaly ? el('span', { class: 'bad' }, ' · anomaly') : ''));
    };
    return el('table', { class: 'settle', id: 'settlement' },
      el('thead', {}, el('tr', {}, ['logic · day window', 'high', 'low', 'status', 'data quality'].map((h) => el('th', { class: h === 'high' || h === 'low' ? 'num' : '' }, h)))),
      el('tbody', {}, row('nws', 'NWS (Local Standard Time)'), row('wu', 'WU (civil time)'),
        report('dsm', 'DSM', 'daily summary message'), report('cli', 'CLI', 'climate report')));
  };

  /**
   * The hour (epoch s, a whole hour) the forecast values are shown for: the one after the
   * newest reading, what the trader watches next (and one every NWS version still forecasts);
   * never past the day's end (a past day's last reading is in its last hour).
   */
  const valueHour = (d) => {
    const last = d.obs.length ? epoch(d.obs[d.obs.length - 1].observation_time) : Math.min(WX.api.now(), d.end);
    return Math.min(Math.floor(last / HOUR) * HOUR + HOUR, Math.floor(d.end / HOUR) * HOUR);
  };

  const paceCells = (d, model) => ['nws', 'wu'].map((logic) => {
    const p = d.pacing[logic];
    const r = p && !p.error ? (model === 'NWS' ? p.nws : (p.models || []).find((m) => m.model === model)) : null;
    return el('td', { class: 'num', dataset: { logic } }, r && r.high_pace !== null ? `${temp(r.high_pace, p.units)} / ${temp(r.low_pace, p.units)}` : '–');
  });

  /** The forecast layers: what each says, and how old it is. */
  const forecastsPanel = (d) => {
    const u = d.st.units;
    const tz = d.st.timezone;
    const at = valueHour(d);
    const atIso = WX.dayData.isoZ(at);
    const rows = [];
    if (d.nws) {
      if (d.nws.error) {
        rows.push(el('tr', {}, el('th', {}, 'NWS hourly'), el('td', { class: 'sub', colspan: 6 }, d.nws.error.message)));
      } else {
        const s0 = epoch(d.st.days.nws.start_utc);
        const i = Math.round((at - s0) / HOUR);
        const v = i >= 0 && i < 25 ? d.nws.hourly_temps[i] : null;
        const gen = epoch(d.nws.generated_at);
        rows.push(el('tr', { id: 'nws-series', dataset: { version: d.nws.version ?? '', date: d.nws.forecast_date, index: i, value: v ?? '' } },
          el('th', {}, 'NWS hourly'),
          el('td', {}, d.nws.version ? `v${d.nws.version}` : 'none yet'),
          el('td', { class: gen !== null && Date.now() / 1000 - gen > 6 * HOUR ? 'warn' : 'sub' }, gen === null ? '–' : `${age(gen)} old`),
          el('td', { class: 'num' }, temp(v, 'fahrenheit')),
          el('td', { class: 'num' }, `${temp(d.nws.high, 'fahrenheit')} / ${temp(d.nws.low, 'fahrenheit')}`),
          paceCells(d, 'NWS')));
      }
    }
    const runs = [...d.runs.values()].sort((a, b) => (d.shown.has(b.model) - d.shown.has(a.model)) || a.model.localeCompare(b.model));
    for (const r of runs) {
      if (r.error) {
        rows.push(el('tr', {}, el('th', {}, r.model), el('td', { class: 'sub', colspan: 6 }, r.error.message)));
        continue;
      }
      const vals = r.rows.map((row) => WX.dayChart.modelValue(row, u)).filter((v) => v !== null);
      const atRow = r.rows.find((row) => epoch(row.valid_time) === at);
      const run = epoch(r.run);
      rows.push(el('tr', { class: d.shown.has(r.model) ? '' : 'off', dataset: { model: r.model, run: r.run || '', validTime: atRow ? atIso : '', value: atRow ? WX.dayChart.modelValue(atRow, u) ?? '' : '' } },
        el('th', {}, el('span', { class: 'swatch', style: `background:${WX.dayChart.colorOf(r.model)}` }), r.model),
        el('td', {}, run === null ? '–' : `${clock(run, 'UTC')}z ${new Date(run * 1000).toISOString().slice(5, 10)}`),
        el('td', { class: 'sub' }, run === null ? '–' : `${age(run)} old`),
        el('td', { class: 'num' }, atRow ? temp(WX.dayChart.modelValue(atRow, u), u) : '–'),
        el('td', { class: 'num' }, vals.length ? `${temp(Math.max(...vals), u)} / ${temp(Math.min(...vals), u)}` : `no points in this day (${r.rows.length})`),
        paceCells(d, r.model)));
    }
    const pace = d.pacing.nws;
    const paceNote = !d.today ? 'pacing: today only'
      : !pace ? 'pacing: loading…'
        : pace.error ? `pacing: ${pace.error.message}${pace.error.status === 403 ? ' (Developer/Enterprise)' : ''}`
          : `pacing: the reading of ${clock(epoch(pace.observation.observation_time), tz)} (${temp(pace.observation.value, pace.units)}) against each forecast; projected high / low under each logic (drawn on the chart)`;
    return el('section', { class: 'panel wide' }, el('h2', {}, 'Forecast layers'),
      el('div', { class: 'scroll' }, el('table', { class: 'obs', id: 'layers' },
        el('thead', {}, el('tr', {}, ['layer', 'run / version', 'age', `at ${clock(at, tz)}`, 'day high / low', 'pace nws high / low', 'pace wu high / low'].map((h, i) => el('th', { class: i > 2 ? 'num' : '' }, h)))),
        el('tbody', {}, rows))),
      el('p', { class: 'sub', id: 'pacing', dataset: { state: pace ? (pace.error ? 'error' : 'ok') : 'none' } }, paceNote,
        d.polledAt ? ` · runs checked ${clock(d.polledAt, tz)}` : '', ' · greyed models are off the chart: click a name in the chart legend to show it'));
  };

  const observationsTable = (d) => {
    const u = d.st.units;
    const rows = [...d.obs].reverse().slice(0, 40).map((o) => {
      const t = epoch(o.observation_time);
      const suspect = o.temperature === null;
      const pair = (hi, lo) => (hi != null || lo != null ? `${temp(hi, u)} / ${temp(lo, u)}` : '');
      return el('tr', { class: suspect ? 'suspect' : '' },
        el('td', {}, clock(t, d.st.timezone)), el('td', {}, o.report_type),
        el('td', { class: 'num' }, suspect ? el('span', { class: 'bad' }, o.suspect ? `suspect: ${o.suspect}` : 'missing / suspect') : temp(o.temperature_display, u)),
        el('td', { class: 'num' }, pair(o.six_hour_high_display, o.six_hour_low_display)),
        el('td', { class: 'num' }, pair(o.twentyfour_hour_high_display, o.twentyfour_hour_low_display)));
    });
    return el('section', { class: 'panel' }, el('h2', {}, `Observations (${d.obs.length})`),
      el('div', { class: 'scroll' }, el('table', { class: 'obs', id: 'observations', dataset: { count: d.obs.length } },
        el('thead', {}, el('tr', {}, ['local', 'type', 'temp', '6 h high / low', '24 h high / low'].map((h, i) => el('th', { class: i > 1 ? 'num' : '' }, h)))),
        el('tbody', {}, rows))),
      el('p', { class: 'sub' }, 'One-minute data feeds the nws high/low above (source "one minute"); it is not listed.'));
  };

  const alertsPanel = (d) => el('section', { class: 'panel', id: 'alerts' }, el('h2', {}, 'Alerts'),
    d.alerts.length ? el('ul', {}, d.alerts.slice(0, 30).map((a) => el('li', { class: `new-${a.which}`, dataset: { logic: a.logic || '', value: a.value ?? '' } },
      el('b', {}, a.title), ` ${a.text}`)))
      : el('p', { class: 'sub' }, 'New highs and lows, DSM and CLI releases, anomalies and data gaps appear here as they happen.'));

  /**
   * The settlement brackets' odds of the day's high and low (brackets.php, then the stream's
   * `brackets` events): each bracket's probability as a bar, the running bound, the mean.
   */
  const bracketsPanel = (d) => {
    const odds = (target) => {
      const b = d.brackets && d.brackets[target];
      if (!b) return el('p', { class: 'sub' }, 'loading…');
      if (b.error) {
        return el('p', { class: 'sub', dataset: { state: 'error' } },
          `${b.error.message}${b.error.status === 403 ? ' (Developer/Enterprise)' : ''}`);
      }
      const bound = target === 'high' ? b.floor : b.ceiling;
      const rows = b.brackets.map((k) => el('tr', { dataset: { label: k.label, p: k.p, lo: k.lo === null ? '' : k.lo, hi: k.hi === null ? '' : k.hi } },
        el('td', {}, k.label),
        el('td', { class: 'num' }, `${(100 * k.p).toFixed(1)}%`),
        el('td', { class: 'oddsbar' }, el('span', { style: `width:${Math.round(100 * k.p)}%` }))));
      const unit = b.units === 'celsius' ? '°C' : '°F';
      return el('div', {},
        el('table', { id: `brackets-${target}`, class: 'odds', dataset: { bound: bound === null || bound === undefined ? '' : bound, live: b.live ? 'yes' : 'no' } },
          el('thead', {}, el('tr', {}, el('th', {}, `${target} ${unit}`), el('th', { class: 'num' }, 'p'), el('th', {}, ''))),
          el('tbody', {}, ...rows)),
        el('p', { class: 'sub' }, `mean ${b.mean.toFixed(1)}`,
          bound !== null && bound !== undefined ? ` · ${target === 'high' ? 'floor' : 'ceiling'} ${bound}` : '',
          b.settled !== null && b.settled !== undefined ? ` · settled ${b.settled}` : '',
          b.market ? ` · ${b.market.series}` : '', ` · ${b.method}`, b.live ? ' · live' : ''));
    };
    return el('section', { class: 'panel', id: 'brackets' }, el('h2', {}, 'Bracket odds'), odds('high'), odds('low'));
  };

  /** One line under the chart: how old each layer is. */
  const layersLine = (d) => {
    const tz = d.st.timezone;
    const last = d.obs.length ? epoch(d.obs[d.obs.length - 1].observation_time) : null;
    const runs = [...d.runs.values()].filter((r) => !r.error && r.run).map((r) => epoch(r.run));
    const parts = [last === null ? 'no observation in this day yet' : `newest observation ${age(last)} ago (${clock(last, tz)})`];
    if (runs.length) parts.push(`newest model run ${age(Math.max(...runs))} old, oldest ${age(Math.min(...runs))}`);
    if (d.nws && !d.nws.error && d.nws.generated_at) parts.push(`NWS v${d.nws.version} ${age(epoch(d.nws.generated_at))} old`);
    if (d.pacing.nws && !d.pacing.nws.error) parts.push(`pacing as of ${clock(epoch(d.pacing.nws.observation.observation_time), tz)}`);
    if (d.today) parts.push(d.polledAt ? `forecasts checked ${age(d.polledAt)} ago` : 'forecasts checked at load');
    return { text: parts.join(' · '), stale: last !== null && d.today && Date.now() / 1000 - last > 75 * 60 };
  };

  return { settlement, forecastsPanel, observationsTable, alertsPanel, bracketsPanel, layersLine };
})();
