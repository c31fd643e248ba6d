// Maintenance plans: the switches of a maintenance ordered into batches that
// can go down one after another (POST /v1/plans).
import {$, h, plural, natural, verdictClass, badge} from './dom.js';
import {S} from './state.js';
import {api, showError} from './api.js';
import {predictedText, recommendationView} from './assessment.js';

export function renderPlanChips() {
  const box = $('#plan-chips');
  box.replaceChildren();
  for (const id of S.planSwitches) {
    box.append(h('span', {class: 'chip'}, id, h('button', {type: 'button', text: '×', 'aria-label': 'remove ' + id, onclick: () => {
      S.planSwitches = S.planSwitches.filter((x) => x !== id); renderPlanChips();
    }})));
  }
  if (!S.planSwitches.length) box.append(h('span', {class: 'muted', text: 'The switches of the maintenance, in any order.'}));
  $('#plan-run').disabled = !S.planSwitches.length;
  const campaign = $('#campaign-run');
  if (campaign) campaign.disabled = !S.planSwitches.length;
}

export function fillPlanGroups() {
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

export async function runPlan() {
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

export async function loadPlan(id) {
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
