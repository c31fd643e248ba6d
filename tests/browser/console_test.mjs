// The operator console in a real browser: headless Chromium (Debian's
// `chromium`) driven over the DevTools protocol (cdp.mjs, no npm package),
// against a real daemon on the embedded demo fabric, loopback only.
//
//   node console_test.mjs --binary build/src/app/drainwise [--screenshots DIR]
//
// Exit 0 when every check passes, 1 on a failure, 77 (ctest SKIP_RETURN_CODE)
// when no Chromium is installed. --screenshots writes docs/console-*.png.
import {spawn} from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {Browser, findChromium} from './cdp.mjs';

const argv = process.argv.slice(2);
const arg = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const binary = arg('--binary');
const shots = arg('--screenshots');
if (!binary) { console.error('usage: console_test.mjs --binary PATH [--screenshots DIR]'); process.exit(2); }
const chromium = findChromium();
if (!chromium) {
  console.log('SKIPPED: no Chromium found (apt-get install chromium, or set CHROMIUM=/path)');
  process.exit(77);
}

// The whole test is bounded; a hang anywhere ends it as a failure.
const deadline = setTimeout(() => { console.error('FAIL: the browser test took more than 100 s'); cleanup(); process.exit(1); }, 100000);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'drainwise-browser-'));
const daemons = [];
let browser = null;
function cleanup() {
  for (const d of daemons) if (d.exitCode === null) d.kill('SIGTERM');
  if (browser && !browser.exited) browser.proc.kill('SIGKILL');
  fs.rmSync(tmp, {recursive: true, force: true});
}

