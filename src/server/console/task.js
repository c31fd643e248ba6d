// Task-level simulation: a horizon of device failures, repairs and jobs, run
// in the background (POST /v1/simulations, mode task), polled until done
// (GET /v1/simulations/{id}), then drawn from its result: availability and
// lost GPU-hours over time, and the totals by cause.
import {$, h, s, fmtPct, fmtNum} from './dom.js';
import {api, showError} from './api.js';

let timer = null;  // the pending poll, if any

export function stopTaskPolling() {
  if (timer) clearTimeout(timer);
  timer = null;
}

export async function runTask() {
  stopTaskPolling();
  const out = $('#task');
  out.replaceChildren(h('div', {class: 'spinner', text: 'Starting the simulation…'}));
  const body = {mode: 'task', horizon: $('#task-horizon').value, seed: Number($('#task-seed').value || 1)};
  try {
    const r = await api.call('POST', '/v1/simulations', body);
    showError(null);
    location.hash = '#/task/' + encodeURIComponent(r.id);  // the route polls it
  } catch (err) {
    out.replaceChildren();
    showError(err);
  }
}

// Polls run `id` every 500 ms while it runs (until the view is left), then shows it.
export async function loadTask(id) {
  stopTaskPolling();
  const out = $('#task');
  const tick = async () => {
    timer = null;
    let r;
    try {
      r = await api.call('GET', '/v1/simulations/' + encodeURIComponent(id));
      showError(null);
    } catch (err) {
      out.replaceChildren();
      showError(err);
      return;
    }
    if (r.state === 'running') {
      out.replaceChildren(progressView(r));
      timer = setTimeout(tick, 500);
    } else if (r.state === 'done') {
      showTask(r);
    } else {
      out.replaceChildren(h('div', {class: 'empty', 'data-state': r.state, text: `Simulation ${r.id} ${r.state}${r.error ? ': ' + r.error.message : ''}.`}));
    }
  };
  await tick();
}

function progressView(r) {
  const bar = h('div', {class: 'progress-fill', style: {width: (100 * r.progress).toFixed(1) + '%'}});
  return h('div', {class: 'task-progress', 'data-state': 'running'},
    h('div', {class: 'hint', text: `Simulating… ${fmtPct(r.progress)} of the horizon after ${fmtNum(r.elapsed_s, 1)} s`}),
    h('div', {class: 'progress'}, bar),
    h('button', {type: 'button', class: 'ghost', id: 'task-cancel', text: 'Cancel', onclick: async () => {
      try { await api.call('DELETE', '/v1/simulations/' + encodeURIComponent(r.id)); } catch (err) { showError(err); }
    }}));
}

const W = 900, H = 170, PAD = {l: 56, r: 12, t: 10, b: 24};

// Lines of series[key] over time; y from `lo` to 1.
function lineChart(series, keys, lo) {
  const x = (t) => PAD.l + (W - PAD.l - PAD.r) * t;
  const y = (v) => PAD.t + (H - PAD.t - PAD.b) * (1 - (v - lo) / (1 - lo || 1));
  const end = series.length ? series[series.length - 1].end_h : 1;
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', id: 'task-availability'});
  for (const v of [lo, (lo + 1) / 2, 1]) {
    svg.append(s('line', {x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), stroke: '#e4e7ec'}),
      s('text', {x: PAD.l - 6, y: y(v) + 4, 'text-anchor': 'end', text: fmtPct(v, 2)}));
  }
  for (const {key, colour, label} of keys) {
    const pts = series.map((p) => `${x(p.end_h / end).toFixed(1)},${y(Math.max(lo, p[key])).toFixed(1)}`).join(' ');
    svg.append(s('polyline', {points: pts, fill: 'none', stroke: colour, 'stroke-width': 1.5, 'data-key': key}, s('title', {text: label})));
  }
  svg.append(s('text', {x: W - PAD.r, y: H - 6, 'text-anchor': 'end', text: `${fmtNum(end)} h`}));
  return svg;
}

