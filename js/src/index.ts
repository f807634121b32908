/**
 * boopiter in the notebook's own UI (JupyterLab 4 and Notebook 7): seven small plugins.
 *
 *   boopiter-ext:channels     the comm channel to boopiter in each notebook's kernel (IBoopChannels)
 *   boopiter-ext:menu         the brain menu, a settings-based notebook toolbar item ("boopiter-menu"),
 *                             and the command that opens it
 *   boopiter-ext:prompt-cells prompt cells: insert command, shortcut P, toolbar button, distinct look; the first one
 *                             brings the notebook's load cell; before one runs, boopiter is loaded if this kernel has
 *                             not loaded it yet (no race with the queued cells), the kernel hears the notebook as
 *                             shown, and its saved reply is kept until what replaces it exists
 *   boopiter-ext:cell-marks   the eye and the pin on every cell (the boop-hide and boop-pin tags), and their commands
 *   boopiter-ext:dry-run      a prompt cell's dry run: command and cell toolbar button, shown in a dialog
 *   boopiter-ext:renderers    the reply, binding, widget-placeholder, dry-run and fault mime renderers; an error's
 *                             "Ask why" (the prompt-cells plugin's command puts `%%prompt --fix` below its cell)
 *   boopiter-ext:inline       ghost text in code cells (a provider of JupyterLab's inline completer), and "Edit this
 *                             cell" (Accel+Alt+E): the model's new version of the cell, reviewed as a diff
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Clipboard, ICommandPalette, IToolbarWidgetRegistry } from '@jupyterlab/apputils';
import { Cell, CodeCell } from '@jupyterlab/cells';
import { ICompletionProviderManager } from '@jupyterlab/completer';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { editCell } from './complete/editcell';
import { BoopInlineProvider } from './complete/provider';
import { IRenderMimeRegistry, renderMarkdown } from '@jupyterlab/rendermime';
import { dropRemote, replySanitizer } from './reply/sanitizer';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { CellMarks } from './cells/cellmarks';
import { FAULT_RANK, faultRendererFactory } from './cells/faultrenderer';
import { keepSavedReplies } from './cells/keep';
import { ensureLoadCell, needsLoadCell, planCells, runLoadCell } from './cells/loadcell';
import { IUndoableNotebook, oneUndoStep } from './cells/marks';
import { PROMPT_MAGIC } from './cells/prompt';
import { insertPromptCell, isPromptCell, PromptCells } from './cells/promptcells';
import { hasTag, HIDE_TAG, PIN_TAG, toggleTag } from './cells/tags';
import { BoopChannel } from './channel/channel';
import { BoopChannels, IBoopChannels } from './channel/channels';
import { setStopChannels } from './channel/stop';
import { setCellRunner } from './channel/channel';
import { runCell } from './reply/insert';
import { showDryRun } from './dryrun/dialog';
import { PREVIEW_RANK, previewRendererFactory } from './dryrun/inline';
import { dryRunIcon, promptIcon } from './icons';
import { BrainMenuButton } from './menu/button';
import { IMenuNotebook } from './menu/panel';
import { findCell } from './reply/insert';
import { bindingRendererFactory, REPLY_RANK, replyRendererFactory, WIDGET_RANK, widgetPlaceholderFactory } from './reply/renderers';

export const INSERT_PROMPT = 'boopiter:insert-prompt';
export const OPEN_MENU = 'boopiter:open-menu';
export const TOGGLE_HIDE = 'boopiter:toggle-hide';
export const TOGGLE_PIN = 'boopiter:toggle-pin';
export const DRY_RUN = 'boopiter:dry-run';
export const ASK_ERROR = 'boopiter:ask-about-error';
/** The prompt cell an error's "Ask why" puts below its cell: the kernel names the failure (`%%prompt --fix`). */
export const FIX_PROMPT = '%%prompt --fix\nWhy did the cell above fail, and how do I fix it?';
/** Agent mode's prompt cell: the model's code runs as cells below it, on the user's clicks. */
export const INSERT_AGENT = 'boopiter:insert-agent-prompt';
export const AGENT_PROMPT = '%%prompt --agent\n';
export const MENU_ITEM = 'boopiter-menu';
export const EDIT_CELL = 'boopiter:edit-cell';
const CATEGORY = 'Notebook Operations';

/** The notebook a command acts on: the one whose panel id is `args.notebook`, else the current one. */
function targetPanel(tracker: INotebookTracker, args: ReadonlyPartialJSONObject): NotebookPanel | null {
  const id = args.notebook;
  return (typeof id === 'string' && id ? tracker.find(p => p.id === id) : null) ?? tracker.currentWidget;
}

