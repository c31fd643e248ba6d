// Campaigns: the plan's switches as a timed maintenance schedule
// (POST /v1/campaigns, GET /v1/campaigns/{id}): a timeline of the batches
// with their actions (migrate at t, wait for a job's end) and GPU-hour costs,
// and the comparison with the simple strategies. Drawn only from the answer.
import {$, h, s, fmtNum, badge, addTooltip} from './dom.js';
import {S} from './state.js';
import {api, showError} from './api.js';

export async function runCampaign() {
  const out = $('#campaign');
  out.replaceChildren(h('div', {class: 'spinner', text: 'Scheduling the campaign…'}));
  const maxConcurrent = Math.max(1, Number($('#campaign-concurrent').value) || 1);
  const body = {
    items: S.planSwitches.map((sw) => ({switches: [sw], duration_s: 3600})),
    constraints: {max_concurrent: maxConcurrent},
    objective: $('#campaign-objective').value,
  };
  try {
    const c = await api.call('POST', '/v1/campaigns', body);
    showError(null);
    S.shownCampaign = c.id;
    location.hash = '#/campaigns/' + encodeURIComponent(c.id);
    showCampaign(c);
  } catch (err) {
    out.replaceChildren();
    showError(err);
  }
}

export async function loadCampaign(id) {
  if (S.shownCampaign === id) return;
  try {
    const c = await api.call('GET', '/v1/campaigns/' + encodeURIComponent(id));
    S.shownCampaign = id;
    showCampaign(c);
  } catch (err) { showError(err); }
}

const gh = (x) => `${fmtNum(x, 2)} GPU-h`;
const when = (iso) => (iso || '').replace('T', ' ').replace(/:00Z$/, 'Z');

// The timeline: one row per batch, x = time from the window's start to the
// last batch's end; a bar per batch, a diamond per migration, a line from
// the window's start to each wait's end.
function timeline(c) {
  const batches = c.batches || [];
  const t0 = Date.parse(c.window.start);
  const ends = batches.map((b) => Date.parse(b.end));
  const t1 = Math.max(t0 + 3600e3, ...ends);
  const W = 900, left = 70, right = 20, row = 34, top = 24;
  const H = top + row * Math.max(1, batches.length) + 10;
  const x = (ms) => left + ((ms - t0) / (t1 - t0)) * (W - left - right);
  const svg = s('svg', {id: 'campaign-timeline', viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img',
    'aria-label': 'campaign timeline'});
  for (const bo of c.constraints?.blackouts || []) {
    const a = Math.max(t0, Date.parse(bo.start)), b = Math.min(t1, Date.parse(bo.end));
    if (b > a) svg.append(s('rect', {class: 'blackout', x: x(a), y: top - 6, width: Math.max(1, x(b) - x(a)), height: H - top, fill: '#f2f4f7'}));
  }
  svg.append(s('text', {x: left, y: 14, 'font-size': 11, fill: '#667085'}, when(c.window.start)),
    s('text', {x: W - right, y: 14, 'font-size': 11, fill: '#667085', 'text-anchor': 'end'}, when(new Date(t1).toISOString().replace('.000Z', 'Z'))));
  batches.forEach((b, i) => {
    const y = top + i * row;
    const colour = b.verdict === 'allow' ? 'var(--allow)' : b.verdict === 'warn' ? 'var(--warn)' : 'var(--deny)';
    svg.append(s('text', {x: 4, y: y + 16, 'font-size': 12}, `batch ${b.index}`));
    for (const a of b.actions || []) {
      if (a.kind === 'wait') {
        const line = s('line', {class: 'wait', x1: x(t0), x2: x(Date.parse(a.until)), y1: y + 12, y2: y + 12, stroke: '#98a2b3', 'stroke-dasharray': '4 3'});
        addTooltip(line, `wait for ${a.job} until ${when(a.until)}`);
        svg.append(line);
      }
    }
    const bar = s('rect', {class: 'batch-bar', x: x(Date.parse(b.start)), y: y + 4, width: Math.max(3, x(Date.parse(b.end)) - x(Date.parse(b.start))),
      height: 16, rx: 3, fill: colour, 'data-batch': b.index});
    addTooltip(bar, `batch ${b.index}: ${when(b.start)} → ${when(b.end)}, ${b.verdict}, ${gh(b.gpu_hours.total)}`);
    svg.append(bar);
    for (const a of b.actions || []) {
      if (a.kind !== 'migrate') continue;
      const cx = x(Date.parse(a.at)), cy = y + 12;
      const d = s('path', {class: 'migrate', d: `M${cx} ${cy - 7} L${cx + 6} ${cy} L${cx} ${cy + 7} L${cx - 6} ${cy} Z`, fill: '#344054'});
      addTooltip(d, `migrate ${a.job} at ${when(a.at)}${a.after_checkpoint ? ' (right after a checkpoint)' : ''}: ${gh(a.gpu_hours)}`);
      svg.append(d);
    }
  });
  return svg;
}

