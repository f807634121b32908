/**
 * The renderer of error outputs: boopiter's faults as paragraphs (`fault.ts`), every other error as JupyterLab draws
 * it (it is JupyterLab's own error renderer), with an "Ask why" action under it that puts a prompt cell below the
 * failing cell asking about it (`%%prompt --fix`). An error output's bundle has `application/vnd.jupyter.error` (the
 * error itself) beside its text: ranked just above JupyterLab's renderer for that text, this one gets every error.
 */

import { RenderedError } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { AskAboutError, askButton, drawFault, faultOf } from './fault';

export const ERROR_MIME = 'application/vnd.jupyter.error';
const STDERR_MIME = 'application/vnd.jupyter.stderr';
/** Just above JupyterLab's error renderer (110): every error output comes here first. */
export const FAULT_RANK = 105;

/** JupyterLab's error renderer, but boopiter's faults as paragraphs, and any other error with its "Ask why". */
export class FaultRenderer extends RenderedError {
  constructor(
    options: IRenderMime.IRendererOptions,
    private readonly _ask?: AskAboutError
  ) {
    super(options);
  }

  async render(model: IRenderMime.IMimeModel): Promise<void> {
    const fault = faultOf(model.data[ERROR_MIME]);
    if (fault) {
      drawFault(this.node, fault);
      return;
    }
    await super.render(model); // it reads the error's text, as JupyterLab's own renderer does
    if (this._ask) {
      this.node.appendChild(askButton(this.node, this._ask));
    }
  }
}

/** The error renderer; `ask` gives every error that is not boopiter's its "Ask why" action. */
export function faultRendererFactory(ask?: AskAboutError): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [ERROR_MIME],
    defaultRank: FAULT_RANK,
    createRenderer: options => new FaultRenderer({ ...options, mimeType: STDERR_MIME }, ask)
  };
}