/** The cell `args.cellId` names in `panel`, else its active cell. */
function targetCell(panel: NotebookPanel | null, args: ReadonlyPartialJSONObject): Cell | null {
  if (!panel) {
    return null;
  }
  const id = args.cellId;
  if (typeof id === 'string' && id) {
    return panel.content.widgets.find(c => c.model.id === id) ?? null;
  }
  return panel.content.activeCell;
}

/**
 * Load boopiter in `panel`'s notebook as a user would, and as any Jupyter can repeat: its own `%load_ext
 * boopiter_ext` cell, put in once above the first prompt (or code) cell and run; a notebook that cannot be changed
 * gets the silent load. `run` false: the cell only (the kernel has boopiter already).
 */
function loadInNotebook(panel: NotebookPanel, channel: BoopChannel, run = true): void {
  channel.markUsed();
  const cell = ensureLoadCell(panel);
  if (!cell) {
    void channel.load();
  } else if (run && channel.state.phase !== 'ready') {
    void channel.loadWith(() => runLoadCell(panel, cell));
  }
}

/** What the brain menu does to `panel`'s notebook. */
function menuNotebook(panel: NotebookPanel, channel: BoopChannel): IMenuNotebook {
  return {
    load: () => loadInNotebook(panel, channel),
    needsLoadCell: () => !panel.isDisposed && needsLoadCell(planCells(panel)),
    addLoadCell: () => loadInNotebook(panel, channel, channel.state.phase !== 'ready'),
    insertAgent: () => void insertPromptCell(panel, () => loadInNotebook(panel, channel), AGENT_PROMPT)
  };
}

const channels: JupyterFrontEndPlugin<IBoopChannels> = {
  id: 'boopiter-ext:channels',
  description: "The comm channel to boopiter in each notebook's kernel.",
  autoStart: true,
  provides: IBoopChannels,
  activate: () => {
    const all = new BoopChannels();
    setStopChannels(all); // the reply view's Stop goes to the kernel on its comm
    setCellRunner(runCell); // agent mode runs the model's cells as the notebook runs any
    return all;
  }
};

const menu: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:menu',
  description: 'The brain menu in the notebook toolbar.',
  autoStart: true,
  requires: [IBoopChannels, IToolbarWidgetRegistry, INotebookTracker],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    channels: IBoopChannels,
    toolbars: IToolbarWidgetRegistry,
    tracker: INotebookTracker,
    palette: ICommandPalette | null
  ) => {
    const buttons = new WeakMap<NotebookPanel, BrainMenuButton>();
    toolbars.addFactory<NotebookPanel>('Notebook', MENU_ITEM, panel => {
      const channel = channels.get(panel);
      const button = new BrainMenuButton(channel, menuNotebook(panel, channel));
      buttons.set(panel, button);
      return button;
    });
    app.commands.addCommand(OPEN_MENU, {
      label: 'Open the Brain Menu',
      caption: "boopiter's models and settings for this notebook (the brain button in its toolbar)",
      isEnabled: () => !!tracker.currentWidget,
      execute: args => {
        const panel = targetPanel(tracker, args);
        const button = panel ? buttons.get(panel) : undefined;
        if (button && !button.isDisposed && button.isAttached) {
          button.open();
        }
      }
    });
    palette?.addItem({ command: OPEN_MENU, category: CATEGORY });
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
        // the notebook records that it uses boopiter: its load cell, above this first prompt (run if not loaded yet)
        await insertPromptCell(panel, () => loadInNotebook(panel, channel));
      }
    });
    palette?.addItem({ command: INSERT_PROMPT, category: CATEGORY });
    app.commands.addCommand(INSERT_AGENT, {
      label: 'Insert Agent Prompt Cell Below',
      caption: "Insert a %%prompt --agent cell below: the model's code runs as cells below it, each on your click",
      isEnabled: () => !!tracker.currentWidget,
      execute: async () => {
        const panel = tracker.currentWidget;
        if (panel) {
          await insertPromptCell(panel, () => loadInNotebook(panel, channels.get(panel)), AGENT_PROMPT);
        }
      }
    });
    palette?.addItem({ command: INSERT_AGENT, category: CATEGORY });
    app.commands.addCommand(ASK_ERROR, {
      label: 'Ask Why the Cell Failed',
      caption: 'Put a prompt cell below the cell that failed, asking why and how to fix it, and run it',
      isEnabled: () => !!tracker.currentWidget,
      execute: async args => {
        const panel = targetPanel(tracker, args);
        const cell = targetCell(panel, args);
        if (!panel || !cell) {
          return;
        }
        const nb = panel.content;
        nb.activeCellIndex = nb.widgets.indexOf(cell);
        const channel = channels.get(panel);
        const prompt = await insertPromptCell(panel, () => loadInNotebook(panel, channel), FIX_PROMPT, false);
        if (prompt) {
          await NotebookActions.run(nb, panel.sessionContext); // boopiter is loaded first if it is not (`promptScheduled`)
        }
      }
    });
    // a cell that becomes a prompt (or stops being one) shows or hides the dry-run button of the cell toolbar
    const promptChanged = () => {
      if (app.commands.hasCommand(DRY_RUN)) {
        app.commands.notifyCommandChanged(DRY_RUN);
      }
    };
    tracker.widgetAdded.connect((_, panel) => {
      const cells = new PromptCells(panel, promptChanged);
      panel.disposed.connect(() => cells.dispose());
      channels.get(panel); // the brain menu's channel connects as the notebook opens, shown or not
    });
    // before the prompt's execute_request (this signal comes first, in the same task): boopiter loaded if this kernel
    // has not loaded it yet, the notebook as shown (unsaved edits, tags), the hello if none was answered; and the
    // cell's saved reply kept until what replaces it exists
    NotebookActions.executionScheduled.connect((_, { notebook, cell }) => {
      if (!isPromptCell(cell)) {
        return;
      }
      const panel = tracker.find(p => p.content === notebook);
      if (panel) {
        channels.get(panel).promptScheduled();
      }
      if (cell instanceof CodeCell) {
        keepSavedReplies(cell);
      }
    });
  }
};

