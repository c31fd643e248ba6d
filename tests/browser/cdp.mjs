// A minimal Chrome DevTools Protocol client over --remote-debugging-pipe:
// no npm package, no WebSocket, no network port. Chromium reads commands on
// fd 3 and writes replies and events on fd 4, each a JSON message ended by NUL.
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function findChromium() {
  const candidates = [process.env.CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  return candidates.find((c) => c && fs.existsSync(c)) || null;
}

export class Browser {
  static async launch(executable, {width = 1440, height = 1000} = {}) {
    const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drainwise-chromium-'));
    const args = [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-extensions', '--disable-default-apps', '--mute-audio', '--hide-scrollbars',
      '--force-device-scale-factor=1', `--window-size=${width},${height}`,
      `--user-data-dir=${userDataDir}`, '--remote-debugging-pipe', 'about:blank',
    ];
    const proc = spawn(executable, args, {stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe']});
    const b = new Browser(proc, userDataDir);
    await b.send('Target.setDiscoverTargets', {discover: false});
    return b;
  }

  constructor(proc, userDataDir) {
    this.proc = proc;
    this.userDataDir = userDataDir;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = [];
    this.stderr = '';
    this.exited = false;
    proc.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    proc.on('exit', (code) => {
      this.exited = true;
      for (const {reject} of this.pending.values()) reject(new Error(`chromium exited (${code}): ${this.stderr}`));
      this.pending.clear();
    });
    this.out = proc.stdio[3];
    let buf = Buffer.alloc(0);
    proc.stdio[4].on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let end;
      while ((end = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.subarray(0, end).toString('utf8'));
        buf = buf.subarray(end + 1);
        this.dispatch(msg);
      }
    });
  }

  dispatch(msg) {
    if (msg.id !== undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
      return;
    }
    for (const l of this.listeners) l(msg);
  }

  send(method, params = {}, sessionId = undefined, timeoutMs = 20000) {
    if (this.exited) return Promise.reject(new Error('chromium is not running: ' + this.stderr));
    const id = this.nextId++;
    const msg = {id, method, params};
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: (r) => { clearTimeout(timer); resolve(r); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      });
      this.out.write(JSON.stringify(msg) + '\0');
    });
  }

  on(listener) { this.listeners.push(listener); }

  async newPage() {
    const {targetId} = await this.send('Target.createTarget', {url: 'about:blank'});
    const {sessionId} = await this.send('Target.attachToTarget', {targetId, flatten: true});
    const page = new Page(this, sessionId);
    await page.init();
    return page;
  }

  async close() {
    if (!this.exited) {
      try { await this.send('Browser.close', {}, undefined, 3000); } catch (e) { /* killed below */ }
      await new Promise((r) => { if (this.exited) r(); else { this.proc.once('exit', r); setTimeout(r, 3000); } });
      if (!this.exited) this.proc.kill('SIGKILL');
    }
    fs.rmSync(this.userDataDir, {recursive: true, force: true});
  }
}

export class Page {
  constructor(browser, sessionId) {
    this.b = browser;
    this.sessionId = sessionId;
    this.errors = [];   // console errors, uncaught exceptions, CSP violations
    this.events = [];
    browser.on((msg) => {
      if (msg.sessionId !== sessionId) return;
      this.events.push(msg);
      if (this.events.length > 2000) this.events.splice(0, 1000);
      const p = msg.params || {};
      if (msg.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert')) {
        this.errors.push(`console.${p.type}: ${(p.args || []).map((a) => a.value ?? a.description).join(' ')}`);
      } else if (msg.method === 'Runtime.exceptionThrown') {
        const d = p.exceptionDetails || {};
        this.errors.push(`uncaught: ${d.exception?.description || d.text} at ${d.url}:${d.lineNumber}`);
      } else if (msg.method === 'Log.entryAdded' && p.entry.level === 'error') {
        this.errors.push(`log (${p.entry.source}): ${p.entry.text} ${p.entry.url || ''}`);
      }
    });
  }

  send(method, params, timeoutMs) { return this.b.send(method, params, this.sessionId, timeoutMs); }

  // Holds the requests whose URL matches `pattern` (a RegExp) before they
  // are sent, until the returned function is called: it sends them on, and
  // lets later ones through. For orderings a fast machine never shows.
  async hold(pattern) {
    const held = [];
    let holding = true;
    this.b.on((msg) => {
      if (msg.sessionId !== this.sessionId || msg.method !== 'Fetch.requestPaused') return;
      const {requestId, request} = msg.params;
      if (holding && pattern.test(request.url)) {
        held.push(requestId);
        return;
      }
      this.send('Fetch.continueRequest', {requestId}).catch(() => {});
    });
    await this.send('Fetch.enable', {patterns: [{urlPattern: '*/v1/*'}]});
    return () => {
      holding = false;
      const n = held.length;
      for (const requestId of held.splice(0)) this.send('Fetch.continueRequest', {requestId}).catch(() => {});
      return n;
    };
  }

