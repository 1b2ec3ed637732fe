// The stream's events applied to an open today view: observations (with their data quality,
// anomaly and suspect flags), new highs and lows, DSM and CLI releases. An event that
// belongs to a later trading day is never written into the table labelled with the old
// date: it asks the view to roll over to the new day instead.
'use strict';

WX.dayLive = (() => {
  const { epoch, temp, clock } = WX.fmt;

  const alert = (d, which, title, text, extra) => d.alerts.unshift({ which, title, text, ...extra });

  const observation = (d, p) => {
    const u = d.st.units;
    const native = (f, c) => (u === 'fahrenheit' ? f : c);
    const t = epoch(p.observation_time_utc);
    if (WX.dayData.ended(d, t).length) return 'rollover';
    const when = new Date(t * 1000).toISOString().slice(0, 19).replace('T', ' ');
    if (!d.obs.some((o) => o.observation_time === when && o.report_type === p.product)) {
      d.obs.push({
        id: `live-${p.id}`, observation_time: when, report_type: p.product,
        temperature: p.temperature_celsius, temperature_display: native(p.temperature_fahrenheit, p.temperature_celsius),
        suspect: p.suspect_temperature ? p.suspect_temperature.message : null,
      });
      d.obs.sort((a, b) => epoch(a.observation_time) - epoch(b.observation_time));
    }
    if (p.suspect_temperature) {
      alert(d, 'flag', 'Suspect reading', `${p.product} at ${clock(t, d.st.timezone)}: ${p.suspect_temperature.message}`);
    }
    for (const logic of ['nws', 'wu']) {
      const s = d.st.svc[logic];
      const hi = p.svc_high && p.svc_high[logic];
      const lo = p.svc_low && p.svc_low[logic];
      if (hi && hi.value_f !== undefined) { s.svc_high = native(hi.value_f, hi.value_c); s.time_of_high_utc = hi.time_utc; }
      if (lo && lo.value_f !== undefined) { s.svc_low = native(lo.value_f, lo.value_c); s.time_of_low_utc = lo.time_utc; }
      const dq = p.data_quality && p.data_quality[logic];
      if (dq) {
        const was = (s.data_quality[logic] || {}).ok;
        s.data_quality = { [logic]: dq };
        if (was !== false && dq.ok === false && dq.warnings && dq.warnings[0]) {
          alert(d, 'flag', `Data gap (${logic})`, dq.warnings[0].message, { logic });
        }
      }
    }
    const nws = d.st.svc.nws;
    if (p.anomaly && !nws.anomaly) alert(d, 'flag', 'Anomaly', 'the official report is ≥5°F beyond nearby readings');
    nws.anomaly = !!p.anomaly;
    nws.high_valid_through_utc = p.high_valid_through_utc || nws.high_valid_through_utc;
    nws.low_valid_through_utc = p.low_valid_through_utc || nws.low_valid_through_utc;
    return 'draw';
  };

  const extreme = (d, name, p) => {
    const which = name === 'new_high' ? 'high' : 'low';
    const s = d.st.svc[p.logic];
    if (!s) return false;
    const day = d.st.days[p.logic].date;
    // An alert of a later day: the view's day is over; of an earlier one: not this table's.
    if (p.date && p.date > day) return 'rollover';
    if (p.date && p.date < day) return false;
    const value = d.st.units === 'fahrenheit' ? p.value_f : p.value_c;
    s[`svc_${which}`] = value;
    s[`time_of_${which}_utc`] = p.observation_time_utc;
    if (p.source) s[`${which}_source`] = p.source;
    const t = epoch(p.observation_time_utc);
    alert(d, which, `New ${which}`, `(${p.logic}) ${temp(value, d.st.units)} at ${clock(t, d.st.timezone)}`,
      { logic: p.logic, value, date: day });
    return 'draw';
  };

  /** A DSM or CLI release: shown at once; the svc values are re-read (they may move). */
  const report = (d, kind, p) => {
    const us = d.st.units === 'fahrenheit';
    const r = { for_date: p.for_date, high: us ? p.high_f : p.high_c, low: us ? p.low_f : p.low_c, anomaly: !!p.anomaly };
    if (p.for_date === d.st.days.nws.date || !d.reports[kind] || d.reports[kind].for_date < p.for_date) d.reports[kind] = r;
    alert(d, kind, `${kind.toUpperCase()} released`, `for ${p.for_date}: high ${temp(r.high, d.st.units)}, low ${temp(r.low, d.st.units)}${r.anomaly ? ' · anomaly' : ''}`);
    return 'poll';
  };

  /**
   * A `brackets` event: the day's ladder with each bracket's probability now (the same odds
   * as brackets.php), written over that target's odds.
   */
  const brackets = (d, p) => {
    const have = d.brackets && d.brackets[p.target];
    if (!have || have.error || have.date !== p.date) return false;
    const bound = p.target === 'high' ? 'floor' : 'ceiling';
    d.brackets[p.target] = { ...have, brackets: p.brackets, mean: p.mean, [bound]: p[bound], settled: p.settled, computed_at: p.computed_at, live: true };
    return 'draw';
  };

  /**
   * Applies one event to a today view; says what the view should do: 'draw', 'poll' (draw,
   * then re-read the station), 'rollover' (reload the new day), or false (nothing).
   */
  const apply = (d, name, p) => {
    if (!d.today || !p) return false;
    if (name === 'observation') return observation(d, p);
    if (name === 'new_high' || name === 'new_low') return extreme(d, name, p);
    if (name === 'dsm' || name === 'cli') return report(d, name, p);
    if (name === 'brackets') return brackets(d, p);
    return false;
  };

  return { apply };
})();
