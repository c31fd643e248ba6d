// The fabric picture (inline SVG): switches, host groups and the links between
// them, coloured by active drains, the what-if, the highlighted job and link
// utilisation; a large fabric is drawn as one block per pod until one is
// zoomed into.
import {$, h, s, fmtPct, fmtNum, plural, natural, linkKey, addTooltip} from './dom.js';
import {S} from './state.js';
import {worseHealth} from './health.js';
import {toggleSwitch} from './whatif.js';

// What is drawn is a list of boxes (a switch, a group of switches, a pod, a
// host group) and lines between them. Each topology node maps to at most one
// box (visOf); a topology link between two boxes becomes one line per pair,
// carrying the worst state of the links it stands for.
export const DETAIL_LIMIT = 200;     // switches drawn one by one up to this many
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

export function renderFabric() {
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


function lineStyle(state) {
  // state: {util, degraded, drained, active, job, count}
  if (state.active) return {stroke: 'var(--drain)', width: 2.5, dash: '5 3', opacity: 0.9};
  if (state.drained) return {stroke: 'var(--whatif)', width: 2, dash: '4 3', opacity: 0.9};
  if (state.health === 'critical') return {stroke: 'var(--deny)', width: 3, dash: '2 2', opacity: 1};
  if (state.health === 'warning') return {stroke: 'var(--warn)', width: 2.5, dash: '2 2', opacity: 1};
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
    const hl = S.health.get(l.key);
    if (hl && hl.severity !== 'none') { st.health = worseHealth(st.health, hl.severity); st.healthNote = `${l.a} – ${l.b}: ${hl.severity} (risk ${Math.round(hl.score)})`; }
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
      'stroke-dasharray': style.dash, 'data-link': [...st.names][0], 'data-health': st.health,
    });
    const interesting = st.active || st.drained || st.degraded || st.util !== undefined || st.job || st.health;
    if (interesting) {
      ln.style.pointerEvents = 'stroke';
      addTooltip(ln, () => [...st.names].join('\n') + (st.count > st.names.size ? `\n… ${st.count} links` : '') +
        (st.util !== undefined ? `\nutilisation ${fmtPct(st.before)} → ${fmtPct(st.util)}` : '') +
        (st.degraded ? '\ndegraded' : '') + (st.health ? '\nhealth ' + st.healthNote : '') + (st.drained ? '\ngoes down in the what-if' : '') +
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
    key('ln-key k-degraded', 'degraded link'), key('ln-key k-health-warning', 'degrading (trend)'),
    key('ln-key k-health-critical', 'about to fail'));
  if (S.assessment) L.append(h('span', {text: 'link colours: utilisation after the drain (flow level)'}));
}
