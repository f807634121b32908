/**
 * The renderer of error outputs: boopiter's faults as paragraphs (`fault.ts`), every other error as JupyterLab draws
 * it (it is JupyterLab's own error renderer). An error output's bundle has `application/vnd.jupyter.error` (the error
 * itself) beside its text: ranked just above JupyterLab's renderer for that text, this one gets every error.
 */

import { RenderedError } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { drawFault, faultOf } from './fault';

export const ERROR_MIME = 'application/vnd.jupyter.error';
const STDERR_MIME = 'application/vnd.jupyter.stderr';
/** Just above JupyterLab's error renderer (110): every error output comes here first. */
export const FAULT_RANK = 105;

/** JupyterLab's error renderer, but boopiter's faults as paragraphs. */
export class FaultRenderer extends RenderedError {
  render(model: IRenderMime.IMimeModel): Promise<void> {
    const fault = faultOf(model.data[ERROR_MIME]);
    if (!fault) {
      return super.render(model); // it reads the error's text, as JupyterLab's own renderer does
    }
    drawFault(this.node, fault);
    return Promise.resolve();
  }
}

export const faultRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [ERROR_MIME],
  defaultRank: FAULT_RANK,
  createRenderer: options => new FaultRenderer({ ...options, mimeType: STDERR_MIME })
};
