// The topology as the console draws it: nodes indexed by id with their level
// and neighbours, leaves gathered into host groups, pods and tiers; and the
// API's link names mapped to undirected link keys.
import {natural, linkKey} from './dom.js';
import {S} from './state.js';

function levelOf(n) {
  if (n.kind === 'host') return 0;
  const t = (n.tier || '').toLowerCase();
  if (t === 'leaf' || t === 'tor') return 1;
  if (t === 'spine') return 2;
  if (t === 'superspine') return 3;
  return n.level || 1;
}

export function indexTopology(doc) {
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

// "a -> b" or "a:port -> b:port" (the API's directed link names) to an
// undirected key of node names.
export function parseLinkName(name) {
  const parts = String(name).split(' -> ');
  if (parts.length !== 2) return null;
  const node = (end) => {
    if (!S.topo || S.topo.nodes.has(end)) return end;
    const colon = end.lastIndexOf(':');
    return colon > 0 && S.topo.nodes.has(end.slice(0, colon)) ? end.slice(0, colon) : end;
  };
  return linkKey(node(parts[0]), node(parts[1]));
}
export const keyOfLink = (l) => (l.a && l.b ? linkKey(l.a, l.b) : l.link ? parseLinkName(l.link) : null);
