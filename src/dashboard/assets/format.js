// Units, times and small DOM helpers shared by every view. Values arrive in the station's
// native units (the API's `units`); the °F/°C toggle converts only for display.
'use strict';
window.WX = window.WX || {};

WX.fmt = (() => {
  const UNIT_KEY = 'wxlake.unit';
  // 'native', 'fahrenheit' or 'celsius'; a display preference, not a secret.
  let unit = localStorage.getItem(UNIT_KEY) || 'native';

  const fToC = (f) => (f - 32) * 5 / 9;
  const cToF = (c) => c * 9 / 5 + 32;

  /** The unit values are shown in for a station whose native unit is `native`. */
  const shown = (native) => (unit === 'native' ? native : unit);

  /** `v` (in `from` units) converted to the shown unit of a `from`-native station. */
  const conv = (v, from) => {
    if (v === null || v === undefined || Number.isNaN(v)) return null;
    const to = shown(from);
    if (to === from) return v;
    return to === 'celsius' ? fToC(v) : cToF(v);
  };

  const sym = (u) => (u === 'celsius' ? '°C' : '°F');

  /** A temperature for display: converted, rounded (whole degrees unless `digits`), with its unit. */
  const temp = (v, from, digits) => {
    const c = conv(v, from);
    if (c === null) return '–';
    const d = digits === undefined ? (shown(from) === from && !Number.isInteger(v) ? 1 : 0) : digits;
    const t = c.toFixed(d);
    return `${Number(t) === 0 ? t.replace('-', '') : t}${sym(shown(from))}`;
  };

  /** `YYYY-MM-DD HH:MM:SS` (UTC) or ISO 8601 to epoch seconds. */
  const epoch = (s) => {
    if (!s) return null;
    const iso = s.includes('T') ? s : `${s.replace(' ', 'T')}Z`;
    const t = Date.parse(iso);
    return Number.isNaN(t) ? null : t / 1000;
  };

  const timeFmts = {};
  /** Wall-clock HH:MM at the station (its IANA zone). */
  const clock = (sec, tz) => {
    if (sec === null || sec === undefined) return '–';
    timeFmts[tz] = timeFmts[tz] || new Intl.DateTimeFormat('en-GB', { timeZone: tz, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    return timeFmts[tz].format(new Date(sec * 1000));
  };

  /** How long ago, short: `4 min`, `2 h 5 min`. */
  const age = (sec) => {
    if (sec === null) return '–';
    const m = Math.max(0, Math.round((Date.now() / 1000 - sec) / 60));
    if (m < 60) return `${m} min`;
    const h = Math.floor(m / 60);
    return h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d`;
  };

  /** Builds an element: el('td', {class: 'x', dataset: {value: 1}}, 'text', child). */
  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  };

  const setUnit = (u) => {
    unit = u;
    localStorage.setItem(UNIT_KEY, u);
  };

  return { temp, conv, sym, shown, epoch, clock, age, el, setUnit, unit: () => unit, fToC, cToF };
})();
