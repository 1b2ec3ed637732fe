// The station day view: loads the day (WX.dayData), draws the chart (WX.dayChart) and the
// panels (WX.dayPanels), applies live events (WX.dayLive). A today view is never stale
// without saying so: it polls for new model runs and NWS versions, says how old each layer
// is, and rolls over to the new trading day when a logic's day ends.
'use strict';

WX.day = (() => {
  const { el } = WX.fmt;
  /** How often a today view re-reads the station, its latest runs, the NWS version, pacing. */
  const POLL_MS = 120000;
  /** How often the clock is checked against the day's end (and the ages redrawn). */
  const TICK_MS = 10000;

  const render = (main, code, date) => {
    let d = null;
    let plot = null;
    let live = null;
    let ticker = null;
    let poller = null;
    let rolling = false;
    let closed = false;
    const head = el('div', { class: 'bar' });
    const chartBox = el('div', { class: 'chart', id: 'day-chart' });
    const note = el('p', { class: 'sub', id: 'freshness' });
    const panels = el('div', { class: 'panels' });
    main.replaceChildren(head, chartBox, note, panels);
    head.append(el('span', { class: 'sub' }, `loading ${code}…`));

    const header = () => {
      const st = d.st;
      const dateInput = el('input', { type: 'date', value: st.days.nws.date, id: 'day-date' });
      dateInput.addEventListener('change', () => WX.app.go(`/station/${st.station_code}${dateInput.value ? `?date=${dateInput.value}` : ''}`));
      head.replaceChildren(...[
        el('h1', {}, `${st.station_code} `, el('span', { class: 'sub' }, `${st.name} · ${st.timezone}`)),
        el('label', {}, 'day ', dateInput),
        d.today ? null : el('a', { href: `/station/${st.station_code}` }, 'today'),
        d.rolledFrom ? el('span', { class: 'warn', id: 'rolled' }, `${d.rolledFrom} ended; now showing ${st.days.nws.date} `,
          el('a', { href: `/station/${st.station_code}?date=${d.rolledFrom}` }, `(see ${d.rolledFrom})`)) : null,
        el('a', { href: `/accuracy/${st.station_code}` }, 'model accuracy')].filter(Boolean));
    };

    const freshness = () => {
      if (!d) return;
      const ended = d.today ? WX.dayData.ended(d, WX.api.now()) : [];
      const l = WX.dayPanels.layersLine(d);
      note.textContent = ended.length ? `the ${ended.join(' and ')} day has ended: loading the new day… · ${l.text}` : l.text;
      note.className = l.stale || ended.length ? 'bad' : 'sub';
    };

    const draw = () => {
      if (closed) return;
      header();
      if (plot) plot.destroy();
      plot = WX.dayChart.draw(d, chartBox);
      panels.replaceChildren(el('section', { class: 'panel wide' }, el('h2', {}, 'Settlement'), el('div', { class: 'scroll' }, WX.dayPanels.settlement(d))),
        WX.dayPanels.alertsPanel(d), WX.dayPanels.bracketsPanel(d), WX.dayPanels.observationsTable(d), WX.dayPanels.forecastsPanel(d));
      freshness();
    };

    /** The trading day ended: load the new one, keeping this session's alerts. */
    const rollover = async () => {
      if (rolling || closed || !d || !d.today) return;
      rolling = true;
      // Until the new day is loaded, the old day's cells say that it is over.
      draw();
      const from = d.st.days.nws.date;
      try {
        const next = await WX.dayData.load(code);
        if (closed) return;
        next.alerts = d.alerts;
        next.rolledFrom = next.st.days.nws.date !== from ? from : d.rolledFrom;
        if (WX.dayData.ended(next, WX.api.now()).length) next.retryAt = WX.api.now() + 30;
        d = next;
        draw();
        WX.dayData.loadRest(d).then(() => draw());
      } catch (e) {
        note.textContent = `the day has ended and the new day could not be loaded (${e.message}); retrying`;
        note.className = 'bad';
      } finally {
        rolling = false;
      }
    };

    const tick = () => {
      if (!d || !d.today) return;
      // A reload that still answered the old day (the server not there yet) is retried later.
      if (WX.dayData.ended(d, WX.api.now()).length && !(d.retryAt > WX.api.now())) rollover();
      else freshness();
    };

    const poll = async () => {
      if (!d || !d.today || rolling) return;
      try {
        if (await WX.dayData.poll(d) === 'rollover') rollover();
        else draw();
      } catch (e) {
        note.textContent = `${note.textContent} · check failed: ${e.message}`;
        note.className = 'bad';
      }
    };

    WX.dayData.load(code, date).then((data) => {
      if (closed) return;
      d = data;
      draw();
      document.body.dataset.rendered = 'day';
      // Since navigation start: what the browser test reports as the render time.
      window.WX_RENDERED_AT = performance.now();
      WX.dayData.loadRest(d).then(() => { draw(); document.body.dataset.filled = 'day'; });
      ticker = setInterval(tick, TICK_MS);
      if (d.today) {
        poller = setInterval(poll, POLL_MS);
        live = WX.live.open([code], (name, p) => {
          if (name === 'resync') { WX.app.route(); return; }
          const what = WX.dayLive.apply(d, name, p);
          if (what === 'rollover') rollover();
          else if (what === 'poll') { draw(); poll(); } else if (what) draw();
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
      closed = true;
      if (live) live.close();
      clearInterval(ticker);
      clearInterval(poller);
      window.removeEventListener('wx-units', onUnits);
      if (plot) plot.destroy();
    };
  };

  return { render };
})();
