// The overview: every station at a glance, from one `stations.php` call, refreshed every
// 30 s. A station whose newest observation is over 75 minutes old is marked stale.
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

  const pair = (svc, units) => el('span', { class: 'hl' },
    el('b', { class: 'hi' }, temp(svc.svc_high, units)), ' / ', el('b', { class: 'lo' }, temp(svc.svc_low, units)),
    svc.anomaly ? el('span', { class: 'flag', title: 'official report disagrees with nearby observations' }, ' anomaly') : null);

  const row = (s) => {
    const u = s.units;
    const l = s.latest;
    const t = l ? epoch(l.observation_time) : null;
    const stale = t === null || Date.now() / 1000 - t > STALE_S;
    const official = (kind) => (l && (l[`${kind}_high`] !== null || l[`${kind}_low`] !== null)
      ? `${temp(l[`${kind}_high_display`], u)} / ${temp(l[`${kind}_low_display`], u)}` : '–');
    return el('tr', { dataset: { station: s.station_code } },
      el('td', {}, el('a', { href: `/station/${s.station_code}` }, s.station_code), el('div', { class: 'sub' }, s.city)),
      el('td', { class: 'num now' }, l ? temp(l.temperature_display, u) : '–'),
      el('td', { class: stale ? 'bad' : 'sub' }, t === null ? 'no data' : age(t)),
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
        ['station', 'now', 'obs age', 'nws high / low', 'wu high / low', 'CLI', 'DSM', 'quality', ''].map((h) => el('th', {}, h)))),
      body);
    main.replaceChildren(el('h1', {}, 'All stations'), el('div', { class: 'bar' }, filter, status), table);
    let rows = [];
    const apply = () => {
      const f = filter.value.trim().toUpperCase();
      body.replaceChildren(...rows.filter((s) => !f || s.station_code.includes(f) || s.city.toUpperCase().includes(f)).map(row));
    };
    filter.addEventListener('input', apply);
    const load = async () => {
      try {
        const { body: stations } = await WX.api.get('/api/v2/stations.php');
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

  return { render };
})();
