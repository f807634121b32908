import { LabIcon } from '@jupyterlab/ui-components';

/** A speech bubble with a plus: "insert a prompt cell" (themed through `jp-icon3`, as the core icons). */
export const promptIcon = new LabIcon({
  name: 'boopiter-ext:prompt',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" fill-rule="evenodd" d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2h-7l-5 4v-4H4' +
    'a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm7 3v3H8v2h3v3h2v-3h3V9h-3V6h-2z"/></svg>'
});

/** Two lobes of a brain: the brain menu's button (stroked, themed through `jp-icon3`). */
export const brainIcon = new LabIcon({
  name: 'boopiter-ext:brain',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="none" stroke="#616161" stroke-width="1.7" stroke-linecap="round" stroke-linejoin="round" ' +
    'd="M11 5.5A2.5 2.5 0 0 0 6.2 4.8 2.8 2.8 0 0 0 4 8.6a3 3 0 0 0 .3 5.3A3 3 0 0 0 7 18.5a2.6 2.6 0 0 0 4 .8z' +
    'M13 5.5a2.5 2.5 0 0 1 4.8-.7A2.8 2.8 0 0 1 20 8.6a3 3 0 0 1-.3 5.3 3 3 0 0 1-2.7 4.6 2.6 2.6 0 0 1-4 .8z' +
    'M8 9.5c1 0 2 .6 2 1.8M16 9.5c-1 0-2 .6-2 1.8M8 14.5c.9-.6 2-.5 2.6.3M16 14.5c-.9-.6-2-.5-2.6.3"/></svg>'
});
