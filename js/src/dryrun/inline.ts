/**
 * `%%prompt --dry-run` in a cell, drawn as the dialog draws it (`DryRunBody`): the kernel's Markdown rendered
 * untrusted, every message folded, text that wraps at word boundaries, and "Copy as text". The kernel's bundle
 * (`application/vnd.boopiter.preview+json`: `{version, markdown, text}`) keeps its Markdown and plain text beside it
 * for a Jupyter without this extension.
 */

import { Clipboard } from '@jupyterlab/apputils';
import { renderMarkdown } from '@jupyterlab/rendermime';
import { dropRemote, replySanitizer } from '../reply/sanitizer';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';
import { IPreview } from '../protocol/messages';
import { DryRunBody } from './dryrun';

export const PREVIEW_MIME = 'application/vnd.boopiter.preview+json';
/** Below the core renderers (markdown is 60): the dry run wins over its own Markdown fallback. */
export const PREVIEW_RANK = 20;

/** The preview a bundle holds, checked (it is saved in the notebook: untrusted data); null when unreadable. */
export function parsePreview(v: unknown): IPreview | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    return null;
  }
  const { markdown, text } = v as { markdown?: unknown; text?: unknown };
  const md = typeof markdown === 'string' ? markdown : '';
  const plain = typeof text === 'string' ? text : '';
  return md || plain ? { markdown: md, text: plain } : null;
}

export class PreviewRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._options = options;
    this.addClass('boop-DryRunOutput');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const preview = parsePreview(model.data[PREVIEW_MIME]);
    const o = this._options;
    const body = new DryRunBody({
      // the notebook's cells and earlier replies, quoted: as strict as a reply (nothing remote is fetched)
      renderMarkdown: (host, source) =>
        renderMarkdown({
          host,
          source,
          trusted: false,
          sanitizer: replySanitizer(o.sanitizer),
          resolver: o.resolver,
          linkHandler: o.linkHandler,
          latexTypesetter: o.latexTypesetter,
          markdownParser: o.markdownParser ?? null,
          translator: o.translator,
          shouldTypeset: this.isAttached
        }).then(() => void dropRemote(host)),
      copy: text => Clipboard.copyToSystem(text)
    });
    body.node.classList.add('boop-DryRun-inline');
    this.node.replaceChildren(body.node);
    if (preview) {
      await body.show(preview);
    } else {
      body.fail('this dry run cannot be read');
    }
  }

  private _options: IRenderMime.IRendererOptions;
}

export const previewRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [PREVIEW_MIME],
  defaultRank: PREVIEW_RANK,
  createRenderer: options => new PreviewRenderer(options)
};
