// The accuracy view: which model has been right lately, readable in ten seconds. One
// `model_accuracy.php` call (trends and daily detail included); a tier the API refuses
// sees the API's own refusal. Below it, how good the bracket odds have been
// (`bracket_accuracy.php`): skill against the baselines per checkpoint and the reliability
// diagram.
'use strict';

WX.accuracy = (() => {
  const { el, epoch, sym, shown } = WX.fmt;
  const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf', '#e377c2'];

  /** A figure to `d` places; one that rounds to zero reads `0.0`, never `-0.0`. */
  const num = (v, d = 1) => {
    if (v === null || v === undefined) return '–';
    const t = Number(v).toFixed(d);
    return Number(t) === 0 ? t.replace('-', '') : t;
  };
  /** An error figure (a difference) in the shown unit. */
  const diff = (v, units) => {
    if (v === null || v === undefined) return null;
    const to = shown(units);
    if (to === units) return v;
    return to === 'celsius' ? v * 5 / 9 : v * 9 / 5;
  };

  const controls = (code, q) => {
    const sel = (name, values) => {
      const s = el('select', { id: `acc-${name}` }, values.map(([v, label]) => el('option', { value: v, selected: String(q[name]) === v }, label)));
      s.addEventListener('change', () => {
        const next = { ...q, [name]: s.value };
        WX.app.go(`/accuracy/${code}?${new URLSearchParams(next)}`);
      });
      return el('label', {}, `${name.replace('_', ' ')} `, s);
    };
    return el('div', { class: 'bar' },
      sel('window', [['7d', '7 days'], ['14d', '14 days'], ['30d', '30 days'], ['90d', '90 days']]),
      sel('target', [['high', 'daily high'], ['low', 'daily low']]),
      sel('lead_days', [['1', '1 day'], ['2', '2 days'], ['3', '3 days']]));
  };

  /** Models by MAE over the window, best first. */
  const ranked = (a) => Object.keys(a.per_model || {}).sort((p, q) => (a.per_model[p].mae ?? 1e9) - (a.per_model[q].mae ?? 1e9));

  /** A bias cell: coloured when the model runs cold (blue) or warm (red) by over half a degree. */
  const biasCell = (v, extra) => el('td', { class: `num ${v > 0.5 ? 'lo' : v < -0.5 ? 'hi' : ''} ${extra || ''}`, title: 'positive: the model ran cold' }, num(v));

  const summary = (a) => {
    const units = a.units || 'fahrenheit';
    const models = ranked(a);
    const best = models[0];
    const row = (m) => {
      const x = a.per_model[m];
      return el('tr', { class: m === best ? 'best' : '', dataset: { model: m } },
        el('th', {}, m),
        el('td', { class: 'num' }, num(diff(x.mae, units))),
        biasCell(diff(x.bias, units)),
        el('td', { class: 'num' }, num(diff(x.rmse, units))),
        el('td', { class: 'num sub' }, x.n));
    };
    const ens = a.ensemble || {};
    return el('table', { class: 'board', id: 'accuracy-table' },
      el('thead', {}, el('tr', {}, el('th', {}, 'model'), el('th', { class: 'num' }, `MAE ${sym(shown(units))}`), el('th', { class: 'num' }, 'bias'), el('th', { class: 'num' }, 'RMSE'), el('th', { class: 'num' }, 'n'))),
      el('tbody', {}, models.map(row),
        el('tr', { class: 'sub' }, el('th', {}, 'all models'), el('td', { class: 'num' }, num(diff(ens.mae, units))), biasCell(diff(ens.bias, units)), el('td', { class: 'num' }, num(diff(ens.rmse, units))), el('td', { class: 'num' }, ens.n ?? ''))));
  };

  /**
   * Per model and run-time label: MAE, bias and RMSE stacked in one cell per label, so that
   * hourly-cycling models (24 labels) still fit the width.
   */
  const perRun = (a) => {
    const units = a.units || 'fahrenheit';
    const labels = [...new Set(Object.values(a.per_model_run || {}).flatMap((r) => Object.keys(r)))].sort();
    if (!labels.length) return el('p', { class: 'sub' }, 'no run-time detail in this window');
    const cell = (m, l) => {
      const r = (a.per_model_run[m] || {})[l];
      if (!r) return el('td', {});
      const bias = diff(r.bias, units);
      return el('td', { class: 'num metric3', title: `${m} ${l}: n = ${r.n}`, dataset: { label: l, mae: r.mae, bias: r.bias, rmse: r.rmse } },
        el('b', {}, num(diff(r.mae, units))), el('br'),
        el('span', { class: bias > 0.5 ? 'lo' : bias < -0.5 ? 'hi' : '' }, num(bias)), el('br'),
        el('span', { class: 'sub' }, num(diff(r.rmse, units))));
    };
    return el('div', { class: 'scroll' },
      el('p', { class: 'sub' }, 'each cell: MAE (bold), bias (blue: ran cold, red: ran warm), RMSE'),
      el('table', { class: 'board', id: 'accuracy-runs' },
        el('thead', {}, el('tr', {}, el('th', {}, 'model'), labels.map((l) => el('th', { class: 'num' }, l)))),
        el('tbody', {}, ranked(a).map((m) => el('tr', { dataset: { model: m } }, el('th', {}, m), labels.map((l) => cell(m, l)))))));
  };

  /** The rolling 7-day `field` (`mae_7d` or `bias_7d`) of the best eight models. */
  const trendChart = (a, box, field, label) => {
    const units = a.units || 'fahrenheit';
    const trends = a.trends || {};
    const models = ranked(a).slice(0, 8).filter((m) => (trends[m] || []).length);
    if (!models.length) { box.replaceChildren(el('p', { class: 'sub' }, 'no trend data yet')); return null; }
    const xs = [...new Set(models.flatMap((m) => trends[m].map((p) => p.date)))].sort();
    const x = xs.map((dt) => epoch(`${dt} 12:00:00`));
    const data = [x, ...models.map((m) => {
      const by = new Map(trends[m].map((p) => [p.date, diff(p[field], units)]));
      return xs.map((dt) => (by.has(dt) ? by.get(dt) : null));
    })];
    const series = [{}, ...models.map((m, i) => ({ label: m, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true }))];
    box.replaceChildren();
    return new uPlot({
      width: Math.max(280, (box.clientWidth || 640) - 16), height: 240, series,
      axes: [{}, { label: `${label} ${sym(shown(units))}` }],
    }, data, box);
  };

  const detail = (a) => {
    const units = a.units || 'fahrenheit';
    const rows = (a.daily_detail || []).slice().reverse();
    const models = ranked(a).slice(0, 8);
    const key = a.target === 'low' ? 'actual_low' : 'actual_high';
    return el('table', { class: 'obs', id: 'accuracy-detail' },
      el('thead', {}, el('tr', {}, el('th', {}, 'day'), el('th', { class: 'num' }, `actual ${a.target || 'high'}`), models.map((m) => el('th', { class: 'num' }, m)))),
      el('tbody', {}, rows.map((r) => el('tr', {}, el('td', {}, r.date), el('td', { class: 'num' }, WX.fmt.temp(r[key], units)),
        models.map((m) => {
          const f = r.models[m];
          if (f === undefined || f === null) return el('td', {}, '');
          const e = f - r[key];
          const cls = Math.abs(e) <= 1 ? 'ok' : Math.abs(e) >= 4 ? 'bad' : '';
          return el('td', { class: `num ${cls}`, title: `run ${r.run_times[m]}` }, WX.fmt.temp(f, units));
        })))));
  };

  const SVG = 'http://www.w3.org/2000/svg';
  /** An SVG element with attributes. */
  const svg = (tag, attrs, ...children) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    children.forEach((c) => e.append(c));
    return e;
  };

  /** Our skill per checkpoint against each baseline: bits saved, and RPS skill in percent. */
  const bracketSkill = (b) => {
    const baselines = [...new Set(b.checkpoints.flatMap((c) => c.forecasters.slice(1).map((f) => f.forecaster)))];
    const cell = (c, name) => {
      const f = c.forecasters.find((x) => x.forecaster === name);
      if (!f || !f.skill) return el('td', {});
      const good = f.skill.ignorance_bits > 0 && f.skill.rps > 0;
      return el('td', { class: `num ${good ? 'ok' : 'bad'}`, title: `${name}: n = ${f.n}, ignorance ${num(f.ignorance, 2)} bits`, dataset: { baseline: name, bits: f.skill.ignorance_bits, rps: f.skill.rps } },
        `${num(f.skill.ignorance_bits, 2)} bits · ${num(100 * f.skill.rps, 0)}%`);
    };
    return el('table', { class: 'board', id: 'bracket-skill' },
      el('thead', {}, el('tr', {}, el('th', {}, 'checkpoint'), el('th', { class: 'num' }, 'forecasts'), el('th', { class: 'num' }, 'ignorance'), baselines.map((n) => el('th', { class: 'num' }, `vs ${n.replace('_', ' ')}`)))),
      el('tbody', {}, b.checkpoints.map((c) => {
        const ours = c.forecasters[0];
        return el('tr', { dataset: { checkpoint: c.checkpoint } }, el('th', {}, c.checkpoint), el('td', { class: 'num' }, ours.n), el('td', { class: 'num' }, `${num(ours.ignorance, 2)} bits`), baselines.map((n) => cell(c, n)));
      })));
  };

  /**
   * The reliability diagram: each bin's mean forecast probability against how often its
   * brackets settled in, ours and the best single source's; the diagonal is perfect
   * calibration, the band ±5 points. A dot's area grows with its count.
   */
  const reliability = (b) => {
    const size = 280;
    const pad = 34;
    const span = size - 2 * pad;
    const x = (p) => pad + p * span;
    const y = (p) => size - pad - p * span;
    const plot = svg('svg', { id: 'bracket-reliability', viewBox: `0 0 ${size} ${size}`, width: size, height: size, role: 'img', 'aria-label': 'reliability diagram' });
    plot.append(svg('rect', { x: pad, y: pad, width: span, height: span, fill: '#fff', stroke: '#ccc' }));
    plot.append(svg('polygon', { points: `${x(0)},${y(0.05)} ${x(0.95)},${y(1)} ${x(1)},${y(1)} ${x(1)},${y(0.95)} ${x(0.05)},${y(0)} ${x(0)},${y(0)}`, fill: '#e8f1e8' }));
    plot.append(svg('line', { x1: x(0), y1: y(0), x2: x(1), y2: y(1), stroke: '#999', 'stroke-dasharray': '4 3' }));
    for (const t of [0, 0.5, 1]) {
      plot.append(svg('text', { x: x(t), y: size - pad + 14, 'text-anchor': 'middle', 'font-size': 10 }, String(t)));
      plot.append(svg('text', { x: pad - 6, y: y(t) + 3, 'text-anchor': 'end', 'font-size': 10 }, String(t)));
    }
    plot.append(svg('text', { x: size / 2, y: size - 4, 'text-anchor': 'middle', 'font-size': 11 }, 'forecast probability'));
    plot.append(svg('text', { x: 10, y: size / 2, 'text-anchor': 'middle', 'font-size': 11, transform: `rotate(-90 10 ${size / 2})` }, 'observed frequency'));
    const shownAs = [['wxlake', '#1f77b4'], ['best_source', '#ff7f0e']];
    const most = Math.max(1, ...b.calibration.flatMap((c) => c.reliability.map((r) => r.n)));
    for (const [name, color] of shownAs) {
      const c = b.calibration.find((k) => k.forecaster === name);
      if (!c) continue;
      plot.append(svg('polyline', { points: c.reliability.map((r) => `${x(r.forecast)},${y(r.observed)}`).join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5 }));
      for (const r of c.reliability) {
        plot.append(svg('circle', { cx: x(r.forecast), cy: y(r.observed), r: 2 + 5 * Math.sqrt(r.n / most), fill: color, 'fill-opacity': 0.75, 'data-forecaster': name, 'data-forecast': r.forecast, 'data-observed': r.observed, 'data-n': r.n },
          svg('title', {}, `${name}: ${r.n} brackets at ${num(100 * r.forecast, 0)}%, settled in ${num(100 * r.observed, 0)}%`)));
      }
    }
    const legend = el('p', { class: 'sub' }, shownAs.map(([n, c]) => el('span', { style: `color:${c}` }, `● ${n.replace('_', ' ')} `)), '· green band: within 5 points');
    return el('div', {}, plot, legend);
  };

  /** The bracket odds' verification section, or why there is none. */
  const brackets = (b) => {
    if (!b.forecasts) return el('p', { class: 'sub', id: 'bracket-none' }, 'no settled day scored yet (the bracket_scores job runs daily)');
    return el('div', { id: 'bracket-accuracy' },
      el('p', { class: 'sub' }, `${b.forecasts} forecasts of ${b.from} to ${b.to} · ${b.methods.join(', ')} · skill: bits saved per forecast and RPS skill against each baseline (positive: ours is better)`),
      bracketSkill(b),
      reliability(b));
  };

  const render = (main, code, params) => {
    const q = { window: params.get('window') || '7d', target: params.get('target') || 'high', lead_days: params.get('lead_days') || '1' };
    let plots = [];
    let a = null;
    let odds = null;
    const body = el('div', {}, el('p', { class: 'sub' }, 'loading…'));
    main.replaceChildren(el('h1', {}, `${code} `, el('span', { class: 'sub' }, 'model accuracy'), ' ', el('a', { href: `/station/${code}`, class: 'sub' }, 'day view')), controls(code, q), body);
    const draw = () => {
      const maeBox = el('div', { class: 'chart', id: 'accuracy-trends' });
      const biasBox = el('div', { class: 'chart', id: 'accuracy-bias-trends' });
      body.replaceChildren(
        el('p', { class: 'sub' }, `${a.days_available} days with data · as of ${a.as_of || '–'} · computed ${a.computed_at || '–'} · lead ${a.lead_days} day(s) · bias > 0: the model ran cold`),
        summary(a),
        el('div', { class: 'trends' }, el('div', {}, el('h2', {}, '7-day MAE trend'), maeBox), el('div', {}, el('h2', {}, '7-day bias trend (> 0: ran cold)'), biasBox)),
        el('h2', {}, 'Per run time: MAE / bias / RMSE'), perRun(a),
        el('h2', {}, 'Forecast vs actual, per day'), detail(a),
        el('h2', {}, 'Bracket odds: verified at six checkpoints'), odds ? brackets(odds) : el('p', { class: 'sub' }, '–'));
      plots.forEach((p) => p && p.destroy());
      plots = [trendChart(a, maeBox, 'mae_7d', '7-day MAE'), trendChart(a, biasBox, 'bias_7d', '7-day bias')];
      document.body.dataset.rendered = 'accuracy';
    };
    const scored = WX.api.get('/api/v2/bracket_accuracy.php', { station_code: code, target: q.target }).then((r) => r.body, () => null);
    WX.api.get('/api/v2/model_accuracy.php', { station_code: code, include: 'trends,daily_detail', ...q }).then(async (r) => {
      a = r.body;
      odds = await scored;
      draw();
    }, (e) => {
      body.replaceChildren(el('div', { class: 'denied', id: 'denied', dataset: { status: e.status } },
        el('h2', {}, e.message), el('p', {}, e.details)));
      document.body.dataset.rendered = 'accuracy-refused';
    });
    const onUnits = () => { if (a) draw(); };
    window.addEventListener('wx-units', onUnits);
    return () => { window.removeEventListener('wx-units', onUnits); plots.forEach((p) => p && p.destroy()); };
  };

  return { render, num };
})();