// Stacked bars of lost GPU-hours per step, by cause.
function lossChart(series, causes) {
  const max = Math.max(1e-9, ...series.map((p) => causes.reduce((a, c) => a + p[c.key], 0)));
  const bw = (W - PAD.l - PAD.r) / Math.max(1, series.length);
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', id: 'task-losses'});
  const y = (v) => (H - PAD.t - PAD.b) * (v / max);
  svg.append(s('text', {x: PAD.l - 6, y: PAD.t + 8, 'text-anchor': 'end', text: fmtNum(max)}),
    s('text', {x: PAD.l - 6, y: H - PAD.b, 'text-anchor': 'end', text: '0'}));
  series.forEach((p, i) => {
    let base = H - PAD.b;
    for (const c of causes) {
      const hgt = y(p[c.key]);
      if (hgt <= 0) continue;
      base -= hgt;
      svg.append(s('rect', {x: PAD.l + i * bw, y: base, width: Math.max(1, bw - 1), height: hgt, fill: c.colour, class: 'loss'},
        s('title', {text: `${fmtNum(p.start_h)}–${fmtNum(p.end_h)} h: ${fmtNum(p[c.key], 1)} GPU-h lost to ${c.label}`})));
    }
  });
  return svg;
}

function showTask(r) {
  const x = r.result;
  const causes = [
    {key: 'lost_failure_gpu_h', total: 'failure', label: 'failures', colour: 'var(--deny)'},
    {key: 'lost_drain_gpu_h', total: 'planned_drain', label: 'planned drains', colour: 'var(--warn)'},
    {key: 'lost_migration_gpu_h', total: 'migration', label: 'migrations', colour: '#7c3aed'},
  ];
  const stat = (label, value, id) => h('div', {class: 'stat', id}, h('div', {class: 'stat-value', text: value}), h('div', {class: 'muted', text: label}));
  const lo = Math.min(0.99, ...x.series.map((p) => Math.min(p.gpu_availability, p.switch_availability)));
  const floor = Math.max(0, Math.floor(lo * 100) / 100);
  $('#task').replaceChildren(
    h('div', {class: 'hint muted', text: `Run ${r.id}: ${fmtNum(x.horizon_h)} h of ${fmtNum(x.fabric.hosts)} hosts (${fmtNum(x.fabric.gpus)} GPUs), seed ${x.seed}, trace ${x.trace?.source || '—'}; simulated in ${fmtNum(r.elapsed_s, 1)} s.`}),
    h('div', {class: 'stats'},
      stat('GPU availability', fmtPct(x.gpus.availability, 3), 'task-gpu-availability'),
      stat('switches not failed', fmtPct(x.fabric.switch_availability, 3)),
      stat('useful GPU-hours / total', fmtPct(x.gpus.useful_share, 1), 'task-useful'),
      stat('interruptions', fmtNum(causes.reduce((a, c) => a + x.lost[c.total].interruptions, 0))),
      stat('queueing delay p95', fmtNum(x.jobs.queue_delay_h.p95, 1) + ' h')),
    h('h3', {text: 'Availability over time'}),
    h('div', {class: 'legend'}, h('span', {}, h('span', {class: 'ln-key', style: {borderColor: 'var(--allow)'}}), 'GPUs'),
      h('span', {}, h('span', {class: 'ln-key', style: {borderColor: '#2563eb'}}), 'switches')),
    lineChart(x.series, [{key: 'gpu_availability', colour: 'var(--allow)', label: 'GPU availability'},
      {key: 'switch_availability', colour: '#2563eb', label: 'switch availability'}], floor),
    h('h3', {text: 'GPU-hours lost per step, by cause'}),
    h('div', {class: 'legend'}, causes.map((c) => h('span', {}, h('span', {class: 'sw-key', style: {background: c.colour}}), c.label))),
    lossChart(x.series, causes),
    h('table', {id: 'task-causes'},
      h('thead', {}, h('tr', {}, ['cause', 'interruptions', 'lost work GPU-h', 'restart GPU-h', 'slowdown GPU-h', 'total GPU-h']
        .map((t, i) => h('th', {class: i ? 'num' : '', text: t})))),
      h('tbody', {}, causes.map((c) => {
        const t = x.lost[c.total];
        return h('tr', {'data-cause': c.total}, h('td', {text: c.label}), h('td', {class: 'num', text: fmtNum(t.interruptions)}),
          h('td', {class: 'num', text: fmtNum(t.lost_work_gpu_h, 1)}), h('td', {class: 'num', text: fmtNum(t.restart_gpu_h, 1)}),
          h('td', {class: 'num', text: fmtNum(t.slowdown_gpu_h, 1)}), h('td', {class: 'num', text: fmtNum(t.total_gpu_h, 1)}));
      }))));
}
