/**
 * The mime renderers: the streamed reply (`application/vnd.boopiter.reply+json`), the binding line
 * (`application/vnd.boopiter.settings+json`) and the kernel's widget placeholders
 * (`application/vnd.boopiter.widget+json`). All are `safe`: model text goes through
 * `renderMarkdown` untrusted (Jupyter's sanitizer; a reply's blocks with the strict options of
 * `sanitizer.ts`, so nothing remote is fetched) or in as text, so they render in untrusted notebooks
 * too. `renderModel` is called again on the same renderer for every `update_display_data`: updates
 * are coalesced to one per animation frame.
 */
import { Clipboard, Sanitizer } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { renderMarkdown } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { addBelowIcon, copyIcon, editIcon, runIcon, stopIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { brainIcon } from '../icons';
import { bindingText } from '../menu/labels';
import { REPLY_MIME, SETTINGS_MIME, WIDGET_MIME } from '../protocol/constants';
import { ReplyBundle } from '../protocol/bundles';
import { cleanBinding, parseReplyBundle } from '../protocol/parse';
import { replaceCell, stopReply } from '../channel/stop';
import { findCell, insertBelow } from './insert';
import { drawPlaceholder, PLACEHOLDER_CLASS } from './placeholder';
import { dropRemote, replyMarkdownOptions, replySanitizer } from './sanitizer';
import { askAgain } from './askagain';
import { IReplyActions, ReplyView } from './view';

const ICONS = { insert: addBelowIcon, run: runIcon, copy: copyIcon, stop: stopIcon, replace: editIcon };
/** Jupyter's sanitizer, an instance of our own (no setting of the notebook's loosens it), with the reply's options. */
const REPLY_SANITIZER = replySanitizer(new Sanitizer());

/** Below the core renderers (html is 50), so the reply wins over its text/markdown fallback. */
export const REPLY_RANK = 20;

export class ReplyRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions, tracker: INotebookTracker) {
    super();
    this.addClass('boop-ReplyRenderer');
    this._options = options;
    this._tracker = tracker;
    this._view = new ReplyView({
      renderMarkdown: (host, source) => this._renderMarkdown(host, source),
      actions: node => this._actions(node),
      copy: text => Clipboard.copyToSystem(text),
      typeset: node => this._typeset(node),
      icon: name => ICONS[name].element({ tag: 'span' })
    });
    this.node.append(this._view.node);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = parseReplyBundle(model.data[REPLY_MIME]);
    if (!data) {
      this._view.node.textContent = 'boopiter: unreadable reply';
      return Promise.resolve();
    }
    if (!this._view.data) {
      return this._view.update(data); // the first one at once: the output appears with its content
    }
    this._pending = data;
    if (!this._frame) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        const next = this._pending;
        this._pending = null;
        if (next && !this.isDisposed) {
          void this._view.update(next);
        }
      });
    }
    return Promise.resolve();
  }

  dispose(): void {
    if (this._frame) {
      cancelAnimationFrame(this._frame);
      this._frame = 0;
    }
    this._view.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._view.attached();
    if (this._untypeset && this._options.latexTypesetter) {
      this._untypeset = false;
      void this._typesetSafely(this.node);
    }
  }

  protected onBeforeDetach(msg: Message): void {
    this._view.detached();
    super.onBeforeDetach(msg);
  }

  private _typeset(node: HTMLElement): void {
    const typesetter = this._options.latexTypesetter;
    if (!typesetter) {
      return;
    }
    if (!this.isAttached) {
      this._untypeset = true; // done once the output is shown
      return;
    }
    void this._typesetSafely(node);
  }

  /**
   * Typeset `node`, then take away what the typesetter made that points away: math's `\href` becomes an `href` on a
   * MathML or SVG element, which no sanitizer saw (`dropRemote`'s attributes, as after every render).
   */
  private async _typesetSafely(node: HTMLElement): Promise<void> {
    try {
      await this._options.latexTypesetter?.typeset(node);
    } catch (e) {
      console.warn('boopiter: typesetting failed', e);
    }
    dropRemote(node, false); // its MathML stays, for screen readers; only what points away goes
  }

  private _renderMarkdown(host: HTMLElement, source: string): Promise<void> {
    return renderMarkdown(replyMarkdownOptions(host, source, this._options, REPLY_SANITIZER));
  }

  private _actions(node: HTMLElement): IReplyActions | null {
    const data = this._view.data as ReplyBundle | null;
    const cellId = data && data.kind === 'reply' ? data.cell_id : undefined;
    const target = findCell(this._tracker, node, cellId);
    if (!target) {
      return null;
    }
    return {
      insert: (code, run, after) => insertBelow(target, code, run, after),
      stop: () => stopReply(target.panel, cellId ?? target.cell.model.id), // boopiter's Stop (channel/stop.ts)
      fresh: () => askAgain(target.panel, target.cell, cellId ?? target.cell.model.id), // Ask again (stale.ts)
      replace:
        data && data.kind === 'reply' && data.fixes
          ? code => replaceCell(target.panel, cellId ?? target.cell.model.id, data.fixes!, code) // a fix's cell (stop.ts)
          : undefined
    };
  }

  private _options: IRenderMime.IRendererOptions;
  private _tracker: INotebookTracker;
  private _view: ReplyView;
  private _pending: ReplyBundle | null = null;
  private _frame = 0;
  private _untypeset = false;
}

export function replyRendererFactory(tracker: INotebookTracker): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [REPLY_MIME],
    defaultRank: REPLY_RANK,
    createRenderer: options => new ReplyRenderer(options, tracker)
  };
}

/** The binding `%boop` shows, as one readable line. */
export class BindingRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('boop-Binding');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const text = bindingText(cleanBinding(model.data[SETTINGS_MIME]));
    const icon = brainIcon.element({ tag: 'span', className: 'boop-Binding-icon' });
    icon.setAttribute('aria-hidden', 'true');
    const line = document.createElement('span');
    line.className = 'boop-Binding-text';
    line.textContent = text;
    this.node.replaceChildren(icon, line);
    return Promise.resolve();
  }
}

export const bindingRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [SETTINGS_MIME],
  defaultRank: REPLY_RANK,
  createRenderer: () => new BindingRenderer()
};

/** @jupyter-widgets/jupyterlab-manager ranks the widget view at -10 (and `safe: false`): the placeholder comes first. */
export const WIDGET_RANK = -20;

/** The bundle's text/plain as one string (a list of lines in a saved notebook). */
function plainText(data: IRenderMime.IMimeModel['data']): string {
  const t = data['text/plain'];
  return typeof t === 'string' ? t : Array.isArray(t) ? t.filter(x => typeof x === 'string').join('') : '';
}

/** Draws `WIDGET_MIME` instead of the kernel's ipywidget (see `placeholder.ts`). */
export class WidgetPlaceholderRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(openMenu: (from: HTMLElement) => void) {
    super();
    this.addClass(PLACEHOLDER_CLASS);
    this._openMenu = openMenu;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    drawPlaceholder(this.node, model.data[WIDGET_MIME], plainText(model.data), {
      icon: () => brainIcon.element({ tag: 'span' }),
      openMenu: () => this._openMenu(this.node)
    });
    return Promise.resolve();
  }

  private _openMenu: (from: HTMLElement) => void;
}

/** `openMenu(node)`: open the brain menu of the notebook that shows `node`. */
export function widgetPlaceholderFactory(openMenu: (from: HTMLElement) => void): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [WIDGET_MIME],
    defaultRank: WIDGET_RANK,
    createRenderer: () => new WidgetPlaceholderRenderer(openMenu)
  };
}