const cellMarks: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:cell-marks',
  description: "The eye and the pin on every cell: hidden from the model, pinned in its context (cell tags).",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, palette: ICommandPalette | null) => {
    tracker.widgetAdded.connect((_, panel) => {
      const marks = new CellMarks(panel);
      panel.disposed.connect(() => marks.dispose());
    });
    /** The code and Markdown cells a toggle acts on: `args.cellId`, else the selection (or the active cell). */
    const targets = (args: ReadonlyPartialJSONObject): Cell[] => {
      const panel = targetPanel(tracker, args);
      if (!panel) {
        return [];
      }
      const nb = panel.content;
      const cells =
        typeof args.cellId === 'string' && args.cellId
          ? [targetCell(panel, args)]
          : nb.widgets.filter(c => nb.isSelectedOrActive(c));
      return cells.filter((c): c is Cell => !!c && (c.model.type === 'code' || c.model.type === 'markdown'));
    };
    const toggle = (id: string, tag: string, label: string, caption: string) => {
      app.commands.addCommand(id, {
        label,
        caption,
        isEnabled: () => targets({}).length > 0,
        isToggled: () => {
          const cell = tracker.currentWidget?.content.activeCell;
          return !!cell && hasTag(cell.model, tag);
        },
        execute: args => {
          const cells = targets(args);
          const shared = targetPanel(tracker, args)?.content.model?.sharedModel as unknown as IUndoableNotebook | undefined;
          if (cells.length) {
            oneUndoStep(shared, () =>
              toggleTag(
                cells.map(c => c.model),
                tag
              )
            );
          }
        }
      });
      palette?.addItem({ command: id, category: CATEGORY });
    };
    toggle(TOGGLE_HIDE, HIDE_TAG, 'Hide Cell from the Model', 'Never send the selected cells to the model; no tool reads them');
    toggle(TOGGLE_PIN, PIN_TAG, "Pin Cell in the Model's Context", 'Never drop the selected cells to fit the context window');
  }
};

/** A prompt's first line of question (for the dialog's title), shortened. */
function promptLabel(source: string): string {
  const line = source
    .split('\n')
    .slice(source.startsWith(PROMPT_MAGIC) ? 1 : 0)
    .find(l => l.trim())
    ?.trim();
  return !line ? '' : line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

const dryRun: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:dry-run',
  description: "A prompt cell's dry run: what it would send, and to which model, in a dialog (nothing is sent).",
  autoStart: true,
  requires: [INotebookTracker, IBoopChannels],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, channels: IBoopChannels, palette: ICommandPalette | null) => {
    app.commands.addCommand(DRY_RUN, {
      label: args => (args.toolbar ? '' : 'Dry Run of the Prompt Cell'),
      caption: 'Dry run: what this prompt would send, and to which model (nothing is sent to a model)',
      icon: args => (args.toolbar ? dryRunIcon : undefined),
      isVisible: args => isPromptCell(targetCell(targetPanel(tracker, args), args)),
      execute: async args => {
        const panel = targetPanel(tracker, args);
        const cell = targetCell(panel, args);
        if (!panel || !isPromptCell(cell)) {
          return;
        }
        const source = cell.model.sharedModel.getSource();
        const rm = panel.content.rendermime;
        await showDryRun(
          channels.get(panel).preview(source),
          {
            // the notebook's cells and earlier replies, quoted: as strict as a reply (nothing remote is fetched)
            renderMarkdown: (host, markdown) =>
              renderMarkdown({
                host,
                source: markdown,
                trusted: false,
                sanitizer: replySanitizer(rm.sanitizer),
                resolver: rm.resolver,
                linkHandler: rm.linkHandler,
                latexTypesetter: rm.latexTypesetter,
                markdownParser: rm.markdownParser,
                shouldTypeset: true
              }).then(() => void dropRemote(host)),
            copy: text => Clipboard.copyToSystem(text),
            expand: true // the dialog scrolls: every message open, as it always showed them
          },
          promptLabel(source)
        );
      }
    });
    palette?.addItem({ command: DRY_RUN, category: CATEGORY });
  }
};

