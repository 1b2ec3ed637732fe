// The overview: every station at a glance, from one `stations.php` call, refreshed every
// 30 s. Feed health comes from `/api/v2/status` when the key is an admin key (the feeds'
// lateness and each station's down state); other keys see the newest observation's age
// (stale past 75 minutes), and the page says which of the two it shows.
'use strict';

WX.overview = (() => {
  const { el, temp, epoch, age } = WX.fmt;
  const REFRESH_MS = 30000;
  const STALE_S = 75 * 60;

  const quality = (svc) => {
    const dq = svc.data_quality[svc.calculation_logic] || {};
    if (dq.ok) return el('span', { class: 'ok' }, 'ok');
    const w = (dq.warnings || [])[0];
    if (!w) return el('span', { class: 'warn' }, 'check');
    return el('span', { class: w.severity === 'critical' ? 'bad' : 'warn', title: w.message }, w.active ? 'gap now' : `gap ${w.longest_run_minutes} min`);
  };

  const pair = (svc, units) => el('span', { class: 'hl', dataset: { high: svc.svc_high ?? '', low: svc.svc_low ?? '' } },
    el('b', { class: 'hi' }, temp(svc.svc_high, units)), ' / ', el('b', { class: 'lo' }, temp(svc.svc_low, units)),
    svc.anomaly ? el('span', { class: 'flag', title: 'official report disagrees with nearby observations' }, ' anomaly') : null);

  /**
   * The "now" cell. A reading above today's high or below its low (either logic) is no
   * error, and the cell says why where it happens (the reading's probable range under it,
   * the reason on hover): a whole-°C reading (an HF-METAR) stands for a range of °F values
   * that the high/low count by the settlement rule; the wu day counts routine METARs only,
   * and holds a whole-degree one until a second source confirms it.
   */
  const nowCell = (s) => {
    const u = s.units;
    const l = s.latest;
    const v = l ? l.temperature_display : null;
    if (v === null || v === undefined) return el('td', { class: 'num now', dataset: { value: '' } }, '–');
    const beyond = ['nws', 'wu'].flatMap((g) => {
      const x = s.svc[g];
      return [x.svc_high !== null && v > x.svc_high ? `above the ${g} high (${temp(x.svc_high, u)})` : null,
        x.svc_low !== null && v < x.svc_low ? `below the ${g} low (${temp(x.svc_low, u)})` : null];
    }).filter(Boolean);
    if (!beyond.length) return el('td', { class: 'num now', dataset: { value: v } }, temp(v, u));
    const lo = l.lowest_probable;
    const hi = l.highest_probable;
    const range = lo !== null && lo !== undefined && hi !== null && hi !== undefined
      ? (lo === hi ? temp(lo, u) : `${temp(lo, u)}–${temp(hi, u)}`) : null;
    const wuBeyond = beyond.some((b) => b.includes(' wu '));
    const held = (((s.svc.wu.data_quality || {}).wu || {}).pending_confirmation || [])
      .some((h) => h.observation_time_utc === l.observation_time);
    const wuWhy = !wuBeyond ? null
      : l.report_type !== 'METAR' ? `the wu day counts routine METARs only, not this ${l.report_type}`
        : held ? 'the wu day holds this whole-degree METAR until a second source confirms it' : null;
    const why = `${temp(v, u)} is ${beyond.join(' and ')}: this ${l.report_type} ${range ? `reading was probably ${range}` : 'reading is a range of values'}, `
      + `and the high/low count it by the settlement rule${wuWhy ? `; ${wuWhy}` : ''}; neither is wrong.`;
    return el('td', { class: 'num now beyond', title: why, dataset: { value: v, beyond: beyond.join('; ') } },
      temp(v, u), el('sup', {}, '*'), el('div', { class: 'sub' }, range ? `probable ${range}` : 'a range'));
  };

  /** The feed cell: the server's health of the station (admin), else the observation's age. */
  const feedCell = (t, h) => {
    if (h) {
      const a = h.newest_utc ? Date.parse(h.newest_utc) / 1000 : null;
      return el('td', { class: h.down ? 'bad' : 'ok', dataset: { feed: h.down ? 'down' : 'ok' }, title: 'from /api/v2/status' },
        h.down ? 'down' : 'ok', el('span', { class: 'sub' }, a === null ? ' · no reading' : ` · ${age(a)}`));
    }
    const stale = t === null || Date.now() / 1000 - t > STALE_S;
    return el('td', { class: stale ? 'bad' : 'sub' }, t === null ? 'no data' : age(t));
  };

  const row = (s, health) => {
    const u = s.units;
    const l = s.latest;
    const t = l ? epoch(l.observation_time) : null;
    const official = (kind) => (l && (l[`${kind}_high`] !== null || l[`${kind}_low`] !== null)
      ? `${temp(l[`${kind}_high_display`], u)} / ${temp(l[`${kind}_low_display`], u)}` : '–');
    return el('tr', { dataset: { station: s.station_code } },
      el('td', {}, el('a', { href: `/station/${s.station_code}` }, s.station_code), el('div', { class: 'sub' }, s.city)),
      nowCell(s),
      feedCell(t, health && health.get(s.station_code)),
      el('td', {}, pair(s.svc.nws, u)),
      el('td', {}, pair(s.svc.wu, u)),
      el('td', { class: 'num' }, official('cli')),
      el('td', { class: 'num' }, official('dsm')),
      el('td', {}, quality(s.svc.nws)),
      el('td', {}, el('a', { href: `/accuracy/${s.station_code}`, class: 'sub' }, 'accuracy')));
  };

  const render = (main) => {
    let timer = null;
    const status = el('p', { class: 'sub' }, 'loading…');
    const filter = el('input', { type: 'search', placeholder: 'filter: code or city', id: 'filter' });
    const body = el('tbody');
    const table = el('table', { class: 'board', id: 'overview' },
      el('thead', {}, el('tr', {},
        ['station', 'now', 'feed', 'nws high / low', 'wu high / low', 'CLI', 'DSM', 'quality', ''].map((h) => el('th', { class: ['now', 'CLI', 'DSM'].includes(h) ? 'num' : '' }, h)))),
      body);
    const feeds = el('p', { class: 'sub feeds', id: 'feeds' });
    const beyondNote = el('p', { class: 'sub', id: 'beyond-note', hidden: true },
      '* now above today\'s high or below its low: a whole-degree reading (such as an HF-METAR in whole °C) stands for a range of values, '
      + 'shown under it; the high/low count it by the settlement rule (hover the value for the detail).');
    main.replaceChildren(el('h1', {}, 'All stations'), el('div', { class: 'bar' }, filter, status), feeds, el('div', { class: 'scroll' }, table), beyondNote);
    let rows = [];
    let health = null;
    // Unknown until the first answer; false once refused (not asked again in this view).
    let admin = null;
    const apply = () => {
      const f = filter.value.trim().toUpperCase();
      body.replaceChildren(...rows.filter((s) => !f || s.station_code.includes(f) || s.city.toUpperCase().includes(f)).map((s) => row(s, health)));
      beyondNote.hidden = !body.querySelector('td.beyond');
    };
    /** Feed health for an admin key; one refused attempt, then the observation ages. */
    const loadHealth = async () => {
      if (admin === false) return;
      try {
        const h = (await WX.api.get('/api/v2/status')).body;
        admin = true;
        health = new Map(h.stations.map((x) => [x.station, x]));
        const late = h.late_sources;
        feeds.replaceChildren(el('span', { class: late.length || h.down_stations.length ? 'bad' : 'ok', dataset: { mode: 'status' } },
          `feeds: ${h.sources.length} source(s), ${late.length ? `late: ${late.join(', ')}` : 'none late'}; `,
          `${h.down_stations.length ? `stations down: ${h.down_stations.join(', ')}` : 'no station down'}`),
        el('span', { class: 'sub' }, ` · ${h.pending_wal_inputs} input(s) not yet in the lake · from /api/v2/status`));
      } catch (e) {
        if (e.status !== 403) throw e;
        admin = false;
        health = null;
        feeds.replaceChildren(el('span', { class: 'sub', dataset: { mode: 'age' } },
          'feed column: the newest observation\'s age (stale past 75 min); feed health needs an admin key'));
      }
    };
    filter.addEventListener('input', apply);
    const load = async () => {
      try {
        const [{ body: stations }] = await Promise.all([WX.api.get('/api/v2/stations.php'), loadHealth()]);
        rows = stations;
        apply();
        status.textContent = `updated ${new Date().toLocaleTimeString()} · ${stations.length} stations · refreshes every 30 s`;
        status.className = 'sub';
        document.body.dataset.rendered = 'overview';
      } catch (e) {
        status.textContent = `not updated: ${e.message} ${e.details || ''}`;
        status.className = 'bad';
      }
      timer = setTimeout(load, REFRESH_MS);
    };
    load();
    return () => clearTimeout(timer);
  };

  return { render, nowCell };
})();
