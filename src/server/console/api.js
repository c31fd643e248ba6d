// The REST API (docs/openapi.yaml) with the user's bearer token: a 401 shows
// the token bar and retries once the user gives one; errors carry the
// problem+json detail and show in the error bar.
import {$} from './dom.js';

export const api = {
  token: sessionStorage.getItem('drainwise.token') || '',
  waiting: null,
  async call(method, path, body) {
    const headers = {Accept: 'application/json'};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const sent = this.token;
    if (sent) headers.Authorization = 'Bearer ' + sent;
    const res = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = {detail: text}; }
    if (res.status === 401) {
      // A request sent before the user gave the token (several go at
      // once) is retried with it; only a refused token asks again.
      if (this.token === sent) await this.askToken(sent ? 'That token was not accepted.' : '');
      return this.call(method, path, body);
    }
    if (!res.ok) {
      const err = new Error((data && (data.detail || data.title)) || `HTTP ${res.status}`);
      err.status = res.status;
      throw err;
    }
    return data;
  },
  askToken(message) {
    if (!this.waiting) {
      this.waiting = new Promise((resolve) => {
        const bar = $('#token-bar');
        bar.hidden = false;
        $('#token-error').textContent = message;
        $('#token').focus();
        bar.onsubmit = (ev) => {
          ev.preventDefault();
          this.token = $('#token').value.trim();
          sessionStorage.setItem('drainwise.token', this.token);
          bar.hidden = true;
          this.waiting = null;
          resolve();
        };
      });
    }
    return this.waiting;
  },
};

export function showError(err) {
  const bar = $('#error-bar');
  if (!err) { bar.hidden = true; return; }
  bar.textContent = err.status === 403 ? `Not allowed with this token: ${err.message}` : String(err.message || err);
  bar.hidden = false;
}
