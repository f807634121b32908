import { LabIcon } from '@jupyterlab/ui-components';

/** A speech bubble with a plus: "insert a prompt cell" (themed through `jp-icon3`, as the core icons). */
export const promptIcon = new LabIcon({
  name: 'boopiter-ext:prompt',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" fill-rule="evenodd" d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2h-7l-5 4v-4H4' +
    'a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm7 3v3H8v2h3v3h2v-3h3V9h-3V6h-2z"/></svg>'
});

/** Two lobes of a brain: the brain menu's button (stroked in the text colour; `jp-icon3` would fill the outline). */
export const brainIcon = new LabIcon({
  name: 'boopiter-ext:brain',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<path fill="none" stroke="currentColor" stroke-width="1.7" stroke-linecap="round" stroke-linejoin="round" ' +
    'd="M11 5.5A2.5 2.5 0 0 0 6.2 4.8 2.8 2.8 0 0 0 4 8.6a3 3 0 0 0 .3 5.3A3 3 0 0 0 7 18.5a2.6 2.6 0 0 0 4 .8z' +
    'M13 5.5a2.5 2.5 0 0 1 4.8-.7A2.8 2.8 0 0 1 20 8.6a3 3 0 0 1-.3 5.3 3 3 0 0 1-2.7 4.6 2.6 2.6 0 0 1-4 .8z' +
    'M8 9.5c1 0 2 .6 2 1.8M16 9.5c-1 0-2 .6-2 1.8M8 14.5c.9-.6 2-.5 2.6.3M16 14.5c-.9-.6-2-.5-2.6.3"/></svg>'
});

/** Stroked in the text colour (`currentColor`): a `jp-icon3` class would fill these outlines with the theme's colour. */
const STROKE = 'fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"';
const svg = (body: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">${body}</svg>`;

/** An open eye: the cell is shown to the model (the hide toggle, off). */
export const eyeIcon = new LabIcon({
  name: 'boopiter-ext:eye',
  svgstr: svg(`<path ${STROKE} d="M2 12s3.6-7 10-7 10 7 10 7-3.6 7-10 7S2 12 2 12z"/><circle ${STROKE} cx="12" cy="12" r="3"/>`)
});

/** A struck-through eye: the cell is hidden from the model (the hide toggle, on). */
export const eyeOffIcon = new LabIcon({
  name: 'boopiter-ext:eye-off',
  svgstr: svg(
    `<path ${STROKE} d="M9.9 5.2A10.7 10.7 0 0 1 12 5c6.4 0 10 7 10 7a17 17 0 0 1-2.6 3.5M6.6 6.6A17 17 0 0 0 2 12s3.6 7 10 7a9.8 9.8 0 0 0 5.4-1.6M9.9 9.9a3 3 0 0 0 4.2 4.2M3 3l18 18"/>`
  )
});

/** A pushpin: the cell is never dropped to fit the context window (its head filled by CSS when on). */
export const pinIcon = new LabIcon({
  name: 'boopiter-ext:pin',
  svgstr: svg(`<path ${STROKE} class="boop-PinHead" d="M8 3h8l-1.5 2.5v4.5l3.5 3.5V16H6v-2.5L9.5 10V5.5z"/><path ${STROKE} d="M12 16v6"/>`)
});

/** A magnifier over lines: a prompt's dry run (what it would send). */
export const dryRunIcon = new LabIcon({
  name: 'boopiter-ext:dry-run',
  svgstr: svg(`<path ${STROKE} d="M4 5h12M4 9h7M4 13h5M4 17h4"/><circle ${STROKE} cx="16" cy="15" r="4"/><path ${STROKE} d="M19 18l3 3"/>`)
});
