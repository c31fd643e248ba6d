// An assessment's answer on the page: the verdict, why, what the advisor
// proposes, the affected jobs, the busiest links and the fabric impact.
import {$, h, fmtPct, fmtNum, plural, verdictClass, badge} from './dom.js';
import {S} from './state.js';
import {parseLinkName} from './topology.js';
import {showError} from './api.js';
import {DETAIL_LIMIT, renderFabric} from './fabric.js';
import {highlightJob} from './highlight.js';
import {renderChips, runAssessment} from './whatif.js';

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

export function predictedText(p) {
  if (!p) return '';
  const bits = [`${p.jobs_affected} affected`, `${p.jobs_disconnected} disconnected`];
  if (p.max_slowdown_pct !== undefined && p.max_slowdown_pct !== null) bits.push(`worst slowdown ${fmtNum(p.max_slowdown_pct, 2)}%`);
  return bits.join(', ');
}

function utilBar(u, color) {
  return h('span', {class: 'bar', title: fmtPct(u)}, h('i', {style: {width: Math.min(100, 100 * (u || 0)) + '%', background: color}}));
}
const utilColor = (u) => (u >= 0.9 ? 'var(--deny)' : u >= 0.7 ? 'var(--warn)' : '#22c55e');

export function recommendationView(r, i, fixSet) {
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

export function showAssessment(a) {
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
