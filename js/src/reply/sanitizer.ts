/**
 * What a reply block may render to: Jupyter's own sanitizer (sanitize-html, `@jupyterlab/apputils`' `Sanitizer`)
 * with options stricter than a notebook's, and a check of the rendered DOM after it.
 *
 * A saved reply output is untrusted whoever wrote it (a hand-written .ipynb needs no kernel), so whatever its data
 * holds the reply view fetches nothing remote: only the tags Markdown renders, no `style` attribute or `<style>`
 * (no CSS `url()`, no font), no `srcset`, `poster`, `background`, SVG, media, embeds, `<link>`, `<meta>`, `<base>`
 * or inputs; an image only from a relative path (the notebook's server) or a `data:` URL; a link only to http(s),
 * mailto or a relative path (a click, not a fetch). The options are the guarantee; `dropRemote` is a second layer.
 */

import type { renderMarkdown } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

/** sanitize-html options for a reply's blocks (they replace the notebook's, key by key). */
export const REPLY_SANITIZE_OPTIONS = {
  allowedTags: [
    'p', 'br', 'hr', 'em', 'strong', 'b', 'i', 'del', 's', 'sub', 'sup', 'code', 'pre', 'kbd', 'span', 'div',
    'blockquote', 'ul', 'ol', 'li', 'a', 'img', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
    'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'details', 'summary'
  ],
  allowedAttributes: {
    a: ['href', 'title', 'rel'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    code: ['class'],
    pre: ['class'],
    span: ['class'],
    div: ['class'],
    ol: ['start'],
    th: ['align'],
    td: ['align']
  },
  allowedStyles: {},
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['data'] },
  allowedSchemesAppliedToAttributes: ['href', 'src', 'cite'],
  allowProtocolRelative: false,
  nonTextTags: ['script', 'style', 'textarea', 'option', 'noscript', 'title', 'template', 'xmp', 'noembed', 'noframes']
};

/**
 * The sanitizer a reply's blocks render through: `base` (Jupyter's `Sanitizer`, whose `sanitize(dirty, options)`
 * is sanitize-html with those options over its own) always with `REPLY_SANITIZE_OPTIONS`, whatever a caller asks.
 */
export function replySanitizer(base: IRenderMime.ISanitizer): IRenderMime.ISanitizer {
  return {
    sanitize: (dirty: string) => base.sanitize(dirty, REPLY_SANITIZE_OPTIONS as IRenderMime.ISanitizerOptions),
    getAutolink: () => false,
    allowNamedProperties: false,
    allowCommandLinker: false
  };
}

/**
 * The options a reply block is rendered with by Jupyter's `renderMarkdown`: untrusted, through `sanitizer` (the
 * reply's), with the notebook's resolver (relative paths go to its server), link handler and Markdown parser; math
 * is typeset by the view, a chunk of blocks at a time.
 */
export function replyMarkdownOptions(
  host: HTMLElement,
  source: string,
  o: IRenderMime.IRendererOptions,
  sanitizer: IRenderMime.ISanitizer
): renderMarkdown.IRenderOptions {
  return {
    host,
    source,
    trusted: false,
    sanitizer,
    resolver: o.resolver,
    linkHandler: o.linkHandler,
    latexTypesetter: o.latexTypesetter,
    markdownParser: o.markdownParser ?? null,
    shouldTypeset: false,
    translator: o.translator
  };
}

/** Elements that fetch, embed or change how the page loads: none belongs in a reply. */
const FORBIDDEN =
  'link, meta, base, style, script, iframe, frame, object, embed, video, audio, source, track, picture, svg, math, ' +
  'image, use, input, form, template, portal, applet, bgsound';
/** Attributes that make the element fetch what they name (any element but a link's `href`). */
const FETCHING = ['src', 'poster', 'background', 'href', 'xlink:href', 'data', 'action', 'formaction', 'cite',
  'longdesc', 'lowsrc', 'dynsrc', 'codebase', 'manifest', 'icon'];

/** Whether `url` would be fetched from anywhere but this page's server (a `data:` URL fetches nothing). */
export function isRemote(url: string): boolean {
  const u = url.replace(/[\u0000-\u0020]/g, '');
  if (/^data:/i.test(u)) {
    return false;
  }
  try {
    return new URL(u, document.baseURI).origin !== window.location.origin;
  } catch {
    return true;
  }
}

/**
 * Remove from a rendered block what could fetch from elsewhere than the notebook's server: forbidden elements,
 * `style` and `srcset`, `ping`, and URL attributes that point away (a link's `href` stays: it is only followed on a
 * click). The strict sanitizer leaves nothing of it; this is the second layer. Returns how many it removed.
 * `elements` false: the attributes only (typeset math keeps its MathML, which screen readers read).
 */
export function dropRemote(host: HTMLElement, elements = true): number {
  let removed = 0;
  for (const e of elements ? Array.from(host.querySelectorAll(FORBIDDEN)) : []) {
    e.remove();
    removed++;
  }
  for (const e of Array.from(host.querySelectorAll('*'))) {
    for (const name of e.getAttributeNames()) {
      const n = name.toLowerCase();
      const link = n === 'href' && e.tagName === 'A';
      if (n === 'style' || n === 'srcset' || n === 'ping' || (!link && FETCHING.includes(n) && isRemote(e.getAttribute(name) ?? ''))) {
        e.removeAttribute(name);
        removed++;
      }
    }
  }
  return removed;
}
