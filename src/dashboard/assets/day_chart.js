// The day view's chart (uPlot): observations, the running high/low under both logics over
// their day windows, every model's latest run (a default few shown; the legend toggles the
// rest, remembered), the NWS hourly forecast, and drawn over them the pacing projections
// of both logics, the 6- and 24-hour groups, data-quality gaps and suspect readings.
'use strict';

WX.dayChart = (() => {
  const { conv, epoch, clock, sym, shown } = WX.fmt;
  // 18 distinct hues that are neither the highs' red nor the lows' blue nor NWS orange.
  const MODEL_COLORS = ['#1f77b4', '#9467bd', '#8c564b', '#17becf', '#bcbd22', '#7f7f7f', '#2ca02c', '#e377c2',
    '#6b6ecf', '#8ca252', '#bd9e39', '#ad494a', '#a55194', '#393b79', '#637939', '#843c39', '#7b4173', '#3182bd'];
  const PACING = 'pacing';
  const GROUPS = '6/24 h groups';
  const HOUR = 3600;

  /** A model's colour, stable across redraws and stations (by its name). */
  const colorOf = (model) => {
    let h = 0;
    for (const c of model) h = (h * 31 + c.charCodeAt(0)) % 1009;
    return MODEL_COLORS[h % MODEL_COLORS.length];
  };

  const modelValue = (row, units) => (units === 'fahrenheit' ? row.temperature_f : row.temperature_c);

  /** The NWS hourly points: index 0 is midnight Local Standard Time (the nws day's start). */
  const nwsPoints = (d) => {
    if (!d.nws || d.nws.error || !d.nws.hourly_temps) return [];
    const s0 = epoch(d.st.days.nws.start_utc);
    return d.nws.hourly_temps.map((v, i) => [s0 + i * HOUR, v]).filter(([, v]) => v !== null);
  };

  /** The 6- and 24-hour groups: each covers the hours before its report. */
  const groups = (d) => d.obs.flatMap((o) => {
    const t = epoch(o.observation_time);
    const out = [];
    if (o.six_hour_high_display != null || o.six_hour_low_display != null) out.push({ t, h: 6, hi: o.six_hour_high_display, lo: o.six_hour_low_display });
    if (o.twentyfour_hour_high_display != null || o.twentyfour_hour_low_display != null) out.push({ t, h: 24, hi: o.twentyfour_hour_high_display, lo: o.twentyfour_hour_low_display });
    return out;
  });

  /** Each logic's pace rows (models and NWS) in the station's units. */
  const paceRows = (d) => ['nws', 'wu'].flatMap((logic) => {
    const p = d.pacing[logic];
    if (!p || p.error) return [];
    return (p.models || []).concat(p.nws ? [p.nws] : []).map((r) => ({ ...r, logic, units: p.units, to: epoch(d.st.days[logic].end_utc) }));
  });

  /** Aligned series for uPlot: one x array (epoch s), one y array per series, nulls between. */
  const chartData = (d) => {
    const u = d.st.units;
    const xs = new Set([d.start, d.end]);
    const obsPts = d.obs.filter((o) => o.temperature_display !== null).map((o) => [epoch(o.observation_time), o.temperature_display]);
    obsPts.forEach(([t]) => xs.add(t));
    const models = [...d.runs.values()].filter((r) => !r.error && r.rows.length).sort((a, b) => a.model.localeCompare(b.model))
      .map((r) => ({ name: r.model, pts: r.rows.map((row) => [epoch(row.valid_time), modelValue(row, u)]) }));
    models.forEach((m) => m.pts.forEach(([t]) => xs.add(t)));
    const nwsPts = nwsPoints(d);
    nwsPts.forEach(([t]) => xs.add(t));
    const lines = [];
    for (const logic of ['nws', 'wu']) {
      const s = d.st.svc[logic];
      const a = epoch(d.st.days[logic].start_utc);
      const b = epoch(d.st.days[logic].end_utc);
      xs.add(a); xs.add(b);
      const dash = logic === 'nws' ? [] : [6, 4];
      lines.push({ name: `${logic} high`, v: s.svc_high, a, b, color: '#d62728', dash });
      lines.push({ name: `${logic} low`, v: s.svc_low, a, b, color: '#2c7fb8', dash });
    }
    const x = [...xs].sort((p, q) => p - q);
    const idx = new Map(x.map((t, i) => [t, i]));
    const col = (pts, from) => {
      const y = new Array(x.length).fill(null);
      for (const [t, v] of pts) y[idx.get(t)] = conv(v, from);
      return y;
    };
    const series = [{ value: (u, t) => (t === null ? (d.today ? 'now' : 'day end') : clock(t, d.st.timezone)) }];
    const data = [x];
    series.push({ label: 'observed', value: legendValue, stroke: '#222', width: 1.5, points: { show: true, size: 5, fill: '#222' }, spanGaps: true });
    data.push(col(obsPts, u));
    lines.forEach((l) => {
      series.push({ label: l.name, value: legendValue, stroke: l.color, width: 1.5, dash: l.dash, spanGaps: true, points: { show: false } });
      data.push(col(l.v === null ? [] : [[l.a, l.v], [l.b, l.v]], u));
    });
    if (nwsPts.length) {
      series.push({ label: 'NWS hourly', value: legendValue, stroke: '#ff7f0e', width: 2, spanGaps: true, points: { show: false } });
      data.push(col(nwsPts, 'fahrenheit'));
    }
    models.forEach((m) => {
      series.push({ label: m.name, model: m.name, value: legendValue, show: d.shown.has(m.name), stroke: colorOf(m.name), width: 1, spanGaps: true, points: { show: false } });
      data.push(col(m.pts, u));
    });
    // Toggles for what the draw hook adds (no points of their own).
    const none = new Array(x.length).fill(null);
    series.push({ label: PACING, value: () => 'markers at the day end: nws ●, wu ○', stroke: '#555', dash: [2, 3], width: 1, show: d.showPacing !== false });
    data.push(none);
    series.push({ label: GROUPS, value: () => 'brackets over the hours covered', stroke: '#7a2e2e', width: 2, show: d.showGroups !== false });
    data.push(none);
    return { series, data };
  };

  const shownIdx = (u, label) => u.series.findIndex((s) => s.label === label && s.show);

  /** The index of the last x at or before `t` (the last one when `t` is past the day). */
  const idxAt = (xs, t) => {
    let i = xs.length - 1;
    while (i > 0 && xs[i] > t) i -= 1;
    return i;
  };

  /**
   * A series' legend value: under the cursor, its value at the cursor's time (the last point
   * at or before it, as its line shows); with the cursor off the chart, its latest value
   * (now, or the day's end for a past day) instead of uPlot's `--`.
   */
  const legendValue = (u, v, sidx, idx) => {
    const ys = u.data[sidx];
    let i = idx === null || idx === undefined ? idxAt(u.data[0], WX.api.now()) : idx;
    while (i >= 0 && (ys[i] === null || ys[i] === undefined)) i -= 1;
    return i < 0 ? '–' : ys[i].toFixed(Number.isInteger(ys[i]) ? 0 : 1);
  };

  /** Shaded spans under the series: each logic's day window edges, the data-quality gaps. */
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

  /**
   * Over the series: each shown model's (and NWS's) pacing projection of the day's high and
   * low as a marker at the day's end (nws solid, wu dashed just left of it); each 6/24-hour
   * group as brackets over the hours it covers; suspect readings as red ticks at the foot.
   * Counts what it drew in the box's dataset (the browser test reads them).
   */
  const overHook = (d, box) => (u) => {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const px = window.devicePixelRatio || 1;
    const y = (v, from) => u.valToPos(conv(v, from), 'y', true);
    const xAt = (t) => u.valToPos(t, 'x', true);
    let paced = 0;
    let grouped = 0;
    let labelled = 0;
    ctx.save();
    ctx.beginPath(); ctx.rect(left, top, width, height); ctx.clip();
    if (shownIdx(u, PACING) > 0) {
      // Short markers ending at the day's end, where the trader reads them: nws solid with a
      // filled dot, wu dashed with a hollow one (both days end together outside DST).
      const stub = 44 * px;
      ctx.lineWidth = 1.5 * px;
      // Each column of markers is labelled over its highest marker ("nws pace", "wu pace").
      const tops = {};
      for (const r of paceRows(d)) {
        const label = r.model === 'NWS' ? 'NWS hourly' : r.model;
        if (shownIdx(u, label) < 0 || r.high_pace === null) continue;
        const color = r.model === 'NWS' ? '#ff7f0e' : colorOf(r.model);
        const x1 = xAt(r.to) - (r.logic === 'wu' ? stub + 6 * px : 0);
        ctx.strokeStyle = color;
        ctx.fillStyle = color;
        for (const v of [r.high_pace, r.low_pace]) {
          if (v === null) continue;
          const yy = y(v, r.units);
          ctx.setLineDash(r.logic === 'nws' ? [] : [3 * px, 2 * px]);
          ctx.beginPath(); ctx.moveTo(x1 - stub, yy); ctx.lineTo(x1, yy); ctx.stroke();
          ctx.setLineDash([]);
          ctx.beginPath(); ctx.arc(x1, yy, 3 * px, 0, 2 * Math.PI);
          if (r.logic === 'nws') ctx.fill(); else ctx.stroke();
          const hi = tops[r.logic];
          if (!hi || yy < hi.y) tops[r.logic] = { x: x1 - stub / 2, y: yy };
        }
        paced += 1;
      }
      ctx.fillStyle = '#444';
      ctx.font = `${10 * px}px system-ui, sans-serif`;
      ctx.textAlign = 'center';
      for (const [logic, at] of Object.entries(tops)) {
        ctx.fillText(`${logic} pace`, at.x, Math.max(top + 10 * px, at.y - 6 * px));
        labelled += 1;
      }
    }
    if (shownIdx(u, GROUPS) > 0) {
      ctx.setLineDash([]);
      for (const g of groups(d)) {
        const x0 = xAt(g.t - g.h * HOUR);
        const x1 = xAt(g.t);
        ctx.lineWidth = (g.h === 24 ? 1 : 2) * px;
        for (const [v, color] of [[g.hi, '#7a2e2e'], [g.lo, '#1e3f66']]) {
          if (v === null || v === undefined) continue;
          const yy = y(v, d.st.units);
          ctx.strokeStyle = color;
          ctx.beginPath(); ctx.moveTo(x0, yy + (color === '#7a2e2e' ? 4 : -4) * px); ctx.lineTo(x0, yy); ctx.lineTo(x1, yy);
          ctx.lineTo(x1, yy + (color === '#7a2e2e' ? 4 : -4) * px); ctx.stroke();
        }
        grouped += 1;
      }
    }
    ctx.strokeStyle = '#c62828';
    ctx.lineWidth = 2 * px;
    for (const o of d.obs) {
      if (o.temperature !== null) continue;
      const x = xAt(epoch(o.observation_time));
      ctx.beginPath(); ctx.moveTo(x, top + height); ctx.lineTo(x, top + height - 10 * px); ctx.stroke();
    }
    ctx.restore();
    box.dataset.paceMarks = paced;
    box.dataset.groupMarks = grouped;
    box.dataset.paceLabels = labelled;
  };

  /** The y range: the data's, widened to the pacing projections and groups. */
  const yRange = (d) => (u, min, max) => {
    const extra = [];
    paceRows(d).forEach((r) => [r.high_pace, r.low_pace].forEach((v) => v !== null && extra.push(conv(v, r.units))));
    groups(d).forEach((g) => [g.hi, g.lo].forEach((v) => v != null && extra.push(conv(v, d.st.units))));
    const lo = Math.min(min ?? Infinity, ...extra);
    const hi = Math.max(max ?? -Infinity, ...extra);
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [0, 1];
    return [Math.floor(lo - 1), Math.ceil(hi + 1)];
  };

  /** Draws the chart into `box`; legend clicks on a model remember the choice. */
  const draw = (d, box) => {
    const { series, data } = chartData(d);
    const tz = d.st.timezone;
    const opts = {
      width: Math.max(280, (box.clientWidth || 900) - 16),
      height: 360,
      series,
      scales: { x: { time: true }, y: { range: yRange(d) } },
      axes: [
        { values: (u, ticks) => ticks.map((t) => clock(t, tz)) },
        { label: sym(shown(d.st.units)), values: (u, ticks) => ticks.map((t) => t.toFixed(0)) },
      ],
      legend: { live: true },
      hooks: {
        drawAxes: [bandsHook(d)],
        draw: [overHook(d, box)],
        setSeries: [(u, i, o) => {
          if (!o || o.show === undefined || !u.series[i]) return;
          const s = u.series[i];
          if (s.model) {
            if (o.show) d.shown.add(s.model); else d.shown.delete(s.model);
            WX.dayData.saveShown([...d.shown]);
          } else if (s.label === PACING) d.showPacing = o.show;
          else if (s.label === GROUPS) d.showGroups = o.show;
        }],
      },
    };
    box.replaceChildren();
    const plot = new uPlot(opts, data, box);
    // The legend reads each series' latest value until the cursor is over the chart.
    plot.setLegend({ idx: null });
    return plot;
  };

  return { draw, colorOf, modelValue, nwsPoints };
})();
