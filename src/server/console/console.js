// drainwise operator console, the entry module. Plain JS modules, no
// dependencies, no build step: the daemon embeds the files of this folder and
// serves them at /ui/{file}. Everything shown comes from the public REST API
// (docs/openapi.yaml) with the user's bearer token, so the page can do exactly
// what the token's role allows. This module loads the data, routes the
// location hash to the views and wires the page's controls.
import {$, h, fmtNum, natural, linkKey} from './dom.js';
import {S} from './state.js';
import {indexTopology, keyOfLink} from './topology.js';
import {api, showError} from './api.js';
import {renderFabric} from './fabric.js';
import {highlightJob} from './highlight.js';
import {showGuide, renderChips, addTypedSwitch, runAssessment, loadAssessment} from './whatif.js';
import {runCandidates} from './candidates.js';
import {renderPlanChips, fillPlanGroups, runPlan, loadPlan} from './plans.js';
import {runTask, loadTask, stopTaskPolling} from './task.js';
import {runCampaign, loadCampaign} from './campaign.js';
import {loadHealth, loadAtRisk} from './health.js';

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
  await Promise.all([loadDrains(), loadTelemetry(), loadHealth()]);
}

// #/                      fabric and what-if
// #/assessments/ID        a stored assessment (shareable)
// #/candidates[?tier=T]   drain candidates
// #/plan, #/plans/ID      maintenance plans
// #/task, #/task/ID       task-level simulation (a background run)
// #/campaigns/ID          a stored campaign (in the plan view)
function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query] = hash.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  let view = 'fabric';
  if (parts[0] === 'candidates') view = 'candidates';
  if (parts[0] === 'plan' || parts[0] === 'plans' || parts[0] === 'campaigns') view = 'plan';
  if (parts[0] === 'task') view = 'task';
  for (const v of ['fabric', 'candidates', 'plan', 'task']) $('#view-' + v).hidden = v !== view;
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view);
  if (parts[0] === 'assessments' && parts[1]) loadAssessment(parts[1]);
  if (parts[0] === 'plans' && parts[1]) loadPlan(parts[1]);
  if (parts[0] === 'campaigns' && parts[1]) loadCampaign(parts[1]);
  stopTaskPolling();
  if (parts[0] === 'task' && parts[1]) loadTask(parts[1]);
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
  $('#task-run').addEventListener('click', runTask);
  $('#campaign-run').addEventListener('click', runCampaign);
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
  await loadAtRisk();
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
