// The page's router: `/` overview, `/station/{code}` day view, `/accuracy/{code}` accuracy
// view; the login form whenever there is no key. Navigation stays in the page (history API).
'use strict';

WX.app = (() => {
  const { el } = WX.fmt;
  const main = document.getElementById('main');
  const nav = document.getElementById('nav');
  const conn = document.getElementById('conn');
  const logout = document.getElementById('logout');
  const units = document.getElementById('units');
  let cleanup = null;

  /** The live connection's state in the header. */
  const connState = (text, kind) => {
    conn.textContent = kind === 'live' ? '● live' : text;
    conn.className = `conn ${kind}`;
    conn.title = text;
  };

  const login = () => {
    const input = el('input', { type: 'password', id: 'api-key', autocomplete: 'off', placeholder: 'API key', required: true });
    const msg = el('p', { class: 'bad', id: 'login-error' });
    const form = el('form', { class: 'login', id: 'login' },
      el('h1', {}, 'wxlake'),
      el('p', {}, 'Enter your API key. It stays in this browser tab until you close it or log out, and is sent only to this server, in a header.'),
      input, el('button', { type: 'submit' }, 'Open dashboard'), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const k = input.value.trim();
      if (!k) return;
      WX.api.setKey(k);
      try {
        await WX.api.get('/api/v2/stations.php', { station_code: 'KNYC' });
        route();
      } catch (e) {
        WX.api.clearKey();
        msg.textContent = `${e.message}${e.details ? `: ${e.details}` : ''}`;
      }
    });
    main.replaceChildren(form);
    input.focus();
  };

  const unitToggle = () => {
    const b = (u, label) => {
      const x = el('button', { type: 'button', class: WX.fmt.unit() === u ? 'on' : '', dataset: { unit: u } }, label);
      x.addEventListener('click', () => {
        WX.fmt.setUnit(u);
        unitToggle();
        window.dispatchEvent(new Event('wx-units'));
      });
      return x;
    };
    units.replaceChildren(b('native', 'native'), b('fahrenheit', '°F'), b('celsius', '°C'));
  };

  const route = () => {
    if (cleanup) { cleanup(); cleanup = null; }
    connState('', 'off');
    document.body.dataset.rendered = '';
    const path = location.pathname;
    if (!WX.api.key()) {
      nav.replaceChildren();
      logout.hidden = true;
      units.replaceChildren();
      login();
      return;
    }
    logout.hidden = false;
    unitToggle();
    nav.replaceChildren(el('a', { href: '/' }, 'overview'));
    const m = path.match(/^\/(station|accuracy)\/([A-Za-z0-9]{3,8})\/?$/);
    const params = new URLSearchParams(location.search);
    if (m && m[1] === 'station') {
      const code = m[2].toUpperCase();
      document.title = `${code} · wxlake`;
      cleanup = WX.day.render(main, code, params.get('date') || undefined);
    } else if (m) {
      const code = m[2].toUpperCase();
      document.title = `${code} accuracy · wxlake`;
      cleanup = WX.accuracy.render(main, code, params);
    } else {
      document.title = 'wxlake';
      cleanup = WX.overview.render(main);
    }
  };

  /** Navigates inside the page. */
  const go = (href) => {
    history.pushState(null, '', href);
    route();
  };

  document.addEventListener('click', (ev) => {
    const a = ev.target.closest('a');
    if (!a || a.target || ev.ctrlKey || ev.metaKey || ev.shiftKey || a.origin !== location.origin) return;
    ev.preventDefault();
    go(a.pathname + a.search);
  });
  window.addEventListener('popstate', route);
  logout.addEventListener('click', () => {
    WX.api.clearKey();
    route();
  });

  return { route, go, connState };
})();

WX.app.route();