function actionText(a) {
  return a.kind === 'migrate'
    ? `migrate ${a.job} at ${when(a.at)}${a.after_checkpoint ? ' (after checkpoint)' : ''} → ${(a.to_hosts || []).length} hosts · ${gh(a.gpu_hours)}`
    : `wait for ${a.job} until ${when(a.until)}`;
}

export function showCampaign(c) {
  const out = $('#campaign');
  const batches = c.batches || [];
  const cmp = c.comparison || [];
  out.replaceChildren(h('div', {},
    h('div', {class: 'gap'}),
    h('div', {class: 'verdict ' + (c.verdict || 'warn'), id: 'campaign-verdict'},
      h('div', {class: 'word', text: c.verdict}),
      h('div', {class: 'what'}, h('div', {}, h('b', {text: `${batches.length} batch${batches.length === 1 ? '' : 'es'}`}),
        ` · ${gh(c.gpu_hours?.total)} · finish ${when(c.finish) || '—'}`),
      h('div', {class: 'muted', text: `objective ${c.objective}, strategy ${c.strategy}, delay priced at ${fmtNum(c.delay_gpu_hours_per_hour, 2)} GPU-h per hour`})),
      h('div', {class: 'meta'}, h('div', {}, 'campaign ', h('a', {href: '#/campaigns/' + encodeURIComponent(c.id), text: c.id})))),
    timeline(c),
    ...batches.map((b) => h('div', {class: 'batch campaign-batch', 'data-batch': b.index},
      h('div', {class: 'n', text: `batch ${b.index}`}),
      h('div', {},
        h('div', {class: 'hint', text: `${when(b.start)} → ${when(b.end)}`}),
        h('div', {class: 'chips'}, (b.drain?.switches || []).map((x) => h('span', {class: 'chip', text: x}))),
        (b.actions || []).map((a) => h('div', {class: 'hint action', 'data-kind': a.kind, text: actionText(a)})),
        b.slurm?.scontrol ? h('div', {class: 'hint muted mono', text: b.slurm.scontrol}) : null),
      h('div', {}, badge(b.verdict), h('div', {class: 'muted hint cost', text: gh(b.gpu_hours.total)})))),
    h('table', {id: 'campaign-comparison', class: 'table'},
      h('thead', {}, h('tr', {}, ['strategy', 'verdict', 'migration', 'interruption', 'slowdown', 'delay', 'total', 'finish'].map((t) => h('th', {text: t})))),
      h('tbody', {}, cmp.map((r) => h('tr', {class: r.chosen ? 'chosen' : '', 'data-strategy': r.strategy},
        h('td', {text: r.strategy + (r.chosen ? ' (chosen)' : '')}), h('td', {}, badge(r.verdict)),
        ['migration', 'interruption', 'slowdown', 'delay', 'total'].map((k) => h('td', {text: fmtNum(r.gpu_hours[k], 2)})),
        h('td', {text: when(r.finish) || '—'}))))),
    (c.notes || []).length ? h('div', {class: 'hint muted', text: 'Notes: ' + c.notes.join('; ')}) : null));
}
