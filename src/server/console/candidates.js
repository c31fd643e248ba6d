// Drain candidates: every single-switch drain of a tier, safest first.
import {$, h, fmtPct, fmtNum} from './dom.js';
import {S} from './state.js';
import {api, showError} from './api.js';
import {renderChips, runAssessment} from './whatif.js';

export async function runCandidates() {
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
