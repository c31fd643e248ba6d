// Highlighting one job in the fabric: the links its traffic takes when the
// daemon has path telemetry, else its leaves and the ECMP paths between its
// hosts from the topology.
import {$, h, plural, linkKey} from './dom.js';
import {S} from './state.js';
import {keyOfLink} from './topology.js';
import {api} from './api.js';
import {renderFabric} from './fabric.js';

export async function highlightJob(id) {
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
