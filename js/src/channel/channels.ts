/** The service other plugins require: the channel of each open notebook (`IBoopChannels`, the token). */

import { NotebookPanel } from '@jupyterlab/notebook';
import { Token } from '@lumino/coreutils';
import { BoopChannel } from './channel';
import { Context } from './link';

export interface IBoopChannels {
  /** The channel of the notebook shown in `panel` (created on first use). */
  get(panel: NotebookPanel): BoopChannel;
}

export const IBoopChannels = new Token<IBoopChannels>(
  'boopiter-ext:IBoopChannels',
  "The comm channel to boopiter in each notebook's kernel."
);

/** The channels of all open notebooks, keyed by document context. */
export class BoopChannels implements IBoopChannels {
  get(panel: NotebookPanel): BoopChannel {
    const context = panel.context;
    let channel = this._channels.get(context);
    if (!channel) {
      channel = new BoopChannel(context);
      this._channels.set(context, channel);
      context.disposed.connect(() => {
        channel!.dispose();
        this._channels.delete(context);
      });
    }
    channel.addView(panel);
    return channel;
  }

  private _channels = new Map<Context, BoopChannel>();
}