async function startDaemon(name, extraArgs = []) {
  const portFile = path.join(tmp, name + '.port');
  const proc = spawn(binary, ['serve', '--listen', '127.0.0.1:0', '--port-file', portFile, '--db', path.join(tmp, name + '.db'),
    '--log-level', 'warn', ...extraArgs], {stdio: ['ignore', 'ignore', 'pipe']});
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  daemons.push(proc);
  const t0 = Date.now();
  while (!fs.existsSync(portFile) || !fs.readFileSync(portFile, 'utf8').trim()) {
    if (proc.exitCode !== null) throw new Error(`daemon exited with ${proc.exitCode}: ${stderr}`);
    if (Date.now() - t0 > 20000) throw new Error(`daemon did not listen within 20 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {proc, base: `http://127.0.0.1:${fs.readFileSync(portFile, 'utf8').trim()}`};
}

let failures = 0;
let checks = 0;
function check(cond, what, detail = '') {
  checks++;
  if (cond) { console.log(`ok   ${what}`); return; }
  failures++;
  console.log(`FAIL ${what}${detail ? ': ' + detail : ''}`);
}

// Network errors that the console expects and handles: the optional
// telemetry routes answer 404 "not configured" on the demo.
const expected404 = /\/v1\/links|\/v1\/jobs\/[^/]+\/paths/;
function unexpectedErrors(page) {
  return page.errors.filter((e) => !(e.startsWith('log (network)') && e.includes('404') && expected404.test(e)));
}

async function main() {
  const t0 = Date.now();
  const {base} = await startDaemon('demo');
  browser = await Browser.launch(chromium);
  const page = await browser.newPage();
  await page.setViewport(1440, 1000);

  // 1. The page loads, renders the demo fabric, and logs no error.
  await page.goto(base + '/');
  await page.waitFor('document.body.dataset.ready === "true"', 'the console to load');
  const snap = await (await fetch(base + '/v1/snapshots')).json();
  const drawn = await page.eval('document.querySelectorAll("#fabric svg g.sw[data-node]").length');
  check(drawn === snap.current.switches, `fabric draws every switch of the demo as SVG (${drawn})`, `expected ${snap.current.switches}`);
  const hostBoxes = await page.eval('document.querySelectorAll("#fabric svg g.hosts").length');
  check(hostBoxes === 8, `hosts are collapsed into one box per leaf group (${hostBoxes})`, 'expected 8 (2 pods x 4 racks)');
  // The script is a set of ES modules (console.js imports its siblings): every
  // one of them came from /ui/ and ran, or the page would not be ready.
  const modules = await page.eval('performance.getEntriesByType("resource").filter((e) => /\\/ui\\/[a-z_]+\\.js$/.test(e.name)).length');
  check(modules >= 11, `the console's modules load from /ui/ (${modules})`, 'expected console.js and the 10 modules it imports');
  const header = await page.eval('document.querySelector("#snapshot").textContent');
  check(/1,024 GPUs/.test(header) && /15 jobs/.test(header), 'the header shows the snapshot in use', header);
  if (shots) {
    await page.eval('document.querySelector("#job-select").value = "job-0014"; document.querySelector("#job-select").dispatchEvent(new Event("change"))');
    await page.waitFor('document.querySelectorAll("#fabric svg g.sw rect[stroke=\'var(--job)\']").length > 0', 'the job highlight');
    await page.screenshot(path.join(shots, 'console-fabric.png'), {below: '#view-fabric'});
    await page.eval('document.querySelector("#job-select").value = ""; document.querySelector("#job-select").dispatchEvent(new Event("change"))');
  }

  // 2. Pick p0-leaf3-r0 by clicking it in the fabric, assess: deny, with a
  //    migration that makes the drain allowed.
  await page.click('#fabric g.sw[data-node="p0-leaf3-r0"]');
  const chips = await page.eval('[...document.querySelectorAll("#chips .chip")].map((c) => c.firstChild.textContent)');
  check(JSON.stringify(chips) === '["p0-leaf3-r0"]', 'clicking a switch adds it to the what-if', JSON.stringify(chips));
  check(await page.eval('document.querySelector(\'#fabric g.sw[data-node="p0-leaf3-r0"]\').dataset.state') === 'whatif',
    'the picked switch is coloured as drained in the what-if');
  await page.type('#ticket', 'CHG-1234');
  await page.click('#run');
  const verdict = await page.waitFor('document.querySelector("#verdict")?.dataset.verdict', 'the verdict of p0-leaf3-r0');
  check(verdict === 'deny', 'draining p0-leaf3-r0 is denied', verdict);
  const bigWord = await page.eval('document.querySelector("#verdict .word").textContent');
  check(bigWord === 'deny', 'the verdict is shown in words', bigWord);
  const reasons = await page.eval('document.querySelectorAll("ul.reasons li").length');
  check(reasons > 0, `the reasons are listed (${reasons})`);
  const migrate = await page.eval('document.querySelectorAll("#recommendations .rec[data-kind=migrate]").length');
  check(migrate > 0, `a migrate recommendation is shown (${migrate})`);
  const fix = await page.eval('document.querySelector("#recommendations .fix-box")?.textContent || ""');
  check(/allow/.test(fix), 'the recommendations that make it allowed are named with their predicted verdict', fix);
  const jobsRows = await page.eval('[...document.querySelectorAll("#affected-jobs tbody tr")].map((r) => r.dataset.job)');
  check(jobsRows[0] === 'job-0015', 'affected jobs are ranked worst first (job-0015 loses connectivity)', JSON.stringify(jobsRows));
  const hotRows = await page.eval('document.querySelectorAll("#hot-links tbody tr").length');
  check(hotRows > 0, `hot links before/after are listed (${hotRows})`);
  const hash = await page.eval('location.hash');
  check(/^#\/assessments\/a-/.test(hash), 'the URL names the stored assessment', hash);
  const coloured = await page.eval('[...document.querySelectorAll("#fabric svg line")].filter((l) => /deny|warn|#22c55e/.test(l.getAttribute("stroke"))).length');
  check(coloured > 0, `links are coloured by utilisation after the drain (${coloured})`);
  if (shots) await page.screenshot(path.join(shots, 'console-whatif.png'), {fullPage: true});

  // 3. The shareable URL reloads the same assessment in a fresh page load.
  await page.goto('about:blank');
  await page.goto(base + '/' + hash);
  const reloaded = await page.waitFor('document.querySelector("#verdict")?.dataset.verdict', 'the shared assessment');
  check(reloaded === 'deny', 'the shared link reloads the assessment', reloaded);
  const ticket = await page.eval('document.querySelector("#verdict .meta").textContent');
  check(ticket.includes('CHG-1234'), 'the shared assessment keeps its ticket', ticket);

  // 4. Type a switch name instead: p0-spine1 is allowed.
  await page.click('#clear');
  await page.type('#switch-input', 'p0-spine1');
  await page.press('Enter');
  await page.click('#run');
  await page.waitFor('document.querySelector("#verdict .what b")?.textContent === "p0-spine1"', 'the verdict of p0-spine1');
  const allow = await page.eval('document.querySelector("#verdict").dataset.verdict');
  check(allow === 'allow', 'draining p0-spine1 is allowed', allow);

  // 5. Highlighting a job marks the switches its traffic can cross.
  await page.eval('document.querySelector("#job-select").value = "job-0015"; document.querySelector("#job-select").dispatchEvent(new Event("change"))');
  const ringed = await page.waitFor('document.querySelectorAll("#fabric svg g.sw rect[stroke=\'var(--job)\']").length', 'the job highlight');
  check(ringed >= 1, `a highlighted job marks its switches (${ringed})`);

  // 6. Drain candidates: the 8 spines of the demo, safest first.
  await page.goto(base + '/#/candidates');
  await page.waitFor('document.querySelectorAll("#candidate-table tbody tr").length', 'the candidates');
  const cands = await page.eval('[...document.querySelectorAll("#candidate-table tbody tr")].map((r) => r.dataset.switch)');
  check(cands.length === 8 && cands.every((c) => /^p[01]-spine\d$/.test(c)), `the candidates view lists the 8 spines (${cands.length})`, JSON.stringify(cands));
  if (shots) await page.screenshot(path.join(shots, 'console-candidates.png'), {below: '#view-candidates'});

  // 7. A maintenance plan of pod0's spines and two leaves, in batches.
  await page.goto(base + '/#/plan');
  await page.waitFor('document.body.dataset.ready === "true"', 'the console to load');
  await page.eval(`(() => { const s = document.querySelector("#plan-fill");
    s.value = [...s.options].find((o) => o.text.startsWith("every spine of pod0")).value; s.dispatchEvent(new Event("change")); })()`);
  await page.type('#plan-input', 'p0-leaf3-r0');
  await page.press('Enter');
  await page.click('#plan-run');
  const batches = await page.waitFor('document.querySelectorAll("#plan .batch").length', 'the plan');
  const planned = await page.eval('[...document.querySelectorAll("#plan .batch .chip")].map((c) => c.textContent).sort()');
  check(batches >= 2 && planned.length === 5, `the plan puts the 5 switches in ${batches} batches`, JSON.stringify(planned));
  if (shots) await page.screenshot(path.join(shots, 'console-plan.png'), {below: '#view-plan'});

  // 7a. The same switches as a campaign: a timeline of the batches with
  //     their actions and costs, drawn from POST /v1/campaigns, and the
  //     comparison with the simple strategies.
  await page.eval('document.querySelector("#campaign-concurrent").value = "2"');
  await page.click('#campaign-run');
  const bars = await page.waitFor('document.querySelectorAll("#campaign-timeline .batch-bar").length', 'the campaign');
  const campaignHash = await page.eval('location.hash');
  check(/^#\/campaigns\/c-/.test(campaignHash), 'the URL names the stored campaign', campaignHash);
  const campaign = await (await fetch(base + '/v1/campaigns/' + campaignHash.split('/')[2])).json();
  check(bars === campaign.batches.length && bars >= 3, `the timeline draws one bar per batch (${bars} of ${campaign.batches.length})`);
  const perBatch = await page.eval('[...document.querySelectorAll("#campaign .campaign-batch .chip")].length');
  check(perBatch === 5 && campaign.batches.every((b) => b.items.length <= 2), `the campaign batches hold the 5 switches, at most 2 at once (${perBatch})`);
  const diamonds = await page.eval('document.querySelectorAll("#campaign-timeline path.migrate").length');
  const migrations = campaign.batches.flatMap((b) => b.actions).filter((a) => a.kind === 'migrate').length;
  check(diamonds === migrations, `every migration is marked on the timeline (${diamonds} of ${migrations})`);
  const costs = await page.eval('[...document.querySelectorAll("#campaign .campaign-batch .cost")].map((e) => e.textContent)');
  check(JSON.stringify(costs) === JSON.stringify(campaign.batches.map((b) => `${Number(b.gpu_hours.total).toLocaleString('en-US', {maximumFractionDigits: 2})} GPU-h`)),
    'each batch shows its GPU-hours from the answer', JSON.stringify(costs));
  const rows = await page.eval('[...document.querySelectorAll("#campaign-comparison tbody tr")].map((r) => r.dataset.strategy)');
  check(rows.length === 3 && rows.includes('now') && rows.includes('after_jobs_end'), 'the comparison lists the chosen schedule and both simple strategies', JSON.stringify(rows));
  if (shots) await page.screenshot(path.join(shots, 'console-campaign.png'), {below: '#view-plan'});

  // 7b. The task-level view: a 30-day simulation started in the background,
  //     polled until done, drawn from GET /v1/simulations/{id}.
  await page.goto(base + '/#/task');
  await page.waitFor('document.body.dataset.ready === "true"', 'the console to load');
  await page.eval('document.querySelector("#task-horizon").value = "30d"');
  await page.click('#task-run');
  const causeRows = await page.waitFor('document.querySelectorAll("#task-causes tbody tr").length', 'the task-level result');
  check(causeRows === 3, `the task view lists lost GPU-hours by its 3 causes (${causeRows})`);
  const taskHash = await page.eval('location.hash');
  check(/^#\/task\/sim-/.test(taskHash), 'the URL names the background run', taskHash);
  const points = await page.eval('[...document.querySelectorAll("#task-availability polyline")].map((p) => p.getAttribute("points").split(" ").length)');
  check(JSON.stringify(points) === '[30,30]', 'availability is drawn per day for GPUs and switches', JSON.stringify(points));
  const shown = await page.eval('document.querySelector("#task-gpu-availability .stat-value").textContent');
  const run = await (await fetch(base + '/v1/simulations/' + taskHash.split('/')[2])).json();
  check(shown === (100 * run.result.gpus.availability).toFixed(3) + '%', 'the GPU availability shown is the run\'s', `${shown} vs ${run.result.gpus.availability}`);
  if (shots) await page.screenshot(path.join(shots, 'console-task.png'), {below: '#view-task'});

  // 8. With link telemetry and path inspection (stood in for: the demo has no
  //    telemetry source): degraded links are drawn as such, and a job is
  //    highlighted along the links its paths report.
  const tpage = await browser.newPage();
  await tpage.setViewport(1440, 1000);
  await tpage.intercept(/\/v1\/links(?!\/health)|\/v1\/jobs\/[^/]+\/paths/, (url) => (url.includes('/v1/links')
    ? {body: {links: [{link: 'p0-leaf0-r0:up0 -> p0-spine0:down0', a: 'p0-leaf0-r0', b: 'p0-spine0', has_rates: true, utilisation: 0.97, degraded: true, reasons: ['discards']},
      {link: 'p1-leaf0-r0:up1 -> p1-spine1:down0', a: 'p1-leaf0-r0', b: 'p1-spine1', has_rates: true, utilisation: 0.75, degraded: false}]}}
    : {body: {job: 'job-0001', links: [{link: 'p1-leaf1-r2:up3 -> p1-spine3:down5', share: 0.5}], degraded_links: 0, telemetry: true}}));
  await tpage.goto(base + '/');
  await tpage.waitFor('document.body.dataset.ready === "true"', 'the console to load');
  const strokes = await tpage.eval('[...document.querySelectorAll("#fabric svg line")].map((l) => l.getAttribute("stroke"))');
  check(strokes.filter((x) => x === '#7c3aed').length === 1, 'a degraded link from GET /v1/links is drawn as degraded');
  check(strokes.filter((x) => x === 'var(--warn)').length === 1, 'link utilisation from GET /v1/links colours the link');
  await tpage.eval('document.querySelector("#job-select").value = "job-0001"; document.querySelector("#job-select").dispatchEvent(new Event("change"))');
  await tpage.waitFor('/path inspection/.test(document.querySelector("#job-info").textContent)', 'the job highlight from its paths');
  const ringedByPaths = await tpage.eval('[...document.querySelectorAll("#fabric svg g.sw")].filter((g) => g.querySelector("rect[stroke=\'var(--job)\']")).map((g) => g.dataset.node).sort()');
  check(JSON.stringify(ringedByPaths) === '["p1-leaf1-r2","p1-spine3"]', 'a job with path inspection is highlighted along its reported links', JSON.stringify(ringedByPaths));
  const terrors = unexpectedErrors(tpage);
  check(terrors.length === 0, 'no console error with telemetry', terrors.join('\n  '));

  // 8b. With link health (stood in for: the demo has no link_health section):
  //     links coloured by their health trend, the jobs at risk with the drain
  //     what-if, and a link's history as a chart.
  const hpage = await browser.newPage();
  await hpage.setViewport(1440, 1000);
  const fecLink = 'p0-leaf0-r0:up0 -> p0-spine0:down0';
  const fecItem = {link: fecLink, a: 'p0-leaf0-r0', b: 'p0-spine0', score: 50.7, severity: 'warning', worst_end: 'p0-leaf0-r0:up0',
    findings: [{kind: 'error_growth', signal: 'fec_corrected', severity: 'warning', score: 50.7,
      explanation: 'corrected FEC rate is 2e+03/s and doubling every 3.0 days; at this pace it crosses 1e+04/s in 7.0 days'}]};
  const flapItem = {link: 'p1-leaf0-r0:up1 -> p1-spine1:down0', a: 'p1-leaf0-r0', b: 'p1-spine1', score: 85, severity: 'critical',
    worst_end: 'p1-leaf0-r0:up1', findings: [{kind: 'flapping', signal: 'carrier_transitions', severity: 'critical', score: 85, explanation: 'the link went down and up 280 times'}]};
  await hpage.intercept(/\/v1\/links\/health|\/v1\/jobs\/at-risk/, (url) => {
    if (url.includes('at-risk')) {
      return {body: {jobs: [{job: 'job-0001', risk_score: 85, links: [{link: flapItem.link, health: {severity: 'critical', score: 85, explanation: 'flaps'},
        drain_link: {verdict: 'allow', job: {connected: true, bandwidth_fraction: 0.75, path_fraction: 0.5}}, drain_switch: []}]}]}};
    }
    if (url.includes('link=')) {
      return {body: {links: [fecItem], history: {'p0-leaf0-r0:up0': {fec_corrected: [[0, 500], [86400, 1000], [172800, 2000]]}}}};
    }
    return {body: {links: [flapItem, fecItem], counts: {critical: 1, warning: 1}, window_s: 1209600, source: 'prometheus+history'}};
  });
  await hpage.goto(base + '/');
  await hpage.waitFor('document.body.dataset.ready === "true"', 'the console to load');
  const hstrokes = await hpage.eval('[...document.querySelectorAll("#fabric svg line[data-health]")].map((l) => l.dataset.health + " " + l.getAttribute("stroke")).sort()');
  check(JSON.stringify(hstrokes) === '["critical var(--deny)","warning var(--warn)"]', 'links are coloured by their health trend', JSON.stringify(hstrokes));
  const atRisk = await hpage.waitFor('[...document.querySelectorAll("#at-risk li.at-risk-job")].map((li) => li.dataset.job).join()', 'the at-risk jobs');
  check(atRisk === 'job-0001', 'the jobs at risk are listed', atRisk);
  const whatIf = await hpage.eval('document.querySelector("#at-risk li.at-risk-job").textContent');
  check(/drain now: allow, keeps 75% bandwidth/.test(whatIf), 'each at-risk job shows the what-if of draining its link', whatIf);
  await hpage.eval(`document.querySelector('#at-risk a[data-link]').click()`);
  const chartPoints = await hpage.waitFor('document.querySelector("#health-history polyline")?.getAttribute("points").split(" ").length', 'the history chart');
  check(chartPoints === 3, `a link's history is drawn as a chart (${chartPoints} points)`);
  const herrors = unexpectedErrors(hpage);
  check(herrors.length === 0, 'no console error with link health', herrors.join('\n  '));

  const errors = unexpectedErrors(page);
  check(errors.length === 0, 'no console error, exception or CSP violation', errors.join('\n  '));

  // 9. With tokens: the page itself is public, the API asks for a token and
  //    the page retries with it.
  const token = 'console-test-token-' + crypto.randomBytes(6).toString('hex');
  const tokensFile = path.join(tmp, 'tokens');
  fs.writeFileSync(tokensFile, crypto.createHash('sha256').update(token).digest('hex') + ' reader console-test\n');
  const configFile = path.join(tmp, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({server: {tokens_file: tokensFile}}));
  const secured = await startDaemon('secured', ['--config', configFile]);
  const page2 = await browser.newPage();
  await page2.setViewport(1440, 1000);
  // The page asks for three things at once; the jobs' request is held until
  // the token is given, so its 401 (sent without one) comes after it: the
  // page must retry with the new token, not ask again (on a loaded machine
  // the answers came in that order by themselves and the page hung).
  const releaseJobs = await page2.hold(/\/v1\/jobs$/);
  await page2.goto(secured.base + '/');
  await page2.waitFor('!document.querySelector("#token-bar").hidden', 'the token field');
  await page2.type('#token', token);
  await page2.press('Enter');
  await page2.waitFor('document.querySelector("#token-bar").hidden', 'the token field to close');
  check(releaseJobs() === 1, 'the jobs were asked for before the token was given');
  await page2.waitFor('document.body.dataset.ready === "true"', 'the console to load with the token');
  check(await page2.eval('document.querySelector("#token-bar").hidden'), 'a 401 to a request sent before the token does not ask again');
  const drawn2 = await page2.eval('document.querySelectorAll("#fabric svg g.sw[data-node]").length');
  check(drawn2 === snap.current.switches, 'with a token the console loads the fabric', String(drawn2));
  const stored = await page2.eval('sessionStorage.getItem("drainwise.token")');
  check(stored === token, 'the token is kept in sessionStorage');
  // A reader may look but not assess: the page says why.
  await page2.click('#fabric g.sw[data-node="p0-spine1"]');
  await page2.click('#run');
  const denied = await page2.waitFor('!document.querySelector("#error-bar").hidden && document.querySelector("#error-bar").textContent', 'the 403');
  check(/operator role/.test(denied), 'a reader token cannot assess, and the page says which role is needed', denied);
  const errors2 = page2.errors.filter((e) => !(e.startsWith('log (network)') && (e.includes('401') || e.includes('403') || (e.includes('404') && expected404.test(e)))));
  check(errors2.length === 0, 'no unexpected error with tokens', errors2.join('\n  '));

  console.log(`${checks - failures}/${checks} checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

main()
  .catch((err) => { failures++; console.log('FAIL ' + (err.stack || err)); })
  .finally(async () => {
    if (browser) await browser.close().catch(() => {});
    cleanup();
    clearTimeout(deadline);
    process.exit(failures ? 1 : 0);
  });
