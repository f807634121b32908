/**
 * boopiter in the notebook's own UI (JupyterLab 4 and Notebook 7): four small plugins.
 *
 *   boopiter-ext:channels     the comm channel to boopiter in each notebook's kernel (IBoopChannels)
 *   boopiter-ext:menu         the brain menu, a settings-based notebook toolbar item ("boopiter-menu")
 *   boopiter-ext:prompt-cells prompt cells: insert command, shortcut P, toolbar button, distinct look
 *   boopiter-ext:renderers    the reply and binding mime renderers
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IToolbarWidgetRegistry } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { BoopChannels, IBoopChannels } from './channel';
import { promptIcon } from './icons';
import { BrainMenuButton } from './menu';
import { insertPromptCell, PromptCells } from './promptcells';
import { bindingRendererFactory, REPLY_RANK, replyRendererFactory } from './reply';

export const INSERT_PROMPT = 'boopiter:insert-prompt';
export const MENU_ITEM = 'boopiter-menu';

const channels: JupyterFrontEndPlugin<IBoopChannels> = {
  id: 'boopiter-ext:channels',
  description: "The comm channel to boopiter in each notebook's kernel.",
  autoStart: true,
  provides: IBoopChannels,
  activate: () => new BoopChannels()
};

const menu: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:menu',
  description: 'The brain menu in the notebook toolbar.',
  autoStart: true,
  requires: [IBoopChannels, IToolbarWidgetRegistry],
  activate: (app: JupyterFrontEnd, channels: IBoopChannels, toolbars: IToolbarWidgetRegistry) => {
    toolbars.addFactory<NotebookPanel>('Notebook', MENU_ITEM, panel => new BrainMenuButton(channels.get(panel)));
  }
};

const promptCells: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:prompt-cells',
  description: 'Prompt cells: insert command, shortcut, toolbar button and their look.',
  autoStart: true,
  requires: [INotebookTracker, IBoopChannels],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, channels: IBoopChannels, palette: ICommandPalette | null) => {
    app.commands.addCommand(INSERT_PROMPT, {
      label: args => (args.toolbar ? '' : 'Insert Prompt Cell Below'),
      caption: 'Insert a %%prompt cell below: a question for a local model',
      icon: args => (args.toolbar ? promptIcon : undefined),
      isEnabled: () => !!tracker.currentWidget,
      execute: async () => {
        const panel = tracker.currentWidget;
        if (!panel) {
          return;
        }
        const channel = channels.get(panel);
        channel.markUsed();
        if (channel.state.phase === 'absent') {
          void channel.load();
        }
        await insertPromptCell(panel);
      }
    });
    palette?.addItem({ command: INSERT_PROMPT, category: 'Notebook Operations' });
    tracker.widgetAdded.connect((_, panel) => {
      const cells = new PromptCells(panel);
      panel.disposed.connect(() => cells.dispose());
      channels.get(panel); // the brain menu's channel connects as the notebook opens, shown or not
    });
  }
};

const renderers: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:renderers',
  description: 'Renders streamed replies and the notebook binding.',
  autoStart: true,
  requires: [IRenderMimeRegistry, INotebookTracker],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry, tracker: INotebookTracker) => {
    rendermime.addFactory(replyRendererFactory(tracker), REPLY_RANK);
    rendermime.addFactory(bindingRendererFactory, REPLY_RANK);
  }
};

export default [channels, menu, promptCells, renderers];
