// Live events from the stream's same-origin relay. EventSource cannot send a header, and
// the key must not go in a URL, so the body is read with fetch and parsed as SSE here.
// Reconnects after 5 s with the last id (Last-Event-ID: missed events are replayed);
// says when it is stale (no heartbeat for 75 s) or gave up (displaced, refused).
'use strict';

WX.live = (() => {
  const RELAY = '/api/v2/stream/relay';
  const RETRY_MS = 5000;
  const STALE_MS = 75000;

  /**
   * Opens the relay for `stations`; `onEvent(name, data)` gets every event, `onState(text,
   * kind)` the connection's state ('live', 'wait', 'stale', 'off'). Returns { close }.
   */
  const open = (stations, onEvent, onState) => {
    let lastId = null;
    let closed = false;
    let ctrl = null;
    let lastSeen = Date.now();
    let timer = null;

    const watchdog = setInterval(() => {
      if (!closed && Date.now() - lastSeen > STALE_MS) onState('stale: no heartbeat for over a minute', 'stale');
    }, 5000);

    const dispatch = (block) => {
      let name = 'message';
      let id = null;
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') name = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id') id = value;
      }
      if (id) lastId = id;
      let payload = null;
      try {
        payload = data.length ? JSON.parse(data.join('\n')) : null;
      } catch (_) {
        return;
      }
      lastSeen = Date.now();
      if (name === 'connected' || name === 'heartbeat') onState('live', 'live');
      if (name === 'displaced') {
        closed = true;
        onState('paused: the dashboard was opened in another tab (reload to take over)', 'off');
      }
      onEvent(name, payload);
    };

    const connect = async () => {
      if (closed) return;
      ctrl = new AbortController();
      const headers = { 'X-API-Key': WX.api.key() || '' };
      if (lastId) headers['Last-Event-ID'] = lastId;
      try {
        const resp = await fetch(`${RELAY}?stations=${encodeURIComponent(stations.join(','))}`, {
          headers,
          signal: ctrl.signal,
          cache: 'no-store',
        });
        if (!resp.ok) {
          let body = {};
          try {
            body = await resp.json();
          } catch (_) { /* not JSON */ }
          if (resp.status === 429) {
            onState('reconnecting (paced)', 'wait');
            timer = setTimeout(connect, RETRY_MS);
            return;
          }
          closed = true;
          onState(`no live updates: ${body.error || resp.status}${body.details ? ` (${body.details})` : ''}`, 'off');
          return;
        }
        const reader = resp.body.getReader();
        const decoder = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            dispatch(buf.slice(0, cut));
            buf = buf.slice(cut + 2);
          }
        }
      } catch (e) {
        if (closed) return;
      }
      if (!closed) {
        onState('reconnecting…', 'wait');
        timer = setTimeout(connect, RETRY_MS);
      }
    };

    onState('connecting…', 'wait');
    connect();
    return {
      close() {
        closed = true;
        clearInterval(watchdog);
        clearTimeout(timer);
        if (ctrl) ctrl.abort();
      },
    };
  };

  return { open };
})();