const renderers: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:renderers',
  description: 'Renders streamed replies, the notebook binding, and what stands in for the kernel widgets.',
  autoStart: true,
  requires: [IRenderMimeRegistry, INotebookTracker],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry, tracker: INotebookTracker) => {
    const askWhy = (from: HTMLElement) => {
      const target = findCell(tracker, from);
      if (target && app.commands.hasCommand(ASK_ERROR)) {
        void app.commands.execute(ASK_ERROR, { notebook: target.panel.id, cellId: target.cell.model.id });
      }
    };
    rendermime.addFactory(replyRendererFactory(tracker), REPLY_RANK);
    rendermime.addFactory(bindingRendererFactory, REPLY_RANK);
    const openMenu = (from: HTMLElement) => {
      const panel = tracker.find(p => p.node.contains(from)) ?? tracker.currentWidget;
      if (panel && app.commands.hasCommand(OPEN_MENU)) {
        void app.commands.execute(OPEN_MENU, { notebook: panel.id });
      }
    };
    rendermime.addFactory(widgetPlaceholderFactory(openMenu), WIDGET_RANK);
    rendermime.addFactory(previewRendererFactory, PREVIEW_RANK); // %%prompt --dry-run in a cell, as the dialog shows it
    rendermime.addFactory(faultRendererFactory(askWhy), FAULT_RANK); // boopiter's faults as paragraphs; other errors
    // as ever, with "Ask why"
  }
};

/** A cell "Edit this cell" works on: code, and not hidden from the model (the model would read it). */
function editable(cell: Cell | null): cell is Cell {
  return cell?.model.type === 'code' && !hasTag(cell.model, HIDE_TAG);
}

const inline: JupyterFrontEndPlugin<void> = {
  id: 'boopiter-ext:inline',
  description: 'Ghost-text completions in code cells (the inline completer) and "Edit this cell".',
  autoStart: true,
  requires: [INotebookTracker, IBoopChannels],
  optional: [ICompletionProviderManager, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    channels: IBoopChannels,
    completions: ICompletionProviderManager | null,
    palette: ICommandPalette | null
  ) => {
    // each keystroke stops the completion in flight (the completer asks again once the typing pauses)
    let typedIn: { changed: { disconnect(f: () => void): void } } | null = null;
    const typed = () => {
      const panel = tracker.currentWidget;
      const cell = panel?.content.activeCell;
      if (panel && cell) {
        channels.get(panel).cancelCompletion(cell.model.id);
      }
    };
    tracker.activeCellChanged.connect((_, cell) => {
      typedIn?.changed.disconnect(typed);
      typedIn = cell?.model.sharedModel ?? null;
      cell?.model.sharedModel.changed.connect(typed);
    });
    completions?.registerInlineProvider(
      new BoopInlineProvider((widget, prefix, suffix) => {
        const panel = tracker.find(p => p === widget);
        const cell = panel?.content.activeCell;
        const shown = panel && cell?.model.type === 'code' && !hasTag(cell.model, HIDE_TAG); // a hidden cell: nothing sent
        return shown ? channels.get(panel).complete(cell.model.id, prefix, suffix) : null;
      })
    );
    app.commands.addCommand(EDIT_CELL, {
      label: 'Edit This Cell with the Model…',
      caption: "Tell the model how to change this code cell; its new version is shown as a diff to accept or reject",
      isEnabled: args => editable(targetCell(targetPanel(tracker, args), args)),
      execute: async args => {
        const panel = targetPanel(tracker, args);
        const cell = targetCell(panel, args);
        if (panel && cell && editable(cell)) {
          return editCell(panel, cell, channels.get(panel));
        }
      }
    });
    palette?.addItem({ command: EDIT_CELL, category: CATEGORY });
  }
};

export default [channels, menu, promptCells, cellMarks, dryRun, renderers, inline];
