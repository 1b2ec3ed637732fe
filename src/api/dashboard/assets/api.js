// The REST client of the page: the key lives in sessionStorage (this tab, until it closes),
// goes only in the X-API-Key header, never in a URL, and is dropped on a 401.
'use strict';

WX.api = (() => {
  const KEY = 'wxlake.key';

  const key = () => sessionStorage.getItem(KEY);
  const setKey = (k) => sessionStorage.setItem(KEY, k);
  const clearKey = () => sessionStorage.removeItem(KEY);

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
   * rejects with an ApiError. A 401 drops the key and shows the login form.
   */
  const get = async (path, params) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== null && v !== undefined && v !== '') q.set(k, v);
    }
    const url = q.toString() ? `${path}?${q}` : path;
    const resp = await fetch(url, { headers: { 'X-API-Key': key() || '' }, cache: 'no-store' });
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

  return { key, setKey, clearKey, get, ApiError };
})();
