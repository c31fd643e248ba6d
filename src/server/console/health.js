// Link health in the console (docs/link-health.md): links coloured by their
// health trend in the fabric picture (GET /v1/links/health), the jobs whose
// paths cross degrading links with the drain what-if (GET /v1/jobs/at-risk),
// and one link's history as a small chart (GET /v1/links/health?link=).
// Without a link_health section the routes answer 404 and the card says so.
import {$, h, s, fmtNum} from './dom.js';
import {S} from './state.js';
import {api, showError} from './api.js';
import {keyOfLink} from './topology.js';

const RANK = {none: 0, info: 1, warning: 2, critical: 3};
export const worseHealth = (a, b) => ((RANK[b] || 0) > (RANK[a] || 0) ? b : a);

export async function loadHealth() {
  S.health = new Map();
  try {
    const r = await api.call('GET', '/v1/links/health?min_severity=info');
    S.healthConfigured = true;
    for (const l of r.links || []) {
      const key = keyOfLink(l);
      if (key) S.health.set(key, l);
    }
  } catch (err) {
    if (err.status !== 404) throw err;
    S.healthConfigured = false;  // link health is not configured: the page does without
  }
}

export async function loadAtRisk() {
  const box = $('#at-risk');
  if (!box) return;
  if (!S.healthConfigured) {
    box.replaceChildren(h('span', {class: 'muted', text: 'Link health is not configured (link_health in the configuration).'}));
    return;
  }
  let r;
  try {
    r = await api.call('GET', '/v1/jobs/at-risk');
  } catch (err) {
    box.replaceChildren(h('span', {class: 'error', text: err.message}));
    return;
  }
  const degrading = [...S.health.values()].filter((l) => RANK[l.severity] >= RANK.warning);
  const rows = [];
  for (const j of r.jobs || []) {
    rows.push(h('li', {class: 'at-risk-job', 'data-job': j.job},
      h('b', {text: j.job}), ` risk ${fmtNum(j.risk_score, 1)}`,
      h('ul', {}, ...j.links.map((l) => {
        const d = l.drain_link || {};
        const keeps = d.job ? ` · drain now: ${d.verdict}, keeps ${fmtNum(100 * (d.job.bandwidth_fraction ?? 1))}% bandwidth` : '';
        return h('li', {class: 'sev-' + (l.health?.severity || 'none')},
          h('a', {text: l.link, 'data-link': l.link, onclick: () => showHistory(l.link).catch(showError)}),
          ` ${l.health?.severity || ''}${keeps}`,
          h('div', {class: 'hint muted', text: l.health?.explanation || ''}));
      }))));
  }
  box.replaceChildren(
    h('div', {class: 'hint', text: `${degrading.length} degrading link(s); ${(r.jobs || []).length} job(s) at risk, worst first.`}),
    rows.length ? h('ul', {class: 'at-risk'}, ...rows) : h('span', {class: 'muted', text: 'No job crosses a degrading link.'}));
}

const W = 320, H = 90, PAD = {l: 44, r: 6, t: 8, b: 16};

// The worst finding's signal of one link over its window, at its worst end.
export async function showHistory(link) {
  const r = await api.call('GET', '/v1/links/health?link=' + encodeURIComponent(link));
  const item = (r.links || [])[0];
  const box = $('#health-chart');
  const signal = item?.findings?.[0]?.signal || 'in_errors';
  const end = item?.worst_end || Object.keys(r.history || {})[0];
  const pts = (r.history?.[end] || {})[signal] || [];
  if (!pts.length) { box.replaceChildren(h('span', {class: 'muted', text: `${link}: no history`})); return; }
  const t0 = pts[0][0], t1 = pts[pts.length - 1][0] || t0 + 1;
  const vs = pts.map((p) => p[1]);
  const lo = Math.min(...vs), hi = Math.max(...vs) || lo + 1;
  const x = (t) => PAD.l + (W - PAD.l - PAD.r) * ((t - t0) / ((t1 - t0) || 1));
  const y = (v) => PAD.t + (H - PAD.t - PAD.b) * (1 - (v - lo) / ((hi - lo) || 1));
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', id: 'health-history', 'data-signal': signal},
    s('text', {x: PAD.l - 4, y: PAD.t + 8, 'text-anchor': 'end', text: fmtNum(hi, 3)}),
    s('text', {x: PAD.l - 4, y: H - PAD.b, 'text-anchor': 'end', text: fmtNum(lo, 3)}),
    s('text', {x: W - PAD.r, y: H - 3, 'text-anchor': 'end', text: `${fmtNum((t1 - t0) / 86400, 1)} days`}),
    s('polyline', {points: pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' '), fill: 'none',
      stroke: item?.severity === 'critical' ? 'var(--deny)' : 'var(--warn)', 'stroke-width': 1.5}));
  box.replaceChildren(h('div', {class: 'hint'}, h('b', {text: link}), ` · ${signal} at ${end}`), svg,
    h('div', {class: 'hint muted', text: item?.findings?.[0]?.explanation || ''}));
}
