// Render Markdown as Jupyter frontends render a trusted `text/markdown` output, and report what is active in it.
//
//   node render.mjs < docs.json      # docs: a JSON list of Markdown strings
//   -> a JSON list, one entry per doc: {"lab": [problems], "vscode": [problems]} (empty lists: nothing active)
//   node render.mjs html < docs.json # the same, each entry with the HTML too: {"lab_html": ..., "vscode_html": ...}
//
// lab:    JupyterLab 4.6 / Notebook 7.6: math lifted out (removeMath), marked 16 with GFM and the two plugins
//         JupyterLab loads, math put back (replaceMath); the HTML is then set as innerHTML, scripts run (trusted).
// vscode: VS Code's notebook renderer: markdown-it 14 with raw HTML and linkify on (before VS Code's own sanitizer).
// Each HTML string is parsed by parse5 (the HTML spec's parser, as a browser parses it) and every element,
// attribute and URL is checked against what Markdown renders legitimately: anything else is a problem.

globalThis.navigator ??= { appName: 'node' };   // latex.js reads navigator.appName
const { removeMath, replaceMath } = await import('@jupyterlab/rendermime/lib/latex.js');
const { Marked } = await import('marked');
const { gfmHeadingId } = await import('marked-gfm-heading-id');
const { mangle } = await import('marked-mangle');
const { default: MarkdownIt } = await import('markdown-it');
const { parseFragment } = await import('parse5');

const marked = new Marked(gfmHeadingId(), mangle());
const mdit = new MarkdownIt({ html: true, linkify: true });

const ELEMENTS = new Set(['p', 'em', 'strong', 'code', 'pre', 'a', 'img', 'ul', 'ol', 'li', 'blockquote', 'hr', 'br',
  'table', 'thead', 'tbody', 'tr', 'th', 'td', 'del', 's', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'input',
  'details', 'summary']);   // the last two: the reply's own collapsed sections
const URL_ATTRS = new Set(['href', 'src', 'action', 'formaction', 'xlink:href', 'poster', 'background', 'srcset',
  'data', 'cite', 'longdesc', 'ping', 'manifest', 'codebase', 'dynsrc', 'lowsrc']);
const ATTRS = { a: ['href', 'title', 'id'], img: ['src', 'alt', 'title'], code: ['class'], ol: ['start'],
  th: ['align', 'style'], td: ['align', 'style'], input: ['type', 'disabled', 'checked'],
  h1: ['id'], h2: ['id'], h3: ['id'], h4: ['id'], h5: ['id'], h6: ['id'], details: ['class'], pre: ['style'] };

function scheme(url) {
  // what a browser reads: C0 controls and spaces trimmed, tabs and newlines removed anywhere
  const u = url.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '');
  if (/^[\\/]{2}/.test(u)) return 'remote';   // a browser reads `\\host` and `/\host` as `//host`
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(u);
  return m ? m[1].toLowerCase() : '';
}

function check(html) {
  const problems = [];
  const walk = node => {
    for (const child of node.childNodes || []) {
      if (child.nodeName === '#comment') continue;
      if (child.tagName) {
        const tag = child.tagName;
        if (!ELEMENTS.has(tag)) problems.push(`element <${tag}>`);
        for (const { name, value } of child.attrs) {
          const n = name.toLowerCase();
          if (n.startsWith('on')) problems.push(`<${tag} ${n}>`);
          else if (URL_ATTRS.has(n)) {
            const s = scheme(value);
            if (['javascript', 'vbscript', 'data', 'file'].includes(s)) problems.push(`<${tag} ${n}="${s}:...">`);
            else if (tag === 'img' && n === 'src' && s !== '') problems.push(`<img src> fetches ${s} URL ${value}`);
            else if (!['', 'http', 'https', 'mailto', 'ftp', 'remote'].includes(s)) problems.push(`<${tag} ${n}> scheme ${s}`);
          } else if (n === 'style') {
            if (!/^\s*(text-align\s*:\s*(left|right|center)|white-space\s*:\s*pre-wrap)\s*;?\s*$/i.test(value))
              problems.push(`<${tag} style="${value}">`);
          } else if (!(ATTRS[tag] || []).includes(n)) problems.push(`<${tag} ${n}>`);
          if (tag === 'input' && n === 'type' && value !== 'checkbox') problems.push(`<input type=${value}>`);
        }
      }
      walk(child.content || child);   // a <template>'s content too
    }
  };
  walk(parseFragment(html));
  return problems;
}

function lab(source) {
  const parts = removeMath(source);
  return replaceMath(marked.parse(parts.text, { gfm: true, async: false }), parts.math);
}

const withHtml = process.argv[2] === 'html';
let input = '';
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map(doc => {
  const out = {};
  for (const [name, render] of [['lab', lab], ['vscode', s => mdit.render(s)]]) {
    try {
      const html = render(doc);
      out[name] = check(html);
      if (out[name].length) out[name].push(`html: ${html.slice(0, 400)}`);
      if (withHtml) out[`${name}_html`] = html;
    } catch (e) { out[name] = [`render failed: ${e}`]; }
  }
  return out;
});
process.stdout.write(JSON.stringify(results));
