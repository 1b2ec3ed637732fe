// The REST client of the page: the key lives in sessionStorage (this tab, until it closes),
// goes only in the X-API-Key header, never in a URL, and is dropped on a 401.
'use strict';

WX.api = (() => {
  const KEY = 'wxlake.key';

  const key = () => sessionStorage.getItem(KEY);
  const setKey = (k) => sessionStorage.setItem(KEY, k);
  const clearKey = () => sessionStorage.removeItem(KEY);

  // The server's clock minus this browser's (ms), from the answers' Date header: the end of
  // a trading day is the server's, not a browser clock that may be minutes off.
  let skewMs = 0;
  /** The server's time now, epoch seconds (this browser's clock until an answer arrived). */
  const now = () => (Date.now() + skewMs) / 1000;

  /** One GET with the key in its header; notes the server's clock. */
  const send = async (url) => {
    const sent = Date.now();
    const resp = await fetch(url, { headers: { 'X-API-Key': key() || '' }, cache: 'no-store' });
    const date = Date.parse(resp.headers.get('Date') || '');
    // The header has whole seconds: half a second added, the round trip's midpoint taken.
    if (!Number.isNaN(date)) skewMs = date + 500 - (sent + Date.now()) / 2;
    return resp;
  };

  /** An API refusal, with the API's own `error` and `details`. */
  class ApiError extends Error {
    constructor(status, body) {
      super(body && body.error ? body.error : `HTTP ${status}`);
      this.status = status;
      this.details = body && body.details ? body.details : '';
    }
  }

  /**
   * GET `path` with `params` (skipping empty ones); resolves to { body, headers } or
   * rejects with an ApiError. A 401 drops the key and shows the login form. A 5xx is asked
   * once more after a moment: a page kept open all day should not blank on one transient
   * server error (the second refusal is shown).
   */
  const get = async (path, params) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== null && v !== undefined && v !== '') q.set(k, v);
    }
    const url = q.toString() ? `${path}?${q}` : path;
    let resp = await send(url);
    if (resp.status >= 500) {
      await new Promise((r) => setTimeout(r, 300));
      resp = await send(url);
    }
    let body = null;
    try {
      body = await resp.json();
    } catch (_) {
      body = null;
    }
    if (!resp.ok) {
      if (resp.status === 401) {
        clearKey();
        // The login form shows the refusal itself; any other view goes back to it.
        if (!document.getElementById('login')) WX.app.route();
      }
      throw new ApiError(resp.status, body);
    }
    return { body, headers: resp.headers };
  };

  return { key, setKey, clearKey, get, now, ApiError };
})();