  // Answers requests whose URL matches `pattern` (a RegExp) with `reply(url)`
  // ({status, body}) instead of the server: a stand-in for a feature the
  // daemon under test does not have configured.
  async intercept(pattern, reply) {
    this.b.on((msg) => {
      if (msg.sessionId !== this.sessionId || msg.method !== 'Fetch.requestPaused') return;
      const {requestId, request} = msg.params;
      if (!pattern.test(request.url)) {
        this.send('Fetch.continueRequest', {requestId}).catch(() => {});
        return;
      }
      const r = reply(request.url);
      this.send('Fetch.fulfillRequest', {
        requestId, responseCode: r.status || 200,
        responseHeaders: [{name: 'Content-Type', value: 'application/json'}],
        body: Buffer.from(JSON.stringify(r.body)).toString('base64'),
      }).catch(() => {});
    });
    await this.send('Fetch.enable', {patterns: [{urlPattern: '*/v1/*'}]});
  }

  async init() {
    await Promise.all([this.send('Page.enable'), this.send('Runtime.enable'), this.send('Log.enable')]);
  }

  async setViewport(width, height) {
    await this.send('Emulation.setDeviceMetricsOverride', {width, height, deviceScaleFactor: 1, mobile: false});
  }

  waitEvent(method, timeoutMs = 15000) {
    const start = this.events.length;
    return new Promise((resolve, reject) => {
      const t0 = Date.now();
      const poll = () => {
        const hit = this.events.slice(start).find((e) => e.method === method);
        if (hit) return resolve(hit.params);
        if (Date.now() - t0 > timeoutMs) return reject(new Error(`no ${method} in ${timeoutMs} ms`));
        setTimeout(poll, 20);
      };
      poll();
    });
  }

  // A page load waits up to 45 s. The whole test runs in about 8 s, but in
  // one full ctest -j 2 run on a starved VM a load took over 15 s (the
  // console loaded fine when the test ran again alone): the bound only
  // guards a hang.
  async goto(url) {
    const loaded = this.waitEvent('Page.loadEventFired', 45000);
    const r = await this.send('Page.navigate', {url});
    if (r.errorText) throw new Error(`navigate ${url}: ${r.errorText}`);
    if (!r.loaderId) return;  // same document (only the #fragment changed): no load event
    await loaded;
  }

  async eval(expression) {
    const r = await this.send('Runtime.evaluate', {expression, awaitPromise: true, returnByValue: true});
    if (r.exceptionDetails) {
      throw new Error(`eval failed: ${r.exceptionDetails.exception?.description || r.exceptionDetails.text}\n  in: ${expression}`);
    }
    return r.result.value;
  }

  // Polls `expression` until it is truthy; returns its value.
  async waitFor(expression, what, timeoutMs = 30000) {
    const t0 = Date.now();
    for (;;) {
      const v = await this.eval(expression);
      if (v) return v;
      if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what || expression}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  // A real mouse click at the centre of the element (scrolled into view).
  async click(selector) {
    const box = await this.eval(`(() => {
      const el = document.querySelector(${JSON.stringify(selector)});
      if (!el) return null;
      el.scrollIntoView({block: 'center', inline: 'center'});
      const r = el.getBoundingClientRect();
      return {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height};
    })()`);
    if (!box) throw new Error(`click: no element ${selector}`);
    if (box.w === 0 || box.h === 0) throw new Error(`click: ${selector} is not visible`);
    for (const type of ['mouseMoved', 'mousePressed', 'mouseReleased']) {
      await this.send('Input.dispatchMouseEvent', {type, x: box.x, y: box.y, button: 'left', clickCount: 1});
    }
  }

  async type(selector, text) {
    const ok = await this.eval(`(() => { const el = document.querySelector(${JSON.stringify(selector)}); if (!el) return false; el.focus(); return true; })()`);
    if (!ok) throw new Error(`type: no element ${selector}`);
    await this.send('Input.insertText', {text});
  }

  async press(key) {
    const code = {Enter: 13}[key];
    for (const type of ['keyDown', 'keyUp']) {
      await this.send('Input.dispatchKeyEvent', {type, key, code: key, windowsVirtualKeyCode: code, text: type === 'keyDown' && key === 'Enter' ? '\r' : undefined});
    }
  }

  // fullPage: the whole document; below: only down to the bottom of that
  // element (no empty viewport under a short page).
  async screenshot(file, {fullPage = false, below = null} = {}) {
    const params = {format: 'png'};
    await this.eval('window.scrollTo(0, 0)');
    if (below) {
      const r = await this.eval(`(() => { const r = document.querySelector(${JSON.stringify(below)}).getBoundingClientRect();
        return {w: document.documentElement.clientWidth, h: Math.ceil(r.bottom + 16)}; })()`);
      params.clip = {x: 0, y: 0, width: r.w, height: r.h, scale: 1};
      params.captureBeyondViewport = true;
    } else if (fullPage) {
      const {cssContentSize} = await this.send('Page.getLayoutMetrics');
      params.clip = {x: 0, y: 0, width: cssContentSize.width, height: cssContentSize.height, scale: 1};
      params.captureBeyondViewport = true;
    }
    const {data} = await this.send('Page.captureScreenshot', params, 30000);
    fs.writeFileSync(file, Buffer.from(data, 'base64'));
  }
}
