// DOM and formatting helpers of the operator console: element builders that
// put text in as text (never as HTML), number and name formatting, the
// natural sort, undirected link keys, verdict badges and tooltips.

export const $ = (sel) => document.querySelector(sel);
const SVG = 'http://www.w3.org/2000/svg';

// Builds an element. attrs: class, text, style (object: CSSOM, allowed by
// the page's CSP, unlike style attributes), on<event>, data-*, anything else
// as an attribute. Text always goes in as text, never as HTML.
function build(ns, tag, attrs, children) {
  const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k === 'style') Object.assign(el.style, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
export const h = (tag, attrs, ...children) => build(null, tag, attrs, children);
export const s = (tag, attrs, ...children) => build(SVG, tag, attrs, children);

export const fmtPct = (x, digits = 0) => (x === null || x === undefined ? '—' : (100 * x).toFixed(digits) + '%');
export const fmtNum = (x, digits = 0) => (x === null || x === undefined ? '—' : Number(x).toLocaleString('en-US', {maximumFractionDigits: digits}));
export const plural = (n, word, words) => `${fmtNum(n)} ${n === 1 ? word : (words || word + 's')}`;
export const natural = new Intl.Collator('en', {numeric: true}).compare;
export const linkKey = (a, b) => (natural(a, b) <= 0 ? a + '|' + b : b + '|' + a);

export const verdictClass = (v) => (v === 'allow' || v === 'warn' || v === 'deny' ? v : 'warn');
export const badge = (v) => h('span', {class: 'badge ' + verdictClass(v), text: v || '?'});

export function addTooltip(el, text) {
  el.addEventListener('mousemove', (ev) => {
    const tip = $('#tooltip');
    tip.textContent = typeof text === 'function' ? text() : text;
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 350) + 'px';
    tip.style.top = ev.clientY + 14 + 'px';
  });
  el.addEventListener('mouseleave', () => { $('#tooltip').hidden = true; });
}
