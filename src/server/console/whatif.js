// The what-if: the switches and links picked for a drain, the assessment of
// that drain (POST /v1/assessments) and reopening a stored one by id.
import {$, h} from './dom.js';
import {S} from './state.js';
import {api, showError} from './api.js';
import {renderFabric} from './fabric.js';
import {showAssessment} from './assessment.js';

export function toggleSwitch(id) {
  const i = S.selSwitches.indexOf(id);
  if (i >= 0) S.selSwitches.splice(i, 1); else S.selSwitches.push(id);
  renderChips();
  renderFabric();
}

// What the result area shows before any assessment: how to ask, and how
// to read the answer.
export function showGuide() {
  const example = S.topo && S.topo.nodes.has('p0-leaf3-r0') ? ' (on the demo, try p0-leaf3-r0, then p0-spine1)' : '';
  $('#result').replaceChildren(h('div', {class: 'card guide'},
    h('h2', {text: 'How to ask'}),
    h('ol', {},
      h('li', {text: `Click the switches you want to take down in the fabric above, or type their names${example}.`}),
      h('li', {text: 'Press "Assess drain". The jobs running now are simulated on the fabric without those switches, at job and flow level.'}),
      h('li', {text: 'Read the verdict: ALLOW (go ahead), WARN (allowed, read why), DENY (the policy forbids it now). Below it: why, what the advisor proposes to make it safe, which jobs slow down or lose connectivity and because of which links.'}),
      h('li', {text: 'Copy the link of the assessment into your change ticket: it reopens the same answer.'}))));
}

export function renderChips() {
  const box = $('#chips');
  box.replaceChildren();
  const chip = (text, remove) => h('span', {class: 'chip'}, text, h('button', {type: 'button', title: 'remove', 'aria-label': 'remove ' + text, onclick: remove, text: '×'}));
  for (const id of S.selSwitches) box.append(chip(id, () => toggleSwitch(id)));
  S.selLinks.forEach((l, i) => box.append(chip(`${l.a} – ${l.b}`, () => { S.selLinks.splice(i, 1); renderChips(); renderFabric(); })));
  if (!box.children.length) box.append(h('span', {class: 'muted', text: 'Click switches in the fabric, or type a name.'}));
  $('#run').disabled = !S.selSwitches.length && !S.selLinks.length;
}

export function addTypedSwitch(input, list, after) {
  const name = input.value.trim();
  if (!name) return;
  const n = S.topo?.nodes.get(name);
  if (!n || n.kind !== 'switch') { showError(new Error(`no switch named '${name}' in the topology`)); return; }
  showError(null);
  if (!list.includes(name)) list.push(name);
  input.value = '';
  after();
}

export async function runAssessment() {
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

export async function loadAssessment(id) {
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
