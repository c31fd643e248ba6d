// drainwise operator console. Plain JS, no dependencies, no build step: the
// daemon embeds this file and serves it at /ui/console.js. Everything shown
// comes from the public REST API (docs/openapi.yaml) with the user's bearer
// token, so the page can do exactly what the token's role allows.
'use strict';
(() => {
  // ---------------------------------------------------------------- helpers
  const $ = (sel) => document.querySelector(sel);
  const SVG = 'http://www.w3.org/2000/svg';

  // Builds an element. attrs: class, text, style (object: CSSOM, allowed by
  // the page's CSP, unlike style attributes), on<event>, data-*, anything else
  // as an attribute. Text always goes in as text, never as HTML.
  function build(ns, tag, attrs, children) {
    const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') el.textContent = v;
      else if (k === 'style') Object.assign(el.style, v);
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const h = (tag, attrs, ...children) => build(null, tag, attrs, children);
  const s = (tag, attrs, ...children) => build(SVG, tag, attrs, children);

  const fmtPct = (x, digits = 0) => (x === null || x === undefined ? '—' : (100 * x).toFixed(digits) + '%');
  const fmtNum = (x, digits = 0) => (x === null || x === undefined ? '—' : Number(x).toLocaleString('en-US', {maximumFractionDigits: digits}));
  const plural = (n, word, words) => `${fmtNum(n)} ${n === 1 ? word : (words || word + 's')}`;
  const natural = new Intl.Collator('en', {numeric: true}).compare;
  const linkKey = (a, b) => (natural(a, b) <= 0 ? a + '|' + b : b + '|' + a);
  // "a -> b" or "a:port -> b:port" (the API's directed link names) to an
  // undirected key of node names.
  function parseLinkName(name) {
    const parts = String(name).split(' -> ');
    if (parts.length !== 2) return null;
    const node = (end) => {
      if (!S.topo || S.topo.nodes.has(end)) return end;
      const colon = end.lastIndexOf(':');
      return colon > 0 && S.topo.nodes.has(end.slice(0, colon)) ? end.slice(0, colon) : end;
    };
    return linkKey(node(parts[0]), node(parts[1]));
  }
  const keyOfLink = (l) => (l.a && l.b ? linkKey(l.a, l.b) : l.link ? parseLinkName(l.link) : null);
  const verdictClass = (v) => (v === 'allow' || v === 'warn' || v === 'deny' ? v : 'warn');
  const badge = (v) => h('span', {class: 'badge ' + verdictClass(v), text: v || '?'});

  // ---------------------------------------------------------------- API
  // fetch with the bearer token; a 401 shows the token bar and retries once the
  // user gives one. Errors carry the problem+json detail.
  const api = {
    token: sessionStorage.getItem('drainwise.token') || '',
    waiting: null,
    async call(method, path, body) {
      const headers = {Accept: 'application/json'};
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      if (this.token) headers.Authorization = 'Bearer ' + this.token;
      const res = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
      const text = await res.text();
      let data = null;
      try { data = text ? JSON.parse(text) : null; } catch (e) { data = {detail: text}; }
      if (res.status === 401) {
        await this.askToken(this.token ? 'That token was not accepted.' : '');
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

  function showError(err) {
    const bar = $('#error-bar');
    if (!err) { bar.hidden = true; return; }
    bar.textContent = err.status === 403 ? `Not allowed with this token: ${err.message}` : String(err.message || err);
    bar.hidden = false;
  }

  // ---------------------------------------------------------------- state
  const S = {
    topo: null,          // indexed topology (indexTopology)
    jobs: [], jobById: new Map(),
    drains: [],          // active drains (GET /v1/drains)
    activeSwitches: new Set(), activeLinks: new Set(),
    selSwitches: [], selLinks: [],   // the what-if being built
    assessment: null,    // the last assessment shown
    zoomPod: null,       // the pod drawn in detail on a large fabric
    highlight: null,     // {id, switches, links, hosts, how}
    telemetry: new Map(),  // link key -> {util, degraded} from GET /v1/links
    pathsConfigured: true,
    planSwitches: [],
  };

  // ---------------------------------------------------------------- topology
  function levelOf(n) {
    if (n.kind === 'host') return 0;
    const t = (n.tier || '').toLowerCase();
    if (t === 'leaf' || t === 'tor') return 1;
    if (t === 'spine') return 2;
    if (t === 'superspine') return 3;
    return n.level || 1;
  }

  function indexTopology(doc) {
    const nodes = new Map();
    const switches = [], hosts = [];
    for (const n of doc.nodes) {
      const node = {...n, lvl: levelOf(n), adj: [], pod: n.pod || ''};
      nodes.set(n.id, node);
      (n.kind === 'switch' ? switches : hosts).push(node);
    }
    const links = [];
    for (const l of doc.links) {
      const a = nodes.get(l.a), b = nodes.get(l.b);
      if (!a || !b) continue;
      a.adj.push(b.id);
      b.adj.push(a.id);
      links.push({a: l.a, b: l.b, key: linkKey(l.a, l.b), gbps: l.gbps});
    }
    // Host groups: leaves joined by the hosts they share (the rails of one
    // rack, union-find) are drawn together over one box counting their hosts.
    const parent = new Map();
    const find = (x) => { while (parent.get(x) !== x) { parent.set(x, parent.get(parent.get(x))); x = parent.get(x); } return x; };
    const leaves = switches.filter((n) => n.lvl === 1).sort((x, y) => natural(x.id, y.id));
    for (const leaf of leaves) parent.set(leaf.id, leaf.id);
    for (const hn of hosts) {
      const ls = hn.adj.filter((id) => parent.has(id));
      for (let i = 1; i < ls.length; i++) {
        const ra = find(ls[0]), rb = find(ls[i]);
        if (ra !== rb) parent.set(rb, ra);
      }
    }
    const groups = new Map();
    for (const leaf of leaves) {
      const root = find(leaf.id);
      if (!groups.has(root)) groups.set(root, {id: 'hg:' + groups.size, pod: leaf.pod, leaves: [], hosts: [], gpus: 0});
      groups.get(root).leaves.push(leaf);
      leaf.group = groups.get(root);
    }
    for (const hn of hosts) {
      const leaf = hn.adj.map((id) => nodes.get(id)).find((n) => n.group);
      if (!leaf) continue;
      hn.group = leaf.group;
      leaf.group.hosts.push(hn.id);
      leaf.group.gpus += hn.gpus || 0;
    }
    for (const g of groups.values()) {
      // "p0-leaf3-r0" … "p0-leaf3-r3" -> "leaf3": the leaves' common prefix.
      let prefix = g.leaves[0].id;
      for (const l of g.leaves) while (!l.id.startsWith(prefix)) prefix = prefix.slice(0, -1);
      g.label = g.leaves.length > 1 ? prefix.replace(/[-_.][^-_.]*$/, '').replace(/^p\d+-/, '') : '';
      g.hosts.sort(natural);
      g.leaves.sort((x, y) => natural(x.plane || '', y.plane || '') || natural(x.id, y.id));
    }
    const pods = [...new Set(switches.map((n) => n.pod).filter((p) => p))].sort(natural);
    const tiers = [...new Set(switches.map((n) => n.tier || 'level ' + n.lvl))];
    tiers.sort((x, y) => levelOf({kind: 'switch', tier: x}) - levelOf({kind: 'switch', tier: y}));
    return {doc, nodes, switches, hosts, links, groups: [...groups.values()], pods, tiers};
  }

  // ---------------------------------------------------------------- fabric
  // What is drawn is a list of boxes (a switch, a group of switches, a pod, a
  // host group) and lines between them. Each topology node maps to at most one
  // box (visOf); a topology link between two boxes becomes one line per pair,
  // carrying the worst state of the links it stands for.
  const DETAIL_LIMIT = 200;     // switches drawn one by one up to this many
  const ROW_LIMIT = 64;         // a pod-less row with more is drawn per plane

  function switchState(id) {
    const drainedByAssessment = S.assessment && (S.assessment.drain?.switches || []).includes(id);
    return {
      active: S.activeSwitches.has(id),
      whatif: S.selSwitches.includes(id) || drainedByAssessment,
      job: S.highlight ? S.highlight.switches.has(id) : false,
    };
  }

  function linkUtil(key) {
    const hot = S.assessment?.hotByKey?.get(key);
    if (hot) return hot;
    const tel = S.telemetry.get(key);
    return tel ? {after: tel.util, before: tel.util, degraded: tel.degraded, telemetry: true} : null;
  }

  function renderFabric() {
    const host = $('#fabric');
    host.replaceChildren();
    if (!S.topo) return;
    const T = S.topo;
    const big = T.switches.length > DETAIL_LIMIT && T.pods.length > 1;
    if (big && S.zoomPod === null) renderOverview(host);
    else renderDetail(host, big ? [S.zoomPod] : (T.pods.length ? T.pods : ['']));
    const crumbs = $('#crumbs');
    crumbs.replaceChildren();
    if (big) {
      if (S.zoomPod === null) crumbs.append(`· ${T.pods.length} pods, click one to zoom in`);
      else crumbs.append('· ', h('a', {text: 'all pods', onclick: () => { S.zoomPod = null; renderFabric(); }}), ` › ${S.zoomPod}`);
    }
    $('#fabric-hint').textContent = big && S.zoomPod === null
      ? `${fmtNum(T.switches.length)} switches and ${fmtNum(T.hosts.length)} hosts: each pod is one block.`
      : 'Click a switch to add it to the what-if; hover for its name. Hosts are counted under their leaves.';
    renderLegend();
  }

  function addTooltip(el, text) {
    el.addEventListener('mousemove', (ev) => {
      const tip = $('#tooltip');
      tip.textContent = typeof text === 'function' ? text() : text;
      tip.hidden = false;
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 350) + 'px';
      tip.style.top = ev.clientY + 14 + 'px';
    });
    el.addEventListener('mouseleave', () => { $('#tooltip').hidden = true; });
  }

  function lineStyle(state) {
    // state: {util, degraded, drained, active, job, count}
    if (state.active) return {stroke: 'var(--drain)', width: 2.5, dash: '5 3', opacity: 0.9};
    if (state.drained) return {stroke: 'var(--whatif)', width: 2, dash: '4 3', opacity: 0.9};
    if (state.degraded) return {stroke: '#7c3aed', width: 2.5, dash: '6 3', opacity: 1};
    if (state.util !== undefined && state.util !== null) {
      const u = state.util;
      const stroke = u >= 0.9 ? 'var(--deny)' : u >= 0.7 ? 'var(--warn)' : '#22c55e';
      return {stroke, width: 1.5 + 3 * Math.min(1, u), opacity: 0.95};
    }
    if (state.job) return {stroke: 'var(--job)', width: 2, opacity: 0.9};
    return {stroke: '#98a2b3', width: 1, opacity: state.dense ? 0.12 : 0.45};
  }

  // Lines between boxes: collects every topology link whose ends map to two
  // different boxes, merged per pair.
  function collectLines(visOf) {
    const T = S.topo;
    const lines = new Map();
    const drainedSw = new Set([...S.selSwitches, ...(S.assessment?.drain?.switches || [])]);
    const drainedLinks = new Set([...S.selLinks.map((l) => linkKey(l.a, l.b)),
      ...(S.assessment?.drain?.links || []).map((l) => linkKey(l.a, l.b))]);
    for (const l of T.links) {
      const va = visOf(l.a), vb = visOf(l.b);
      if (!va || !vb || va === vb) continue;
      const k = va.id < vb.id ? va.id + '|' + vb.id : vb.id + '|' + va.id;
      let st = lines.get(k);
      if (!st) { st = {a: va, b: vb, count: 0, names: new Set()}; lines.set(k, st); }
      st.count++;
      if (st.names.size < 4) st.names.add(`${l.a} – ${l.b}`);
      const u = linkUtil(l.key);
      if (u) {
        if (u.after !== undefined && (st.util === undefined || u.after > st.util)) { st.util = u.after; st.before = u.before; }
        if (u.degraded) st.degraded = true;
      }
      if (drainedLinks.has(l.key) || drainedSw.has(l.a) || drainedSw.has(l.b)) st.drained = true;
      if (S.activeLinks.has(l.key) || S.activeSwitches.has(l.a) || S.activeSwitches.has(l.b)) st.active = true;
      if (S.highlight && S.highlight.links.has(l.key)) st.job = true;
    }
    return [...lines.values()];
  }

  function drawLines(svg, lines) {
    const dense = lines.length > 600;
    const plain = s('g', {class: 'links'});
    const marked = s('g', {class: 'links-marked'});
    for (const st of lines) {
      st.dense = dense;
      const style = lineStyle(st);
      const [top, bottom] = st.a.y < st.b.y ? [st.a, st.b] : [st.b, st.a];
      const ln = s('line', {
        x1: top.x, y1: top.y + top.h / 2, x2: bottom.x, y2: bottom.y - bottom.h / 2,
        stroke: style.stroke, 'stroke-width': style.width, 'stroke-opacity': style.opacity,
        'stroke-dasharray': style.dash, 'data-link': [...st.names][0],
      });
      const interesting = st.active || st.drained || st.degraded || st.util !== undefined || st.job;
      if (interesting) {
        ln.style.pointerEvents = 'stroke';
        addTooltip(ln, () => [...st.names].join('\n') + (st.count > st.names.size ? `\n… ${st.count} links` : '') +
          (st.util !== undefined ? `\nutilisation ${fmtPct(st.before)} → ${fmtPct(st.util)}` : '') +
          (st.degraded ? '\ndegraded' : '') + (st.drained ? '\ngoes down in the what-if' : '') +
          (st.active ? '\ndown: active drain' : ''));
      }
      (interesting ? marked : plain).append(ln);
    }
    svg.append(plain, marked);
  }

  function switchBox(svg, box, n) {
    const st = switchState(n.id);
    const fill = st.active ? 'var(--drain)' : st.whatif ? 'var(--whatif)' : 'var(--switch)';
    const g = s('g', {class: 'sw', 'data-node': n.id, 'data-state': st.active ? 'drained' : st.whatif ? 'whatif' : 'up'});
    if (st.job) g.append(s('rect', {x: box.x - box.w / 2 - 3, y: box.y - box.h / 2 - 3, width: box.w + 6, height: box.h + 6,
      rx: 5, fill: 'none', stroke: 'var(--job)', 'stroke-width': 2.5}));
    g.append(s('rect', {x: box.x - box.w / 2, y: box.y - box.h / 2, width: box.w, height: box.h, rx: 3, fill}));
    if (box.label) g.append(s('text', {x: box.x, y: box.y + 3.5, 'text-anchor': 'middle', class: 'inv', text: box.label}));
    addTooltip(g, () => `${n.id}\n${n.tier || 'level ' + n.lvl}${n.pod ? ' · ' + n.pod : ''}${n.plane ? ' · ' + n.plane : ''}` +
      (st.active ? '\nDRAINED (active drain)' : '') + (st.whatif ? '\nin the what-if' : '') +
      (st.job ? `\ncarries ${S.highlight.id}` : '') + '\nclick: add to / remove from the what-if');
    g.addEventListener('click', () => toggleSwitch(n.id));
    svg.append(g);
  }

  function groupBox(svg, box, members, label) {
    const drained = members.filter((n) => S.activeSwitches.has(n.id)).length;
    const whatif = members.filter((n) => switchState(n.id).whatif).length;
    const job = S.highlight ? members.filter((n) => S.highlight.switches.has(n.id)).length : 0;
    const fill = drained ? 'var(--drain)' : whatif ? 'var(--whatif)' : 'var(--switch)';
    const g = s('g', {class: 'grp', 'data-group': label});
    if (job) g.append(s('rect', {x: box.x - box.w / 2 - 3, y: box.y - box.h / 2 - 3, width: box.w + 6, height: box.h + 6,
      rx: 5, fill: 'none', stroke: 'var(--job)', 'stroke-width': 2.5}));
    g.append(s('rect', {x: box.x - box.w / 2, y: box.y - box.h / 2, width: box.w, height: box.h, rx: 3, fill}));
    if (box.w > 26) g.append(s('text', {x: box.x, y: box.y + 3.5, 'text-anchor': 'middle', class: 'inv', text: '×' + members.length}));
    addTooltip(g, `${label}: ${members.length} switches\n${members.slice(0, 6).map((n) => n.id).join(', ')}${members.length > 6 ? ', …' : ''}` +
      (drained ? `\n${drained} drained` : '') + (whatif ? `\n${whatif} in the what-if` : '') +
      '\ntype a name in the what-if to drain one');
    svg.append(g);
  }

  function hostBox(svg, box, g) {
    const jobHosts = S.highlight ? g.hosts.filter((id) => S.highlight.hosts.has(id)).length : 0;
    const cut = new Set(S.assessment?.fabric?.hosts_cut_off || []);
    const degraded = new Set(S.assessment?.fabric?.hosts_degraded || []);
    const nCut = g.hosts.filter((id) => cut.has(id)).length;
    const nDeg = g.hosts.filter((id) => degraded.has(id)).length;
    const el = s('g', {class: 'hosts', 'data-hosts': g.id});
    el.append(s('rect', {x: box.x - box.w / 2, y: box.y - box.h / 2, width: box.w, height: box.h, rx: 4,
      fill: nCut ? 'var(--deny-bg)' : '#e2e8f0', stroke: jobHosts ? 'var(--job)' : nCut ? 'var(--deny)' : '#94a3b8',
      'stroke-width': jobHosts || nCut ? 2.5 : 1}));
    let text = box.w > 70 ? `${g.hosts.length} hosts` : `${g.hosts.length}h`;
    if (g.label && (g.label.length + text.length + 3) * 6 < box.w) text = `${g.label} · ${text}`;
    el.append(s('text', {x: box.x, y: box.y + 3.5, 'text-anchor': 'middle', text}));
    addTooltip(el, `${plural(g.hosts.length, 'host')} (${fmtNum(g.gpus)} GPUs) under ${g.leaves.map((n) => n.id).join(', ')}` +
      (g.hosts.length ? `\n${g.hosts[0]} … ${g.hosts[g.hosts.length - 1]}` : '') +
      (nCut ? `\n${nCut} cut off by the what-if` : '') + (nDeg ? `\n${nDeg} lose some uplinks` : '') +
      (jobHosts ? `\n${jobHosts} run ${S.highlight.id}` : ''));
    svg.append(el);
  }

  // The longest of: the name, the name without its pod prefix, its last
  // part ("r0"), that fits in `width` pixels of 10px text.
  function shortLabel(id, pod, width) {
    const fits = (t) => t.length * 6.2 + 4 <= width;
    for (const t of [id, id.replace(/^p\d+-/, ''), id.split('-').pop()]) if (fits(t)) return t;
    return '';
  }

  // Pod-less switches (superspines, cores) above everything, by level; a row
  // too long for boxes is drawn per plane.
  function coreRows(width, y0) {
    const T = S.topo;
    // Without pods everything is drawn as one block below, nothing as core.
    const core = T.pods.length ? T.switches.filter((n) => !n.pod) : [];
    const levels = [...new Set(core.map((n) => n.lvl))].sort((a, b) => b - a);
    const rows = [];
    let y = y0;
    for (const lvl of levels) {
      const members = core.filter((n) => n.lvl === lvl).sort((a, b) => natural(a.plane || '', b.plane || '') || natural(a.id, b.id));
      const tier = members[0].tier || 'level ' + lvl;
      let items;
      if (members.length > ROW_LIMIT) {
        const byPlane = new Map();
        members.forEach((n, i) => {
          const k = n.plane || 'group-' + Math.floor(i / 16);
          if (!byPlane.has(k)) byPlane.set(k, []);
          byPlane.get(k).push(n);
        });
        items = [...byPlane.entries()].map(([k, ms]) => ({group: k, members: ms}));
      } else {
        items = members.map((n) => ({node: n}));
      }
      const slot = width / items.length;
      items.forEach((it, i) => {
        it.box = {id: it.node ? it.node.id : 'core:' + it.group, x: (i + 0.5) * slot, y, w: Math.min(slot * 0.8, 90), h: 20};
        if (it.node) it.box.label = shortLabel(it.node.id, '', it.box.w);
      });
      rows.push({tier, y, items});
      y += 70;
    }
    return {rows, y};
  }

  function renderDetail(host, pods) {
    const T = S.topo;
    const podsInfo = pods.map((pod) => {
      const sws = T.switches.filter((n) => n.pod === pod);
      const levels = [...new Set(sws.filter((n) => n.lvl > 1).map((n) => n.lvl))].sort((a, b) => b - a);
      const groups = T.groups.filter((g) => g.pod === pod);
      const leafCount = groups.reduce((acc, g) => acc + g.leaves.length, 0);
      return {pod, sws, levels, groups, leafCount};
    });
    // Width: enough room per leaf, pods side by side with a gap.
    // Narrower leaves on big pods (a 32k pod has 128): drawn wider than the
    // card, the picture scrolls sideways rather than shrinking to dots.
    const totalLeaves = podsInfo.reduce((acc, p) => acc + p.leafCount, 0);
    const LEAF = totalLeaves > 80 ? 16 : 30, GROUP_GAP = 14, POD_GAP = 40, LEFT = 70;
    podsInfo.forEach((p) => { p.w = Math.max(240, p.leafCount * LEAF + Math.max(0, p.groups.length - 1) * GROUP_GAP); });
    const width = LEFT + podsInfo.reduce((acc, p) => acc + p.w, 0) + POD_GAP * (podsInfo.length - 1) + 10;
    const boxes = new Map();  // node id -> box
    const core = coreRows(width - LEFT, 30);
    for (const row of core.rows) for (const it of row.items) {
      it.box.x += LEFT;
      if (it.node) boxes.set(it.node.id, it.box);
      else for (const n of it.members) boxes.set(n.id, it.box);
    }
    let x = LEFT;
    const yTop = core.rows.length ? core.y + 14 : 40;
    let maxY = yTop;
    const drawList = [];
    for (const p of podsInfo) {
      p.x = x;
      let y = yTop + 18;
      p.rows = [];
      for (const lvl of p.levels) {
        const ms = p.sws.filter((n) => n.lvl === lvl).sort((a, b) => natural(a.id, b.id));
        const slot = p.w / ms.length;
        ms.forEach((n, i) => {
          const w = Math.min(slot * 0.8, 90);
          boxes.set(n.id, {id: n.id, x: x + (i + 0.5) * slot, y, w, h: 20, label: shortLabel(n.id, p.pod, w)});
          drawList.push(n);
        });
        p.rows.push({tier: ms[0].tier || 'level ' + lvl, y});
        y += 80;
      }
      // Leaves by host group, then a box of hosts under each group.
      const leavesW = p.leafCount * LEAF + Math.max(0, p.groups.length - 1) * GROUP_GAP;
      let gx = x + (p.w - leavesW) / 2;  // centred under the spines of a small pod
      const leafY = y;
      const hostY = y + 56;
      for (const g of p.groups) {
        const gw = g.leaves.length * LEAF;
        g.leaves.forEach((n, i) => {
          boxes.set(n.id, {id: n.id, x: gx + (i + 0.5) * LEAF, y: leafY, w: LEAF - 6, h: 20, label: shortLabel(n.id, p.pod, LEAF - 6)});
          drawList.push(n);
        });
        g.box = {id: g.id, x: gx + gw / 2, y: hostY, w: gw - 4, h: 22};
        for (const id of g.hosts) if (!boxes.has(id)) boxes.set(id, g.box);
        gx += gw + GROUP_GAP;
      }
      if (p.groups.length) p.rows.push({tier: 'leaf', y: leafY}, {tier: 'hosts', y: hostY});
      maxY = Math.max(maxY, hostY + 30);
      x += p.w + POD_GAP;
    }
    const height = maxY + 10;
    const svg = s('svg', {viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'fabric'});
    if (width > 1400) svg.style.minWidth = Math.round(width * 0.8) + 'px';
    svg.style.maxWidth = Math.round(width * 1.2) + 'px';  // a small fabric is not blown up
    // Row labels on the left, pod names above their block.
    for (const row of core.rows) svg.append(s('text', {x: 4, y: row.y + 4, class: 'tier', text: row.tier}));
    const labelled = new Set();
    for (const p of podsInfo) {
      if (p.pod) {
        svg.append(s('rect', {x: p.x - 10, y: yTop - 16, width: p.w + 20, height: maxY - yTop + 12, rx: 10,
          fill: '#f8fafc', stroke: '#e4e7ec'}));
        svg.append(s('text', {x: p.x - 2, y: yTop - 2, class: 'podname', text: p.pod}));
      }
      for (const r of p.rows) {
        if (labelled.has(r.tier + r.y)) continue;
        labelled.add(r.tier + r.y);
        svg.append(s('text', {x: 4, y: r.y + 4, class: 'tier', text: r.tier}));
      }
    }
    drawLines(svg, collectLines((id) => boxes.get(id)));
    for (const row of core.rows) for (const it of row.items) {
      if (it.node) switchBox(svg, it.box, it.node);
      else groupBox(svg, it.box, it.members, it.group);
    }
    for (const n of drawList) switchBox(svg, boxes.get(n.id), n);
    for (const p of podsInfo) for (const g of p.groups) hostBox(svg, g.box, g);
    host.append(svg);
  }

  // A large fabric: one block per pod with its counts and what concerns it.
  function renderOverview(host) {
    const T = S.topo;
    const n = T.pods.length;
    const perRow = Math.min(n, 8);
    const W = 124, GAP = 14, LEFT = 70;
    const width = LEFT + perRow * (W + GAP);
    const core = coreRows(width - LEFT, 30);
    const boxes = new Map();
    for (const row of core.rows) for (const it of row.items) {
      it.box.x += LEFT;
      if (it.node) boxes.set(it.node.id, it.box);
      else for (const m of it.members) boxes.set(m.id, it.box);
    }
    const yTop = (core.rows.length ? core.y : 30) + 40;
    const PH = 150;
    const pods = T.pods.map((pod, i) => {
      const box = {id: 'pod:' + pod, x: LEFT + (i % perRow) * (W + GAP) + W / 2, y: yTop + Math.floor(i / perRow) * (PH + 40) + PH / 2, w: W, h: PH};
      const sws = T.switches.filter((x) => x.pod === pod);
      for (const x of sws) if (x.lvl >= 2) boxes.set(x.id, box);
      return {pod, box, sws};
    });
    const height = yTop + Math.ceil(n / perRow) * (PH + 40);
    const svg = s('svg', {viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'fabric overview'});
    for (const row of core.rows) svg.append(s('text', {x: 4, y: row.y + 4, class: 'tier', text: row.tier}));
    svg.append(s('text', {x: 4, y: yTop - PH / 2 + 10, class: 'tier', text: 'pods'}));
    drawLines(svg, collectLines((id) => boxes.get(id)));
    for (const row of core.rows) for (const it of row.items) {
      if (it.node) switchBox(svg, it.box, it.node);
      else groupBox(svg, it.box, it.members, it.group);
    }
    const cut = new Set(S.assessment?.fabric?.hosts_cut_off || []);
    for (const p of pods) {
      const {box} = p;
      const count = (lvl) => p.sws.filter((x) => x.lvl === lvl).length;
      const hostsOf = T.groups.filter((g) => g.pod === p.pod);
      const nHosts = hostsOf.reduce((a, g) => a + g.hosts.length, 0);
      const gpus = hostsOf.reduce((a, g) => a + g.gpus, 0);
      const drained = p.sws.filter((x) => S.activeSwitches.has(x.id)).length;
      const whatif = p.sws.filter((x) => switchState(x.id).whatif).length;
      const jobHosts = S.highlight ? hostsOf.reduce((a, g) => a + g.hosts.filter((id) => S.highlight.hosts.has(id)).length, 0) : 0;
      const nCut = hostsOf.reduce((a, g) => a + g.hosts.filter((id) => cut.has(id)).length, 0);
      const g = s('g', {class: 'pod', 'data-pod': p.pod});
      const stroke = drained ? 'var(--drain)' : whatif ? 'var(--whatif)' : jobHosts ? 'var(--job)' : '#98a2b3';
      g.append(s('rect', {class: 'box', x: box.x - W / 2, y: box.y - PH / 2, width: W, height: PH, rx: 8, fill: '#fff', stroke,
        'stroke-width': drained || whatif || jobHosts ? 3 : 1.2}));
      const lines = [
        [p.pod, 'podname'],
        [`${count(2)} spines`, ''],
        [`${count(1)} leaves`, ''],
        [`${fmtNum(nHosts)} hosts`, ''],
        [`${fmtNum(gpus)} GPUs`, ''],
      ];
      if (drained) lines.push([`${drained} drained`, 'big']);
      if (whatif) lines.push([`${whatif} in the what-if`, 'big']);
      if (nCut) lines.push([`${nCut} hosts cut off`, 'big']);
      if (jobHosts) lines.push([`${jobHosts} hosts of ${S.highlight.id}`, '']);
      lines.forEach(([text, cls], i) => g.append(s('text', {x: box.x, y: box.y - PH / 2 + 20 + i * 16, 'text-anchor': 'middle', class: cls, text})));
      addTooltip(g, `${p.pod}: click to see its spines and leaves`);
      g.addEventListener('click', () => { S.zoomPod = p.pod; $('#tooltip').hidden = true; renderFabric(); });
      svg.append(g);
    }
    host.append(svg);
  }

  function renderLegend() {
    const L = $('#legend');
    const key = (cls, text) => h('span', {}, h('i', {class: cls}), text);
    L.replaceChildren(
      key('sw-key k-switch', 'switch'), key('sw-key k-whatif', 'drained in the what-if'), key('sw-key k-drain', 'active drain'),
      key('sw-key k-job', 'carries the highlighted job'), key('sw-key k-host', 'hosts (count)'),
      key('ln-key k-cool', 'link load < 70%'), key('ln-key k-warm', '70–90%'), key('ln-key k-hot', '≥ 90%'),
      key('ln-key k-degraded', 'degraded link'));
    if (S.assessment) L.append(h('span', {text: 'link colours: utilisation after the drain (flow level)'}));
  }

  // ---------------------------------------------------------------- job highlight
  async function highlightJob(id) {
    S.highlight = null;
    $('#job-info').textContent = '';
    if (!id) { renderFabric(); return; }
    const job = S.jobById.get(id);
    const T = S.topo;
    const hl = {id, switches: new Set(), links: new Set(), hosts: new Set(job ? job.hosts : []), how: ''};
    let paths = null;
    if (S.pathsConfigured) {
      try {
        paths = await api.call('GET', `/v1/jobs/${encodeURIComponent(id)}/paths`);
      } catch (err) {
        if (err.status !== 404) throw err;
        if (/not configured/.test(err.message)) S.pathsConfigured = false;
      }
    }
    if (paths) {
      for (const l of paths.links || []) {
        const key = keyOfLink(l);
        if (!key) continue;
        hl.links.add(key);
        for (const end of key.split('|')) if (T.nodes.get(end)?.kind === 'switch') hl.switches.add(end);
      }
      for (const sw of paths.switches || []) hl.switches.add(typeof sw === 'string' ? sw : sw.id);
      hl.how = 'the links its traffic takes, from the daemon\'s path inspection';
    } else {
      // No path telemetry: the job's leaves and the ECMP paths between its
      // hosts, from the topology (up to the tier its hosts' spread needs).
      const leaves = new Set(), groups = new Set(), pods = new Set();
      for (const hid of hl.hosts) {
        const hn = T.nodes.get(hid);
        if (!hn) continue;
        for (const sw of hn.adj) { leaves.add(sw); hl.links.add(linkKey(hid, sw)); }
        if (hn.group) groups.add(hn.group.id);
        pods.add(hn.pod);
      }
      for (const l of leaves) hl.switches.add(l);
      let frontier = leaves;
      const climb = groups.size > 1 ? (pods.size > 1 ? 2 : 1) : 0;
      for (let step = 0; step < climb; step++) {
        const next = new Set();
        for (const id of frontier) {
          const n = T.nodes.get(id);
          for (const up of n.adj) {
            const u = T.nodes.get(up);
            if (u.kind === 'switch' && u.lvl > n.lvl) { next.add(up); hl.links.add(linkKey(id, up)); }
          }
        }
        for (const x of next) hl.switches.add(x);
        frontier = next;
      }
      hl.how = climb === 0 ? 'its hosts share leaves: traffic stays on them'
        : `its hosts' leaves and the ECMP paths between them, from the topology (no path telemetry configured)`;
    }
    S.highlight = hl;
    const aj = S.assessment?.jobs?.find((j) => j.id === id);
    const info = $('#job-info');
    info.replaceChildren(h('b', {text: id}), job ? ` ${job.name || ''} · ${plural(job.hosts.length, 'host')} · priority ${job.priority ?? 0}` : '',
      ` — highlighted: ${plural(hl.switches.size, 'switch', 'switches')} (${hl.how}).`);
    if (aj) info.append(` In this what-if it crosses ${(aj.crossing?.switches || []).join(', ') || 'no drained switch'}.`);
    if (S.zoomPod !== null) {
      const hostPods = new Set([...hl.hosts].map((x) => T.nodes.get(x)?.pod));
      if (!hostPods.has(S.zoomPod) && hostPods.size) S.zoomPod = [...hostPods][0];
    }
    renderFabric();
  }

  // ---------------------------------------------------------------- what-if
  function toggleSwitch(id) {
    const i = S.selSwitches.indexOf(id);
    if (i >= 0) S.selSwitches.splice(i, 1); else S.selSwitches.push(id);
    renderChips();
    renderFabric();
  }

  // What the result area shows before any assessment: how to ask, and how
  // to read the answer.
  function showGuide() {
    const example = S.topo && S.topo.nodes.has('p0-leaf3-r0') ? ' (on the demo, try p0-leaf3-r0, then p0-spine1)' : '';
    $('#result').replaceChildren(h('div', {class: 'card guide'},
      h('h2', {text: 'How to ask'}),
      h('ol', {},
        h('li', {text: `Click the switches you want to take down in the fabric above, or type their names${example}.`}),
        h('li', {text: 'Press "Assess drain". The jobs running now are simulated on the fabric without those switches, at job and flow level.'}),
        h('li', {text: 'Read the verdict: ALLOW (go ahead), WARN (allowed, read why), DENY (the policy forbids it now). Below it: why, what the advisor proposes to make it safe, which jobs slow down or lose connectivity and because of which links.'}),
        h('li', {text: 'Copy the link of the assessment into your change ticket: it reopens the same answer.'}))));
  }

  function renderChips() {
    const box = $('#chips');
    box.replaceChildren();
    const chip = (text, remove) => h('span', {class: 'chip'}, text, h('button', {type: 'button', title: 'remove', 'aria-label': 'remove ' + text, onclick: remove, text: '×'}));
    for (const id of S.selSwitches) box.append(chip(id, () => toggleSwitch(id)));
    S.selLinks.forEach((l, i) => box.append(chip(`${l.a} – ${l.b}`, () => { S.selLinks.splice(i, 1); renderChips(); renderFabric(); })));
    if (!box.children.length) box.append(h('span', {class: 'muted', text: 'Click switches in the fabric, or type a name.'}));
    $('#run').disabled = !S.selSwitches.length && !S.selLinks.length;
  }

  function addTypedSwitch(input, list, after) {
    const name = input.value.trim();
    if (!name) return;
    const n = S.topo?.nodes.get(name);
    if (!n || n.kind !== 'switch') { showError(new Error(`no switch named '${name}' in the topology`)); return; }
    showError(null);
    if (!list.includes(name)) list.push(name);
    input.value = '';
    after();
  }

  async function runAssessment() {
    if (!S.selSwitches.length && !S.selLinks.length) return;
    const body = {drain: {switches: [...S.selSwitches], links: S.selLinks.map((l) => ({a: l.a, b: l.b}))}, modes: ['job', 'flow']};
    const ticket = $('#ticket').value.trim();
    if (ticket) body.ticket = ticket;
    const btn = $('#run');
    btn.disabled = true;
    btn.textContent = 'Assessing…';
    $('#result').replaceChildren(h('div', {class: 'card spinner', text: 'Simulating the drain at job and flow level…'}));
    try {
      const a = await api.call('POST', '/v1/assessments', body);
      showError(null);
      S.shownId = a.id;
      location.hash = '#/assessments/' + encodeURIComponent(a.id);
      showAssessment(a);
    } catch (err) {
      showGuide();
      showError(err);
    } finally {
      btn.textContent = 'Assess drain (job + flow)';
      btn.disabled = false;
    }
  }

  async function loadAssessment(id) {
    if (S.assessment && S.assessment.id === id) return;
    $('#result').replaceChildren(h('div', {class: 'card spinner', text: `Loading assessment ${id}…`}));
    try {
      const a = await api.call('GET', '/v1/assessments/' + encodeURIComponent(id));
      if (a.kind === 'plan') { location.hash = '#/plans/' + encodeURIComponent(id); return; }
      S.selSwitches = [...(a.drain?.switches || a.request?.drain?.switches || [])];
      S.selLinks = (a.drain?.links || a.request?.drain?.links || []).map((l) => ({a: l.a, b: l.b}));
      if (a.ticket) $('#ticket').value = a.ticket;
      renderChips();
      showAssessment(a);
    } catch (err) {
      $('#result').replaceChildren();
      showError(err);
    }
  }

  const VERDICT_TEXT = {
    allow: 'Safe to drain: no policy rule objects.',
    warn: 'Allowed, with warnings: read the reasons before you go ahead.',
    deny: 'Do not drain now: the policy forbids it. See below what would make it safe.',
  };

  function describeImpact(sum) {
    if (!sum) return '';
    const parts = [`${sum.jobs_affected} of ${sum.jobs_total} jobs affected (${fmtNum(sum.gpus_affected)} GPUs)`];
    if (sum.jobs_disconnected) parts.push(`${sum.jobs_disconnected} ${sum.jobs_disconnected === 1 ? 'loses' : 'lose'} connectivity`);
    if (sum.max_slowdown_pct !== null && sum.max_slowdown_pct !== undefined) parts.push(`worst slowdown ${fmtNum(sum.max_slowdown_pct, 2)}%`);
    return parts.join(' · ');
  }

  function predictedText(p) {
    if (!p) return '';
    const bits = [`${p.jobs_affected} affected`, `${p.jobs_disconnected} disconnected`];
    if (p.max_slowdown_pct !== undefined && p.max_slowdown_pct !== null) bits.push(`worst slowdown ${fmtNum(p.max_slowdown_pct, 2)}%`);
    return bits.join(', ');
  }

  function utilBar(u, color) {
    return h('span', {class: 'bar', title: fmtPct(u)}, h('i', {style: {width: Math.min(100, 100 * (u || 0)) + '%', background: color}}));
  }
  const utilColor = (u) => (u >= 0.9 ? 'var(--deny)' : u >= 0.7 ? 'var(--warn)' : '#22c55e');

  function recommendationView(r, i, fixSet) {
    let what, detail = [];
    if (r.kind === 'migrate') {
      what = r.summary || `move ${r.job} to other hosts`;
      detail.push(`from ${(r.from_hosts || []).join(', ')} to ${(r.to_hosts || []).join(', ')}`);
      if (r.cost_gpu_hours !== undefined) detail.push(`cost ${fmtNum(r.cost_gpu_hours, 1)} GPU-hours (checkpoint restart, ${fmtNum(r.cost_s)} s)`);
      if (r.rules_fixed?.length) detail.push(`fixes ${r.rules_fixed.join(', ')}`);
    } else if (r.kind === 'wait') {
      what = r.summary || `wait until ${r.until}`;
      if (r.waiting_for?.length) detail.push(`until ${r.waiting_for.join(', ')} ${r.waiting_for.length === 1 ? 'ends' : 'end'} (${r.until})`);
    } else {
      const sw = r.drain?.switches || [];
      what = r.summary || `drain ${sw.join(', ')} instead`;
    }
    const inFix = fixSet.has(i);
    const el = h('div', {class: 'rec' + (inFix ? ' in-fix' : ''), 'data-kind': r.kind},
      h('div', {class: 'head'}, h('span', {class: 'badge kind', text: r.kind}), h('b', {text: what}),
        h('span', {class: 'arrow', text: '→ predicted'}), badge(r.predicted?.verdict),
        h('span', {class: 'muted', text: predictedText(r.predicted)}),
        inFix ? h('span', {class: 'badge fix', text: 'part of the fix'}) : null),
      detail.length ? h('div', {class: 'detail', text: detail.join(' · ')}) : null);
    if (r.kind === 'alternative' && r.drain) {
      el.querySelector('.head').append(h('button', {type: 'button', class: 'small', text: 'assess this instead', onclick: () => {
        S.selSwitches = [...(r.drain.switches || [])];
        S.selLinks = (r.drain.links || []).map((l) => ({a: l.a, b: l.b}));
        renderChips();
        runAssessment();
      }}));
    }
    return el;
  }

  function showAssessment(a) {
    a.hotByKey = new Map();
    for (const l of a.links || []) {
      const key = parseLinkName(l.link);
      if (!key) continue;
      const prev = a.hotByKey.get(key);
      if (!prev || l.utilisation_after > prev.after) a.hotByKey.set(key, {after: l.utilisation_after, before: l.utilisation_before});
    }
    S.assessment = a;
    const drainText = [...(a.drain?.switches || []), ...(a.drain?.links || []).map((l) => `${l.a}–${l.b}`)].join(', ');
    const shareUrl = `${location.origin}/#/assessments/${encodeURIComponent(a.id)}`;
    const copyBtn = h('button', {type: 'button', class: 'small', text: 'copy link'});
    copyBtn.addEventListener('click', async () => {
      try { await navigator.clipboard.writeText(shareUrl); copyBtn.textContent = 'copied'; } catch (e) { shareInput.select(); }
    });
    const shareInput = h('input', {readonly: true, value: shareUrl, 'aria-label': 'link to this assessment', onfocus: (ev) => ev.target.select()});
    const verdict = h('div', {class: 'verdict ' + verdictClass(a.verdict), id: 'verdict', 'data-verdict': a.verdict},
      h('div', {class: 'word', text: a.verdict}),
      h('div', {class: 'what'}, h('div', {}, 'Draining ', h('b', {text: drainText})), h('div', {text: VERDICT_TEXT[a.verdict] || ''}),
        h('div', {class: 'muted', text: describeImpact(a.summary)})),
      h('div', {class: 'meta'},
        h('div', {}, 'assessment ', h('a', {href: '#/assessments/' + encodeURIComponent(a.id), text: a.id})),
        h('div', {text: `${a.ticket ? 'ticket ' + a.ticket + ' · ' : ''}${a.created_at || ''} · topology v${a.topology_version}, jobs v${a.jobs_version}`}),
        h('div', {class: 'share'}, shareInput, copyBtn)));

    // Reasons, worst first, the same message once.
    const order = {deny: 0, warn: 1, allow: 2};
    const seen = new Set();
    const reasons = [...(a.reasons || [])].sort((x, y) => (order[x.action] ?? 3) - (order[y.action] ?? 3))
      .filter((r) => { const k = r.action + r.message; if (seen.has(k)) return false; seen.add(k); return true; });
    const reasonsCard = h('div', {class: 'card'}, h('h2', {text: 'Why'}),
      reasons.length ? h('ul', {class: 'reasons'}, reasons.map((r) => h('li', {}, badge(r.action), h('span', {text: r.message}), h('span', {class: 'rule', text: r.rule}))))
        : h('div', {class: 'muted', text: 'No policy rule objects to this drain.'}),
      (a.unchecked || []).length ? h('div', {class: 'hint muted', text: 'Not checked: ' + [...new Set(a.unchecked.map((u) => u.message))].join('; ')}) : null,
      (a.notes || []).length ? h('div', {class: 'hint muted', text: 'Notes: ' + a.notes.join('; ')}) : null);

    // What would make it safe: allow_after is a set of recommendations.
    const recs = a.recommendations || [];
    const fixSet = new Set(a.allow_after || []);
    const recCard = h('div', {class: 'card', id: 'recommendations'}, h('h2', {text: 'What the advisor proposes'}));
    if (fixSet.size) {
      const p = a.allow_after_predicted || {};
      recCard.append(h('div', {class: 'fix-box'}, h('b', {text: `Apply ${[...fixSet].map((i) => '#' + (i + 1)).join(' + ')} and the drain becomes `}),
        badge(p.verdict || 'allow'), h('span', {class: 'muted', text: ' ' + predictedText(p)})));
    } else if (a.verdict !== 'allow' && recs.length === 0) {
      recCard.append(h('div', {class: 'fix-box none', text: 'No migration, wait or alternative makes this drain allowed.'}));
    }
    recs.forEach((r, i) => recCard.append(h('div', {class: 'muted hint', text: '#' + (i + 1)}), recommendationView(r, i, fixSet)));
    if (!recs.length && a.verdict === 'allow') recCard.append(h('div', {class: 'muted', text: 'Nothing to do: the drain is allowed as it is.'}));

    // Affected jobs, worst first (the API's order).
    const jobs = a.jobs || [];
    const jobRows = jobs.map((j) => {
      const cause = [];
      if (!j.connected) cause.push(h('div', {class: 'cut', text: `cut off: ${j.host_pairs_cut || ''} host pair(s) lose every path`}));
      for (const b of (j.bottlenecks || []).slice(0, 2)) {
        cause.push(h('div', {}, 'bottleneck ', h('span', {class: 'mono', text: b.link}), ` at ${fmtPct(b.utilisation)}`,
          b.shared_with?.length ? `, shared with ${b.shared_with.join(', ')}` : ', not shared'));
      }
      if ((j.bottlenecks || []).length > 2) cause.push(h('div', {class: 'muted', text: `+ ${j.bottlenecks.length - 2} more bottleneck links`}));
      if (j.crossing?.switches?.length) cause.push(h('div', {class: 'muted', text: `crosses ${j.crossing.switches.join(', ')}`}));
      const slow = j.connected ? (j.slowdown_pct === null || j.slowdown_pct === undefined ? '—' : fmtNum(j.slowdown_pct, 2) + '%') : 'no path';
      const cls = !j.connected ? 'bad' : (j.slowdown_pct || 0) >= 5 ? 'meh' : 'ok';
      const row = h('tr', {class: 'clickable ' + cls, 'data-job': j.id, title: 'highlight this job in the fabric'},
        h('td', {}, h('b', {text: j.id}), h('div', {class: 'muted', text: `${j.name || ''}${j.tenant ? ' · ' + j.tenant : ''}`})),
        h('td', {class: 'num', text: j.priority ?? 0}),
        h('td', {class: 'num', text: fmtNum(j.gpus)}),
        h('td', {class: 'num'}, j.connected ? h('span', {text: 'yes'}) : h('span', {class: 'cut', text: 'NO'})),
        h('td', {class: 'num', text: `${fmtPct(j.path_fraction)} (${fmtNum(j.min_paths_after)} min)`}),
        h('td', {class: 'num', text: fmtPct(j.bandwidth_fraction)}),
        h('td', {class: 'num'}, h('b', {text: slow})),
        h('td', {class: 'cause'}, cause));
      row.addEventListener('click', () => { $('#job-select').value = j.id; highlightJob(j.id).catch(showError); window.scrollTo({top: 0, behavior: 'smooth'}); });
      return row;
    });
    const jobsCard = h('div', {class: 'card full', id: 'affected-jobs'}, h('h2', {text: `Affected jobs (${jobs.length}), worst first`}),
      jobs.length ? h('table', {},
        h('thead', {}, h('tr', {}, ['job', 'prio', 'GPUs', 'connected', 'paths kept', 'bandwidth kept', 'slowdown', 'cause']
          .map((t, i) => h('th', {class: i >= 1 && i <= 6 ? 'num' : '', text: t})))),
        h('tbody', {}, jobRows))
        : h('div', {class: 'muted', text: 'No job uses what this drain takes down.'}));

    const hot = a.links || [];
    const linksCard = h('div', {class: 'card full', id: 'hot-links'}, h('h2', {text: `Busiest links after the drain (${hot.length})`}),
      hot.length ? h('table', {},
        h('thead', {}, h('tr', {}, h('th', {text: 'link'}), h('th', {text: 'before'}), h('th', {text: 'after'}), h('th', {class: 'num', text: 'load after'}), h('th', {text: 'jobs'}))),
        h('tbody', {}, hot.slice(0, 20).map((l) => h('tr', {},
          h('td', {class: 'mono', text: l.link}),
          h('td', {}, utilBar(l.utilisation_before, utilColor(l.utilisation_before)), ' ', fmtPct(l.utilisation_before)),
          h('td', {}, utilBar(l.utilisation_after, utilColor(l.utilisation_after)), ' ', h('b', {text: fmtPct(l.utilisation_after)})),
          h('td', {class: 'num', text: l.load_gbps_after !== undefined ? fmtNum(l.load_gbps_after, 1) + ' Gb/s' : '—'}),
          h('td', {text: (l.jobs || []).join(', ')})))))
        : h('div', {class: 'muted', text: 'No link gets hot (or the flow-level simulation did not run).'}),
      hot.length > 20 ? h('div', {class: 'muted hint', text: `… and ${hot.length - 20} more`}) : null);

    const f = a.fabric || {};
    const fabricCard = h('div', {class: 'card full'}, h('h2', {text: 'Fabric impact'}),
      h('div', {}, `${plural(f.switches_drained || 0, 'switch', 'switches')} and ${plural(f.links_down || 0, 'link')} down; `,
        `${plural((f.hosts_cut_off || []).length, 'host')} cut off${(f.hosts_cut_off || []).length ? ' (' + f.hosts_cut_off.slice(0, 8).join(', ') + ')' : ''}, `,
        `${plural((f.hosts_degraded || []).length, 'host')} lose some uplinks.`),
      (f.capacity || []).length ? h('div', {class: 'hint muted', text: 'Capacity removed: ' + f.capacity.map((c) => `${c.pod || 'core'} ${c.tier} ${fmtNum(c.removed_pct, 1)}%`).join(' · ')}) : null);

    $('#result').replaceChildren(verdict, h('div', {class: 'result-grid'}, reasonsCard, recCard, jobsCard, linksCard, fabricCard));
    // Zoom to where the drain is on a large fabric.
    if (S.topo && S.topo.switches.length > DETAIL_LIMIT) {
      const first = S.topo.nodes.get((a.drain?.switches || [])[0]);
      if (first && first.pod) S.zoomPod = first.pod;
    }
    renderFabric();
  }

  // ---------------------------------------------------------------- candidates
  async function runCandidates() {
    const tier = $('#cand-tier').value;
    const out = $('#candidates');
    out.replaceChildren(h('div', {class: 'spinner', text: `Assessing every ${tier} drain…`}));
    try {
      const c = await api.call('GET', '/v1/drain-candidates?tier=' + encodeURIComponent(tier));
      showError(null);
      const list = c.candidates || [];
      if (!list.length) { out.replaceChildren(h('div', {class: 'empty', text: `No ${tier} switch in the topology.`})); return; }
      out.replaceChildren(h('table', {id: 'candidate-table'},
        h('thead', {}, h('tr', {}, ['#', 'switch', 'pod', 'jobs affected', 'GPUs affected', 'jobs cut off', 'hosts cut off', 'worst paths kept', 'worst bandwidth kept', 'min paths after', '']
          .map((t, i) => h('th', {class: i >= 3 && i <= 9 ? 'num' : '', text: t})))),
        h('tbody', {}, list.map((x) => {
          const cls = x.jobs_disconnected || x.hosts_cut_off ? 'bad' : x.jobs_affected ? 'meh' : 'ok';
          const open = () => { S.selSwitches = [x.switch]; S.selLinks = []; location.hash = '#/'; renderChips(); runAssessment(); };
          const row = h('tr', {class: 'clickable ' + cls, 'data-switch': x.switch, title: 'open the full what-if of this drain'},
            h('td', {class: 'num', text: x.rank}), h('td', {}, h('b', {text: x.switch})), h('td', {text: x.pod || '—'}),
            h('td', {class: 'num', text: fmtNum(x.jobs_affected)}), h('td', {class: 'num', text: fmtNum(x.gpus_affected)}),
            h('td', {class: 'num' + (x.jobs_disconnected ? ' cut' : ''), text: fmtNum(x.jobs_disconnected)}),
            h('td', {class: 'num' + (x.hosts_cut_off ? ' cut' : ''), text: fmtNum(x.hosts_cut_off)}),
            h('td', {class: 'num', text: fmtPct(x.worst_path_fraction)}), h('td', {class: 'num', text: fmtPct(x.worst_bandwidth_fraction)}),
            h('td', {class: 'num', text: fmtNum(x.min_paths_after)}),
            h('td', {}, h('button', {type: 'button', class: 'small', text: 'what-if →'})));
          row.addEventListener('click', open);
          return row;
        }))),
      h('div', {class: 'hint muted', text: `${list.length} ${tier} switches ranked in ${fmtNum(c.timings_ms?.total, 1)} ms on topology v${c.topology_version}, jobs v${c.jobs_version}. Green: no job affected; amber: jobs slowed or lose paths; red: jobs or hosts cut off.`}));
    } catch (err) {
      out.replaceChildren();
      showError(err);
    }
  }

  // ---------------------------------------------------------------- plans
  function renderPlanChips() {
    const box = $('#plan-chips');
    box.replaceChildren();
    for (const id of S.planSwitches) {
      box.append(h('span', {class: 'chip'}, id, h('button', {type: 'button', text: '×', 'aria-label': 'remove ' + id, onclick: () => {
        S.planSwitches = S.planSwitches.filter((x) => x !== id); renderPlanChips();
      }})));
    }
    if (!S.planSwitches.length) box.append(h('span', {class: 'muted', text: 'The switches of the maintenance, in any order.'}));
    $('#plan-run').disabled = !S.planSwitches.length;
  }

  function fillPlanGroups() {
    const sel = $('#plan-fill');
    const T = S.topo;
    sel.replaceChildren(h('option', {value: '', text: 'add a group…'}));
    const groups = new Map();
    for (const n of T.switches) {
      const tier = n.tier || 'level ' + n.lvl;
      const key = `every ${tier}${n.pod ? ' of ' + n.pod : ''}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(n.id);
    }
    for (const [k, ids] of [...groups.entries()].sort((x, y) => natural(x[0], y[0]))) {
      if (ids.length <= 64) sel.append(h('option', {value: ids.join(','), text: `${k} (${ids.length})`}));
    }
  }

  async function runPlan() {
    const out = $('#plan');
    out.replaceChildren(h('div', {class: 'spinner', text: 'Ordering the switches into safe batches…'}));
    try {
      const p = await api.call('POST', '/v1/plans', {switches: [...S.planSwitches], modes: ['job', 'flow']});
      showError(null);
      location.hash = '#/plans/' + encodeURIComponent(p.id);
      S.shownPlan = p.id;
      showPlan(p);
    } catch (err) {
      out.replaceChildren();
      showError(err);
    }
  }

  async function loadPlan(id) {
    if (S.shownPlan === id) return;
    try {
      const p = await api.call('GET', '/v1/assessments/' + encodeURIComponent(id));
      S.shownPlan = id;
      S.planSwitches = [...(p.request?.switches || [])];
      renderPlanChips();
      showPlan(p);
    } catch (err) { showError(err); }
  }

  function showPlan(p) {
    const batches = p.batches || [];
    const out = $('#plan');
    out.replaceChildren(h('div', {}, h('div', {class: 'gap'}),
      h('div', {class: 'verdict ' + verdictClass(p.verdict), id: 'plan-verdict'},
        h('div', {class: 'word', text: p.verdict}),
        h('div', {class: 'what'}, h('div', {}, h('b', {text: `${plural(batches.length, 'batch', 'batches')}`}), ` for ${plural((p.request?.switches || []).length, 'switch', 'switches')}`),
          h('div', {text: p.all_allowed ? 'Every batch is allowed (some may need the listed migrations first). Drain them one batch at a time, in this order.'
            : 'At least one batch stays denied even with migrations: see its reasons.'})),
        h('div', {class: 'meta'}, h('div', {}, 'plan ', h('a', {href: '#/plans/' + encodeURIComponent(p.id), text: p.id})),
          h('div', {text: `${p.created_at || ''} · topology v${p.topology_version}, jobs v${p.jobs_version}`}))),
      ...batches.map((b, i) => h('div', {class: 'batch', 'data-batch': i + 1},
        h('div', {class: 'n', text: `batch ${i + 1}`}),
        h('div', {},
          h('div', {class: 'chips'}, (b.switches || []).map((x) => h('span', {class: 'chip', text: x}))),
          (b.migrations || []).length ? h('div', {}, h('div', {class: 'hint', text: 'first:'}), b.migrations.map((m, k) => recommendationView(m, k, new Set()))) : null,
          (b.reasons_without_migrations || []).length ? h('div', {class: 'hint muted', text: 'without the migrations: ' + b.reasons_without_migrations.map((r) => `${r.action}: ${r.message}`).join('; ')}) : null),
        h('div', {}, badge(b.verdict), h('div', {class: 'muted hint', text: predictedText(b.predicted)})))),
      (p.notes || []).length ? h('div', {class: 'hint muted', text: 'Notes: ' + p.notes.join('; ')}) : null));
  }

  // ---------------------------------------------------------------- loading
  async function loadDrains() {
    try {
      const d = await api.call('GET', '/v1/drains');
      S.drains = d.drains || [];
    } catch (err) {
      return;  // keep showing the last known drains; the error bar reports API failures elsewhere
    }
    S.activeSwitches = new Set(S.drains.flatMap((d) => d.drain?.switches || []));
    S.activeLinks = new Set(S.drains.flatMap((d) => (d.drain?.links || []).map((l) => linkKey(l.a, l.b))));
    const box = $('#drains');
    box.replaceChildren();
    if (!S.drains.length) { box.append(h('span', {class: 'muted', text: 'No drain in progress.'})); return; }
    for (const d of S.drains) {
      box.append(h('div', {class: 'hint'}, h('b', {text: [...(d.drain?.switches || []), ...(d.drain?.links || []).map((l) => `${l.a}–${l.b}`)].join(', ')}),
        ` since ${d.started_at}${d.ticket ? ' · ' + d.ticket : ''}${d.expected_end ? ' · until ' + d.expected_end : ''}`));
    }
  }

  async function loadTelemetry() {
    try {
      const t = await api.call('GET', '/v1/links');
      S.telemetry = new Map();
      for (const l of t.links || []) {
        const key = keyOfLink(l);
        if (!key) continue;
        const util = l.utilisation ?? l.utilization ?? null;
        const degraded = l.degraded === true || l.healthy === false || l.oper_up === false;
        if (l.has_rates === false && !degraded) continue;  // seen once: no rate yet
        S.telemetry.set(key, {util, degraded});
      }
    } catch (err) {
      if (err.status !== 404) throw err;  // 404: no telemetry source configured; the page does without
    }
  }

  async function loadAll() {
    const [snaps, topo, jobs] = await Promise.all([
      api.call('GET', '/v1/snapshots'), api.call('GET', '/v1/topology'), api.call('GET', '/v1/jobs')]);
    S.topo = indexTopology(topo);
    S.jobs = (jobs.jobs || []).slice().sort((a, b) => natural(a.id, b.id));
    S.jobById = new Map(S.jobs.map((j) => [j.id, j]));
    const c = snaps.current || {};
    $('#snapshot').textContent = `${topo.name || 'fabric'} · topology v${c.topology_version}, jobs v${c.jobs_version} · ` +
      `${fmtNum(c.switches)} switches · ${fmtNum(c.hosts)} hosts · ${fmtNum(c.gpus)} GPUs · ${fmtNum(c.jobs)} jobs`;
    const names = $('#switch-names');
    names.replaceChildren(...S.topo.switches.slice().sort((a, b) => natural(a.id, b.id)).map((n) => h('option', {value: n.id})));
    const js = $('#job-select');
    js.replaceChildren(h('option', {value: '', text: '(none)'}),
      ...S.jobs.map((j) => h('option', {value: j.id, text: `${j.id}${j.name ? ' ' + j.name : ''} (${j.hosts.length} hosts, prio ${j.priority ?? 0})`})));
    const tiers = $('#cand-tier');
    tiers.replaceChildren(...S.topo.tiers.map((t) => h('option', {value: t, text: t})));
    if (S.topo.tiers.includes('spine')) tiers.value = 'spine';
    fillPlanGroups();
    await Promise.all([loadDrains(), loadTelemetry()]);
  }

  // ---------------------------------------------------------------- routing
  // #/                      fabric and what-if
  // #/assessments/ID        a stored assessment (shareable)
  // #/candidates[?tier=T]   drain candidates
  // #/plan, #/plans/ID      maintenance plans
  function route() {
    const hash = location.hash.replace(/^#/, '') || '/';
    const [path, query] = hash.split('?');
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    let view = 'fabric';
    if (parts[0] === 'candidates') view = 'candidates';
    if (parts[0] === 'plan' || parts[0] === 'plans') view = 'plan';
    for (const v of ['fabric', 'candidates', 'plan']) $('#view-' + v).hidden = v !== view;
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view);
    if (parts[0] === 'assessments' && parts[1]) loadAssessment(parts[1]);
    if (parts[0] === 'plans' && parts[1]) loadPlan(parts[1]);
    if (view === 'candidates') {
      const tier = new URLSearchParams(query || '').get('tier');
      if (tier) $('#cand-tier').value = tier;
      if (!$('#candidate-table')) runCandidates();
    }
  }

  function wire() {
    $('#whatif-form').addEventListener('submit', (ev) => { ev.preventDefault(); runAssessment(); });
    $('#add-switch').addEventListener('click', () => addTypedSwitch($('#switch-input'), S.selSwitches, () => { renderChips(); renderFabric(); }));
    $('#switch-input').addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && ev.target.value.trim()) { ev.preventDefault(); $('#add-switch').click(); }
    });
    $('#add-link').addEventListener('click', () => {
      const a = $('#link-a').value.trim(), b = $('#link-b').value.trim();
      if (!S.topo.links.some((l) => l.key === linkKey(a, b))) { showError(new Error(`no link between '${a}' and '${b}'`)); return; }
      showError(null);
      S.selLinks.push({a, b});
      $('#link-a').value = $('#link-b').value = '';
      renderChips();
      renderFabric();
    });
    $('#clear').addEventListener('click', () => {
      S.selSwitches = []; S.selLinks = []; S.assessment = null; S.shownId = null;
      showGuide();
      if (location.hash.startsWith('#/assessments/')) location.hash = '#/';
      renderChips(); renderFabric();
    });
    $('#job-select').addEventListener('change', (ev) => highlightJob(ev.target.value).catch(showError));
    $('#cand-run').addEventListener('click', runCandidates);
    $('#cand-tier').addEventListener('change', runCandidates);
    $('#plan-form').addEventListener('submit', (ev) => { ev.preventDefault(); runPlan(); });
    $('#plan-add').addEventListener('click', () => addTypedSwitch($('#plan-input'), S.planSwitches, renderPlanChips));
    $('#plan-input').addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && ev.target.value.trim()) { ev.preventDefault(); $('#plan-add').click(); }
    });
    $('#plan-fill').addEventListener('change', (ev) => {
      for (const id of ev.target.value.split(',').filter(Boolean)) if (!S.planSwitches.includes(id)) S.planSwitches.push(id);
      ev.target.value = '';
      renderPlanChips();
    });
    $('#plan-clear').addEventListener('click', () => { S.planSwitches = []; renderPlanChips(); $('#plan').replaceChildren(); });
    window.addEventListener('hashchange', route);
  }

  async function start() {
    wire();
    renderChips();
    renderPlanChips();
    try {
      await loadAll();
      showError(null);
    } catch (err) {
      showError(err);
      return;
    }
    renderFabric();
    showGuide();
    route();
    document.body.dataset.ready = 'true';  // for the browser test and screenshots
    // Drains start and end while the page is open: keep the picture current.
    setInterval(async () => {
      if (document.hidden) return;
      const before = [...S.activeSwitches, ...S.activeLinks].join();
      await loadDrains();
      if ([...S.activeSwitches, ...S.activeLinks].join() !== before) renderFabric();
    }, 30000);
  }

  start();
})();
